// The CDI specification model, cdiVersion 0.3.0 through 1.1.0. Field names
// follow the reference Go library's struct tags (which is what every runtime
// parses), not the prose spec's examples: containerEdits is one object,
// additionalGids, intelRdt.schemata, 64-bit major/minor.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpuslice::cdi {

struct DeviceNode {
  std::string path;
  std::string host_path; // empty: same as path (0.5.0+)
  std::string type;      // "", b, c, u, p
  int64_t major = 0;
  int64_t minor = 0;
  std::optional<uint32_t> file_mode;
  std::string permissions; // subset of "rwm"; empty means rwm
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;

  bool operator==(const DeviceNode &) const = default;
};

struct Mount {
  std::string host_path;
  std::string container_path;
  std::vector<std::string> options;
  std::string type; // 0.4.0+

  bool operator==(const Mount &) const = default;
};

struct Hook {
  std::string hook_name; // OCI hook stage
  std::string path;
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::optional<int64_t> timeout;

  bool operator==(const Hook &) const = default;
};

struct IntelRdt {
  std::string clos_id;
  std::string l3_cache_schema;
  std::string mem_bw_schema;
  std::vector<std::string> schemata; // 1.1.0+
  bool enable_monitoring = false;    // 1.1.0+
  bool enable_cmt = false;           // 0.7.0 - 1.0.0, removed in 1.1.0
  bool enable_mbm = false;           // 0.7.0 - 1.0.0, removed in 1.1.0

  bool operator==(const IntelRdt &) const = default;
};

struct NetDevice {
  std::string host_interface_name;
  std::string name;

  bool operator==(const NetDevice &) const = default;
};

struct ContainerEdits {
  std::vector<std::string> env;
  std::vector<DeviceNode> device_nodes;
  std::vector<NetDevice> net_devices; // 1.1.0+
  std::vector<Hook> hooks;
  std::vector<Mount> mounts;
  std::optional<IntelRdt> intel_rdt; // 0.7.0+
  std::vector<uint32_t> additional_gids; // 0.7.0+

  bool empty() const {
    return env.empty() && device_nodes.empty() && net_devices.empty() && hooks.empty() && mounts.empty() &&
           !intel_rdt && additional_gids.empty();
  }
  bool operator==(const ContainerEdits &) const = default;
  // Appends other's edits after ours; a later intelRdt replaces an earlier one.
  void append(const ContainerEdits &other);
};

using Annotations = std::map<std::string, std::string>;

struct Device {
  std::string name;
  Annotations annotations; // 0.6.0+
  ContainerEdits edits;

  bool operator==(const Device &) const = default;
};

// A field added to any of these also goes into spec_cache.cpp's fields().
struct Spec {
  std::string version; // as written, e.g. "0.6.0" or "v1.0.0"
  std::string kind;    // vendor/class
  Annotations annotations; // 0.6.0+
  std::vector<Device> devices;
  ContainerEdits edits;

  // Where it came from; not part of the format.
  std::string path;
  int priority = 0;

  bool operator==(const Spec &) const = default;
};

} // namespace gpuslice::cdi
