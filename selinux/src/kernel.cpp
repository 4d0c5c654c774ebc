// The real System: the kernel's own interfaces, without libselinux.
//
// Why not libselinux: gpuslice makes four calls, each one system call on a
// kernel context it already holds (context.cpp parses and prints them), so
// the library had nothing to translate or look up. But linked in, its
// constructor probed for selinuxfs (two statfs, /proc/filesystems, the
// config file) in every process of gpuslice-runtime, on each container's
// start, asked for or not; and its static archive dragged in PCRE2 and, on RHEL, two -static packages from CRB.
//
// What each call does is what libselinux 3.x does for its _raw variant:
//   enabled                 selinuxfs mounted read-write and /etc/selinux/config present
//                           (is_selinux_enabled)
//   set_fd_label            fsetxattr security.selinux, NUL included (fsetfilecon_raw)
//   set_link_label          lsetxattr (lsetfilecon_raw)
//   set_socket_create_label /proc/thread-self/attr/sockcreate (setsockcreatecon_raw)
// including the one leniency of the first two: a filesystem without
// security.* attributes (EOPNOTSUPP) that already shows the very label
// counts as labelled.
#include "gpuslice/selinux/system.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fd.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/strings.hpp"

#include <fcntl.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <optional>
#include <string_view>

namespace gpuslice::selinux {

namespace {

constexpr const char *kXattr = "security.selinux";
constexpr unsigned long kSelinuxMagic = 0xf97cff8c; // SELINUX_MAGIC, linux/magic.h

// What is mounted at `dir`: no selinuxfs, or one read-only (as in a
// container: no SELinux to label for), or one read-write.
enum class Selinuxfs { none, read_only, read_write };
Selinuxfs selinuxfs_at(const std::string &dir) {
  struct statfs st {};
  if (::statfs(dir.c_str(), &st) != 0 || static_cast<unsigned long>(st.f_type) != kSelinuxMagic)
    return Selinuxfs::none;
  return (st.f_flags & ST_RDONLY) != 0 ? Selinuxfs::read_only : Selinuxfs::read_write;
}

// Where /proc/self/mounts shows a selinuxfs, for one mounted away from
// the usual places.
std::optional<std::string> selinuxfs_in_mounts() {
  std::string mounts;
  try {
    mounts = fs::read_file("/proc/self/mounts", 16u << 20);
  } catch (const Error &) {
    return std::nullopt;
  }
  for (const auto &line : split(mounts, '\n', EmptyParts::skip)) {
    const auto fields = split(line, ' ', EmptyParts::skip);
    if (fields.size() >= 3 && fields[2] == "selinuxfs")
      return unescape_mount_field(fields[1]);
  }
  return std::nullopt;
}

// The kernel's answer to a failed set, or success when it is a filesystem
// without security.* attributes that shows `context` already.
int lenient(int rc, const std::string &context, const std::function<ssize_t(char *, std::size_t)> &get) {
  if (rc == 0 || errno != EOPNOTSUPP)
    return rc;
  const int err = errno;
  char current[4096];
  const ssize_t n = get(current, sizeof current);
  std::string_view shown(current, n > 0 ? static_cast<std::size_t>(n) : 0);
  if (!shown.empty() && shown.back() == '\0')
    shown.remove_suffix(1);
  if (n > 0 && shown == context)
    return 0;
  errno = err;
  return rc;
}

class Kernel final : public System {
public:
  bool enabled() override {
    if (!enabled_)
      enabled_ = probe();
    return *enabled_;
  }

  void set_fd_label(int fd, const std::string &context) override {
    const int rc = ::fsetxattr(fd, kXattr, context.c_str(), context.size() + 1, 0);
    if (lenient(rc, context, [&](char *buf, std::size_t n) { return ::fgetxattr(fd, kXattr, buf, n); }) != 0)
      throw system_error("cannot label it " + quote(context));
  }

  void set_link_label(const std::string &path, const std::string &context) override {
    const int rc = ::lsetxattr(path.c_str(), kXattr, context.c_str(), context.size() + 1, 0);
    if (lenient(rc, context, [&](char *buf, std::size_t n) { return ::lgetxattr(path.c_str(), kXattr, buf, n); }) != 0)
      throw system_error("cannot label it " + quote(context));
  }

  void set_socket_create_label(const std::string &context) override {
    const std::string shown = context.empty() ? std::string("cannot reset the socket creation label")
                                              : "cannot set the socket creation label " + quote(context);
    // The calling thread's: a thread of its own asks for its own sockets.
    UniqueFd fd(::open("/proc/thread-self/attr/sockcreate", O_WRONLY | O_CLOEXEC));
    if (!fd && errno == ENOENT) // a kernel before 3.17
      fd = UniqueFd(::open(("/proc/self/task/" + std::to_string(::syscall(SYS_gettid)) + "/attr/sockcreate").c_str(),
                           O_WRONLY | O_CLOEXEC));
    if (!fd)
      throw system_error(shown);
    // The context with its NUL; nothing at all resets it to the default.
    const std::size_t size = context.empty() ? 0 : context.size() + 1;
    ssize_t n;
    do
      n = ::write(fd.get(), context.c_str(), size);
    while (n < 0 && errno == EINTR);
    if (n < 0)
      throw system_error(shown);
  }

private:
  static bool probe() {
    // No config, no SELinux whatever is mounted (libselinux's rule): the
    // one system call a host without SELinux pays.
    if (::access("/etc/selinux/config", F_OK) != 0)
      return false;
    // The first selinuxfs found decides, read-only or not (libselinux's order).
    for (const char *dir : {"/sys/fs/selinux", "/selinux"})
      if (const Selinuxfs fs = selinuxfs_at(dir); fs != Selinuxfs::none)
        return fs == Selinuxfs::read_write;
    const auto elsewhere = selinuxfs_in_mounts();
    return elsewhere && selinuxfs_at(*elsewhere) == Selinuxfs::read_write;
  }

  std::optional<bool> enabled_;
};

} // namespace

System &kernel() {
  static Kernel system;
  return system;
}

} // namespace gpuslice::selinux
