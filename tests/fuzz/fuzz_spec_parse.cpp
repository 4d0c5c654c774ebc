// Any bytes as a spec file: parsing, validation and version checks must
// either succeed or throw gpuslice::Error; nothing else may escape or crash.
#include "gpuslice/cdi/parse.hpp"
#include "gpuslice/cdi/validate.hpp"
#include "gpuslice/cdi/version.hpp"
#include "gpuslice/common/error.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, std::size_t size) {
  try {
    auto spec = gpuslice::cdi::parse_spec(std::string_view(reinterpret_cast<const char *>(data), size));
    (void)gpuslice::cdi::validate_spec(spec);
    (void)gpuslice::cdi::minimum_version(spec);
  } catch (const gpuslice::Error &) {
  }
  return 0;
}
