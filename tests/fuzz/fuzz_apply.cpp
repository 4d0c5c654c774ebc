// Input: a CDI spec, a line "----", then an OCI config.json. Every device of
// the spec that validates is applied to the OCI spec; the host-node lookup is
// a pure function of the path so the target never touches the machine.
#include "gpuslice/cdi/apply.hpp"
#include "gpuslice/cdi/parse.hpp"
#include "gpuslice/cdi/validate.hpp"
#include "gpuslice/common/error.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace {
gpuslice::cdi::HostNode lookup(const std::string &path) {
  if (path.size() % 5 == 0)
    throw gpuslice::Error("no such node");
  static const char *types[] = {"c", "b", "p", "c"};
  return {types[path.size() % 4], static_cast<int64_t>(path.size()), static_cast<int64_t>(path[0]), 0640};
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char *>(data), size);
  const auto sep = input.find("\n----\n");
  if (sep == std::string_view::npos)
    return 0;
  try {
    auto spec = gpuslice::cdi::parse_spec(input.substr(0, sep));
    if (!gpuslice::cdi::validate_spec(spec).empty())
      return 0;
    auto oci = gpuslice::cdi::OciSpec::parse(input.substr(sep + 6), nullptr, false);
    if (oci.is_discarded())
      return 0;
    for (const auto &dev : spec.devices) {
      gpuslice::cdi::ContainerEdits edits = spec.edits;
      edits.append(dev.edits);
      gpuslice::cdi::apply_edits(oci, edits, lookup);
    }
    (void)oci.dump();
  } catch (const gpuslice::Error &) {
  }
  return 0;
}
