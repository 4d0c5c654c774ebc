// Which label each file gpuslice makes for a container gets, and the one
// place that sets them (docs/selinux.md says why each):
//  - the container's own files (state dir, region socket, region memfd):
//    the container's mount label, categories included, so that another
//    container (other categories) is denied them although both run as
//    container_t;
//  - the container's own read-only files (limits file, merged
//    ld.so.preload): the read-only type of shared-file-label at the
//    container's categories: the read-only bind mount is then not the only
//    thing between the tenant and its limits;
//  - files every GPU container reads and none writes (the node's activity
//    table): a read-only container type at s0 (config
//    selinux.shared-file-label), which MCS lets every category set read;
//  - the region socket is created with the container's process label, so
//    that connecting to it is a container connecting to its own socket.
// The interposer is not labelled here: its file contexts come with the
// package (selinux/policy/gpuslice.fc), once, not at every start.
#pragma once

#include "gpuslice/selinux/system.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace gpuslice::selinux {

// Config selinux.label: "auto" labels when the kernel enforces SELinux (or
// is permissive), "on" also where it does not (the xattrs are written
// anyway; tests, images prepared for another node), "off" never.
enum class Mode { automatic, on, off };
Mode parse_mode(std::string_view text); // throws Error

// The labels of one container, canonical text.
struct ContainerLabels {
  std::string private_file;      // its linux.mountLabel
  std::string private_read_only; // that, with shared-file-label's type
  std::string socket;            // its process.selinuxLabel; empty when it has none
  std::string shared_read_only;  // config selinux.shared-file-label
};

// nullopt when the container has no mount label (SELinux off in the engine):
// nothing of it is labelled. A process label without a mount label is an
// error: the process would be confined and its files left unreadable to it.
// Throws Error naming the malformed field.
std::optional<ContainerLabels> container_labels(const std::optional<std::string> &mount_label,
                                                const std::optional<std::string> &process_label,
                                                std::string_view shared_read_only);

enum class Share { private_file, private_read_only, shared_read_only };

class Labeler {
public:
  // Does nothing at all (not even ask the kernel) with Mode::off or without
  // labels.
  Labeler(System &system, Mode mode, std::optional<ContainerLabels> labels);
  // The same, with what system.enabled() said already (a create asks the
  // host before its modifiers run).
  Labeler(System &system, Mode mode, std::optional<ContainerLabels> labels, bool kernel_has_selinux);
  Labeler() = default; // inactive

  bool active() const { return active_; }
  const std::optional<ContainerLabels> &labels() const { return labels_; }

  // An open file this process created. Throws Error (fail closed: a
  // container whose files the kernel would deny it must not start without
  // its limits).
  void label_fd(int fd, Share share, const std::string &shown) const;
  // dir_fd/name itself, never what a link there points to (the name is
  // reached through the descriptor, the last component is not followed).
  void label_in_dir(int dir_fd, const std::string &name, Share share, const std::string &shown) const;

  // Sockets created while the returned guard lives carry the container's
  // process label; only with an SELinux kernel and a process label.
  class SocketLabel {
  public:
    SocketLabel(SocketLabel &&other) noexcept : system_(other.system_) { other.system_ = nullptr; }
    SocketLabel(const SocketLabel &) = delete;
    SocketLabel &operator=(const SocketLabel &) = delete;
    SocketLabel &operator=(SocketLabel &&) = delete;
    ~SocketLabel();

  private:
    friend class Labeler;
    explicit SocketLabel(System *system) : system_(system) {}
    System *system_;
  };
  SocketLabel socket_label() const;

private:
  const std::string &label_of(Share share) const;

  System *system_ = nullptr;
  std::optional<ContainerLabels> labels_;
  bool active_ = false;
  bool kernel_ = false; // the kernel has SELinux
};

} // namespace gpuslice::selinux
