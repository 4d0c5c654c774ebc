// Input: any text, as a bundle's config.json. BundleSpec::parse keeps
// linux.seccomp's object as its text (bundle_spec.cpp): it must refuse
// exactly what parse_json refuses (and any document that is not an
// object), and what it writes back must be the document parse_json builds.
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/json_text.hpp"
#include "gpuslice/create/bundle_spec.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, std::size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  std::optional<gpuslice::cdi::OciSpec> built;
  try {
    built = gpuslice::parse_json<gpuslice::cdi::OciSpec>(text);
  } catch (const gpuslice::Error &) {
  }
  std::optional<std::string> written;
  try {
    written = gpuslice::create::BundleSpec::parse(text, "config.json").text();
  } catch (const gpuslice::Error &) {
  }
  if (written.has_value() != (built.has_value() && built->is_object()))
    std::abort();
  if (written && gpuslice::parse_json<gpuslice::cdi::OciSpec>(*written) != *built)
    std::abort();
  return 0;
}
