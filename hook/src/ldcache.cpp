#include "gpuslice/hook/ldcache.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/strings.hpp"
#include "gpuslice/hook/sandbox.hpp"
#include "gpuslice/create/bundle_spec.hpp"

#include <linux/capability.h>
#include <unistd.h>

#include <optional>

namespace gpuslice::hook {

namespace {

constexpr std::size_t kMaxFolders = 64;

// Whether this process runs in a PID namespace below the one /proc was
// mounted for: runc's createContainer, inside the container. /proc's
// NSpid lists our pid in each namespace from /proc's down to ours.
bool inside_the_container() {
  const std::string status = fs::read_file("/proc/self/status", 1 << 20);
  const auto at = status.find("\nNSpid:");
  if (at == std::string::npos)
    throw Error("cannot tell which PID namespace this is (no NSpid in /proc/self/status)");
  const auto end = status.find('\n', at + 1);
  const std::string line = status.substr(at + 7, end == std::string::npos ? std::string::npos : end - at - 7);
  return split(line, '\t', EmptyParts::skip).size() > 1;
}

UniqueFd host_ldconfig(const std::vector<std::string> &candidates) {
  std::string why;
  for (const auto &path : candidates) {
    if (::access(path.c_str(), F_OK) != 0)
      continue;
    try {
      return open_static_executable(path);
    } catch (const Error &e) {
      why += std::string(why.empty() ? "" : "; ") + e.what();
    }
  }
  throw Error("no static ldconfig on the host (" + join(candidates, ", ") + ")" + (why.empty() ? "" : ": " + why));
}

} // namespace

void update_ldcache(const ContainerState &state, const std::vector<std::string> &folders,
                    const std::vector<std::string> &candidates) {
  if (folders.empty())
    throw Error("no --folder given");
  if (folders.size() > kMaxFolders)
    throw Error("more than " + std::to_string(kMaxFolders) + " folders");
  for (const auto &f : folders)
    if (!fs::is_absolute(f) || f.size() > 4096 || f.find('\0') != std::string::npos || f.front() == '-')
      throw Error("folder " + quote(f) + " is not an absolute path");
  if (state.bundle.empty())
    throw Error("the container state names no bundle");
  // The program first, while nothing of the container has been looked at.
  const UniqueFd ldconfig = host_ldconfig(candidates);
  const create::BundleSpec spec = create::BundleSpec::load(state.bundle + "/config.json");
  const std::string root = spec.root_path();
  SandboxedRun how;
  how.root = fs::clean_path(fs::is_absolute(root) ? root : state.bundle + "/" + root);
  how.keep_caps = {CAP_DAC_OVERRIDE};
  if (!inside_the_container()) {
    if (state.pid <= 0)
      throw Error("the container state names no init pid");
    how.mount_ns_of = state.pid;
  }
  std::vector<std::string> argv{"ldconfig"};
  argv.insert(argv.end(), folders.begin(), folders.end());
  const SandboxResult r = run_sandboxed(how, ldconfig.get(), argv);
  if (auto why = r.failure("ldconfig", how.timeout_s))
    throw Error(*why);
}

} // namespace gpuslice::hook
