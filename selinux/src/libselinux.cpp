// The real System: libselinux, nothing else in gpuslice calls it. The _raw
// calls: the labels are kernel contexts already (parsed and printed back by
// context.cpp), so there is nothing for mcstrans to translate.
#include "gpuslice/selinux/system.hpp"

#include "gpuslice/common/error.hpp"

#include <selinux/selinux.h>

namespace gpuslice::selinux {

namespace {

class LibSelinux final : public System {
public:
  bool enabled() override { return ::is_selinux_enabled() == 1; }

  void set_fd_label(int fd, const std::string &context) override {
    if (::fsetfilecon_raw(fd, context.c_str()) != 0)
      throw system_error("cannot label it " + quote(context));
  }

  void set_link_label(const std::string &path, const std::string &context) override {
    if (::lsetfilecon_raw(path.c_str(), context.c_str()) != 0)
      throw system_error("cannot label it " + quote(context));
  }

  void set_socket_create_label(const std::string &context) override {
    if (::setsockcreatecon_raw(context.empty() ? nullptr : context.c_str()) != 0)
      throw system_error(context.empty() ? std::string("cannot reset the socket creation label")
                                         : "cannot set the socket creation label " + quote(context));
  }
};

} // namespace

System &libselinux() {
  static LibSelinux system;
  return system;
}

} // namespace gpuslice::selinux
