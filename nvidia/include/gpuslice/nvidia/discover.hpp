// What an NVIDIA driver installation offers a container, found the way the
// driver lays it out: device nodes under <dev-root>/dev, the GPUs and the
// driver version under <dev-root>/proc/driver/nvidia, the persistenced
// socket under <dev-root>/run, and user-space files (libraries of exactly
// the kernel module's version, tools, firmware) under <driver-root>. Both
// roots are "/" on a node; a test builds a fake tree, and an
// operator-installed driver (GPU operator) lives under its own root.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpuslice::nvidia {

struct DiscoverOptions {
  std::string dev_root = "/";
  std::string driver_root = "/";
  // Library folders inside driver_root; empty: the distributions' usual ones.
  std::vector<std::string> library_dirs;
  // Where the host's "/" is seen by the process that looks (a DaemonSet's
  // host mount): files are read under it, and named without it, as the
  // host's container runtime reads the spec.
  std::string host_root = "/";

  // `host_path` (a HostFile's) as this process reaches it.
  std::string readable(const std::string &host_path) const;
};

inline const std::vector<std::string> kDefaultLibraryDirs = {
    "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib/aarch64-linux-gnu", "/usr/lib", "/lib/x86_64-linux-gnu",
    "/lib64"};

// A file as the host has it and where the container gets it.
struct HostFile {
  std::string host_path;      // with its root
  std::string container_path; // without
};

struct DeviceNode {
  HostFile file;
  int64_t major = 0, minor = 0;
};

struct Gpu {
  int index = 0;          // in PCI bus order: nvidia-smi's index
  std::string bus_id;     // "0000:3b:00.0"
  std::string uuid;       // "GPU-..."; empty when the driver did not say
  std::string model;
  DeviceNode node;        // /dev/nvidiaN (N: the device minor)
};

struct Driver {
  std::string version;                // "550.54.15"
  std::vector<DeviceNode> control;    // nvidiactl, nvidia-uvm(-tools), nvidia-modeset, nvidia-caps/*
  std::vector<Gpu> gpus;
  std::vector<HostFile> libraries;    // lib*.so.<version>
  std::vector<HostFile> binaries;     // nvidia-smi, nvidia-debugdump, nvidia-persistenced, MPS
  std::vector<HostFile> directories;  // firmware/nvidia/<version>
  std::vector<HostFile> sockets;      // nvidia-persistenced's
};

// Throws Error naming what is missing or malformed (no driver version, a
// GPU without its node, a node that is not a character device).
Driver discover(const DiscoverOptions &options);

// The version in /proc/driver/nvidia/version's text ("NVRM version: NVIDIA
// UNIX x86_64 Kernel Module  550.54.15  ..."); throws Error when none.
std::string parse_driver_version(const std::string &text);

// One GPU's /proc/driver/nvidia/gpus/<bus>/information: "Key: value" lines.
struct GpuInformation {
  std::string model, uuid, bus_location;
  int minor = -1;
};
GpuInformation parse_gpu_information(const std::string &text);

} // namespace gpuslice::nvidia
