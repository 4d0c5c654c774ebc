// Host side of GPU sharing: parsing what operators write (sizes like "4Gi",
// per-device lists like "0:4Gi,GPU-…:2Gi"), rendering the read-only limits
// file the interposer reads (format in docs/region.md), and reading it back.
// Used by `gpuslice exec` and by gpuslice-runtime for containers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuslice::sharing {

enum class Policy { native, fixed, burst };

struct DeviceLimit {
  std::string key;                 // "*", a CUDA ordinal, or "GPU-<uuid>"
  std::optional<uint64_t> memory;  // bytes
  std::optional<int> compute;      // percent, 0..100
  std::optional<Policy> policy;
  bool operator==(const DeviceLimit &) const = default;
};

struct Limits {
  std::vector<DeviceLimit> devices;
  std::string activity; // node-wide activity file for the burst policy, or empty
  bool operator==(const Limits &) const = default;
};

// "4Gi", "512Mi", "1G", "1073741824", "1.5Gi"; binary (Ki ... Ei) and
// decimal (K or k, M, G, T, P, E) suffixes, and Kubernetes' exponents
// ("8e9"). A fraction of a byte is dropped. Throws Error naming the text.
uint64_t parse_size(std::string_view text);
// For people: "512 MiB", "16.5 GiB" (one decimal above a MiB), "100 bytes".
std::string format_size(uint64_t bytes);

// "4Gi" (every device) or "DEV:SIZE,DEV:SIZE" where DEV is "*", an ordinal or
// a GPU UUID. Throws Error naming the offending item.
std::vector<DeviceLimit> parse_memory_limits(std::string_view text);

Policy parse_policy(std::string_view text);
std::string_view policy_name(Policy p);

// Adds a compute share (and policy) to every entry, adding "*" when none.
void apply_compute(Limits &limits, int percent, Policy policy);

std::string render_limits(const Limits &limits);
Limits parse_limits(std::string_view text); // throws Error with the line number

// Writes the limits file atomically, mode 0444.
void write_limits_file(const std::string &path, const Limits &limits);

} // namespace gpuslice::sharing
