// The seam between gpuslice's labelling and the kernel: the four calls it
// makes, behind an interface so that unit tests can record them without an
// SELinux kernel (tests/unit/test_selinux.cpp), and one implementation over
// the kernel's own interfaces (kernel.cpp says why not libselinux).
#pragma once

#include <string>

namespace gpuslice::selinux {

class System {
public:
  virtual ~System() = default;
  // An SELinux kernel with its filesystem mounted read-write and the host's
  // /etc/selinux/config (libselinux's is_selinux_enabled() == 1).
  virtual bool enabled() = 0;
  // The label of an open file (fsetfilecon). Throws Error.
  virtual void set_fd_label(int fd, const std::string &context) = 0;
  // The label of `path` itself, a final symbolic link not followed
  // (lsetfilecon). Throws Error.
  virtual void set_link_label(const std::string &path, const std::string &context) = 0;
  // The label of the sockets this thread creates next (setsockcreatecon);
  // empty: the default again. Throws Error.
  virtual void set_socket_create_label(const std::string &context) = 0;
};

// The kernel's: security.selinux attributes, /proc/thread-self/attr, selinuxfs.
System &kernel();

} // namespace gpuslice::selinux
