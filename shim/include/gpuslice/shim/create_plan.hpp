// What a create with devices leaves for the entry, which then does the next
// create of the same devices itself (shim/fast_path/create_plan.h says why
// and when): the edits complete, and what they were made of.
#pragma once

#include "gpuslice/cdi/apply.hpp"

#include <ctime>
#include <optional>
#include <string>
#include <vector>

namespace gpuslice::shim {

// Root's, on /run: a boot forgets them. Apart from the fast path's records,
// which their number must not push out.
inline constexpr const char *kCreatePlanDir = "/run/gpuslice/runtime-create-plans"; // GPUSLICE_FP_PLAN_DIR
inline constexpr std::size_t kMaxCreatePlans = 64;

// What plan_create knows of a create the entry could do.
struct CreatePlanFacts {
  std::string devices;               // the requests, joined by ',' (all from annotations)
  std::vector<std::string> prefixes; // the annotation prefixes
  std::vector<std::string> spec_dirs;
  cdi::ContainerEdits edits;         // as collected: device nodes not completed
  std::string cdi_env;               // the state dir's cdi-env record
};

// And what the caller adds: the config it read, where the create's info line
// goes ("": none).
struct CreatePlanContext {
  std::string writer; // own_build_id()
  std::string config_path;
  std::optional<std::string> config_text;
  std::string log_file;
};

// The plan's text (create_plan.h's format), or nullopt where the entry could
// not do such a create: an edit it cannot write (a net device, intelRdt,
// extra gids, a string that needs an escape, a negative device number), a
// spec dir or file it cannot stat, or one changed in the last two seconds
// (a file system stamps times at a coarse tick: a change made in the same
// tick would not show). `lookup` completes the device nodes and is recorded.
std::optional<std::string> create_plan_text(const CreatePlanFacts &facts, const CreatePlanContext &context,
                                            const cdi::HostNodeLookup &lookup, const struct timespec &now);

// The plan's file name in its dir, as the entry names it.
std::string create_plan_name(const std::string &config_path, const std::string &devices);

// Writes the plan where the entry looks for it (as root only; best effort:
// a plan not written only leaves the next create to the full program).
void save_create_plan(const std::string &config_path, const std::string &devices, const std::string &text,
                      const std::string &dir = kCreatePlanDir);

} // namespace gpuslice::shim
