// The claims this node has prepared: each one's CDI spec under the CDI
// root, and a checkpoint under the plugin dir that says what kubelet was
// told for it. Both are written by rename, the spec first: a kill -9 at any
// point leaves a state the next call completes (a spec without its
// checkpoint entry is written again or removed by name; an entry whose spec
// is gone is prepared again), so kubelet's retries are all it takes. No
// fsync: after a power loss kubelet prepares every claim again.
#pragma once

#include "gpuslice/dra/claim_spec.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpuslice::dra {

class ClaimStore {
public:
  // Makes both dirs when missing (the CDI root 0755: the engines read it;
  // the plugin dir 0750) and reads the checkpoint. Throws Error.
  ClaimStore(std::string cdi_root, std::string plugin_dir, std::string driver_name);

  // What kubelet was told for the claim, when it is prepared and its spec
  // is still there.
  std::optional<std::vector<PreparedDevice>> prepared(const std::string &uid) const;

  // Writes the claim's spec (0644, root's) and records its entry; save()
  // writes the entries.
  void add(const ClaimRef &ref, const ClaimSpec &spec);

  // Removes the claim's spec and its entry; a claim it does not know is no
  // error. Works from the uid alone: the claim may be gone from the API.
  void remove(const std::string &uid);

  // Writes the checkpoint when an entry changed: once per kubelet call,
  // before kubelet is answered (a checkpoint of thousands of claims is
  // rewritten once, not once per claim).
  void save();

  std::string spec_path(const std::string &uid) const;

private:
  struct Entry {
    std::string namespace_name, name;
    std::vector<PreparedDevice> devices;
  };
  std::string cdi_root_, plugin_dir_, driver_name_;
  std::map<std::string, Entry> claims_;
  bool unsaved_ = false;
};

} // namespace gpuslice::dra
