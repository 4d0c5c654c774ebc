#include "gpuslice/selinux/labeler.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/selinux/context.hpp"

namespace gpuslice::selinux {

Mode parse_mode(std::string_view text) {
  if (text == "auto")
    return Mode::automatic;
  if (text == "on")
    return Mode::on;
  if (text == "off")
    return Mode::off;
  throw Error("selinux.label " + quote(text) + " is not one of auto, on, off");
}

std::optional<ContainerLabels> container_labels(const std::optional<std::string> &mount_label,
                                                const std::optional<std::string> &process_label,
                                                std::string_view shared_read_only) {
  const Context shared = with_context("config selinux.shared-file-label", [&] { return parse_context(shared_read_only); });
  const bool has_process = process_label && !process_label->empty();
  if (!mount_label || mount_label->empty()) {
    if (has_process)
      throw Error("process.selinuxLabel is " + quote(*process_label) +
                  " but linux.mountLabel is empty: the confined process could not read the files gpuslice makes "
                  "for it");
    return std::nullopt;
  }
  const Context mount = with_context("linux.mountLabel", [&] { return parse_context(*mount_label); });
  ContainerLabels labels;
  labels.private_file = to_string(mount);
  Context read_only = mount;
  read_only.type = shared.type;
  labels.private_read_only = to_string(read_only);
  if (has_process)
    labels.socket = with_context("process.selinuxLabel", [&] { return to_string(parse_context(*process_label)); });
  labels.shared_read_only = to_string(shared);
  return labels;
}

Labeler::Labeler(System &system, Mode mode, std::optional<ContainerLabels> labels)
    : Labeler(system, mode, std::move(labels), mode != Mode::off && labels && system.enabled()) {}

Labeler::Labeler(System &system, Mode mode, std::optional<ContainerLabels> labels, bool kernel_has_selinux)
    : system_(&system), labels_(std::move(labels)) {
  if (mode == Mode::off || !labels_)
    return;
  kernel_ = kernel_has_selinux;
  active_ = kernel_ || mode == Mode::on;
}

const std::string &Labeler::label_of(Share share) const {
  switch (share) {
  case Share::private_file:
    return labels_->private_file;
  case Share::private_read_only:
    return labels_->private_read_only;
  case Share::shared_read_only:
    break;
  }
  return labels_->shared_read_only;
}

void Labeler::label_fd(int fd, Share share, const std::string &shown) const {
  if (!active_)
    return;
  with_context("SELinux label of " + quote(shown), [&] { system_->set_fd_label(fd, label_of(share)); });
}

void Labeler::label_in_dir(int dir_fd, const std::string &name, Share share, const std::string &shown) const {
  if (!active_)
    return;
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    throw Error("SELinux label of " + quote(shown) + ": " + quote(name) + " is not a name in a directory");
  with_context("SELinux label of " + quote(shown), [&] {
    system_->set_link_label("/proc/self/fd/" + std::to_string(dir_fd) + "/" + name, label_of(share));
  });
}

Labeler::SocketLabel Labeler::socket_label() const {
  if (!active_ || !kernel_ || labels_->socket.empty())
    return SocketLabel(nullptr);
  system_->set_socket_create_label(labels_->socket);
  return SocketLabel(system_);
}

Labeler::SocketLabel::~SocketLabel() {
  if (!system_)
    return;
  try {
    system_->set_socket_create_label("");
  } catch (const Error &) {
    // Harmless: the kernel resets it at the exec into runc, and the monitor
    // forked from here creates no socket but the ones accept() gives it.
  }
}

} // namespace gpuslice::selinux
