// The CDI spec of one prepared claim: a transient spec, its own file under
// the CDI root named by the claim's uid, with one device per allocated
// device, "<claim uid>-<device>" of kind "<driver>/claim". Why a name per
// claim uid: two claims of one name in two namespaces, or a claim deleted
// and made again, never meet in one CDI name. Each device holds its GPU's
// node and the env that carries its share to gpuslice-runtime
// (GPUSLICE_GPU_UUID, GPUSLICE_MEMORY_LIMIT in bytes, GPUSLICE_COMPUTE_*);
// the driver's common edits come with it, as `gpuslice cdi generate` makes
// them (nvidia::spec_of).
#pragma once

#include "gpuslice/dra/claim.hpp"
#include "gpuslice/dra/pool.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace gpuslice::dra {

// What kubelet is told of one prepared device (the DRA API's Device).
struct PreparedDevice {
  std::string request, pool, device;
  std::vector<std::string> cdi_ids;
  std::string share_id;
  bool operator==(const PreparedDevice &) const = default;
};

struct ClaimSpec {
  nlohmann::ordered_json spec;
  std::vector<PreparedDevice> devices;
};

struct SpecContext {
  const nvidia::Driver &driver;
  const std::vector<PoolDevice> &pool;
  std::string driver_name; // gpu.gpuslice.io
  std::string pool_name;   // the node's name
  std::string hook_path;   // gpuslice-hook as installed
};

// Throws Error naming the claim: a device that is not in this node's pool.
// The claim's uid is one the store accepted (ClaimStore refuses a uid that
// is none before anything is named after it).
ClaimSpec claim_spec(const ClaimRef &ref, const std::vector<AllocatedDevice> &allocated, const SpecContext &context);

// "<driver>-claim_<uid>.json": CDI's name for a transient spec.
std::string claim_spec_file(const std::string &driver_name, const std::string &uid);

// Whether a claim uid can name files and CDI devices: 1 to 64 letters,
// digits and '-' (Kubernetes' uids are UUIDs).
bool safe_uid(const std::string &uid);

} // namespace gpuslice::dra
