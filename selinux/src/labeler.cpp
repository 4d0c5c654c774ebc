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
  if (!mount_label || mount_label->empty())
    return std::nullopt;
  ContainerLabels labels;
  labels.private_file = with_context("linux.mountLabel", [&] { return to_string(parse_context(*mount_label)); });
  if (process_label && !process_label->empty())
    labels.socket = with_context("process.selinuxLabel", [&] { return to_string(parse_context(*process_label)); });
  labels.shared_read_only =
      with_context("config selinux.shared-file-label", [&] { return to_string(parse_context(shared_read_only)); });
  return labels;
}

Labeler::Labeler(System &system, Mode mode, std::optional<ContainerLabels> labels)
    : system_(&system), labels_(std::move(labels)) {
  if (mode == Mode::off || !labels_)
    return;
  kernel_ = system.enabled();
  active_ = kernel_ || mode == Mode::on;
}

const std::string &Labeler::label_of(Share share) const {
  return share == Share::private_file ? labels_->private_file : labels_->shared_read_only;
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
