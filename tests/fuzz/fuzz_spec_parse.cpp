// Any bytes as a spec file: parsing, validation and version checks must
// either succeed or throw gpuslice::Error; nothing else may escape or crash.
// The kind plain_spec_kind reads off a valid spec is the parsed one.
#include "gpuslice/cdi/parse.hpp"
#include "gpuslice/cdi/validate.hpp"
#include "gpuslice/cdi/version.hpp"
#include "gpuslice/common/error.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  const auto plain_kind = gpuslice::cdi::plain_spec_kind(text);
  try {
    auto spec = gpuslice::cdi::parse_spec(text);
    const bool valid = gpuslice::cdi::validate_spec(spec).empty();
    (void)gpuslice::cdi::minimum_version(spec);
    // A registry skips a spec by the kind read without a parse: for a spec
    // that loads, that kind must be the one the parse finds.
    if (valid && plain_kind && *plain_kind != spec.kind)
      __builtin_trap();
  } catch (const gpuslice::Error &) {
  }
  return 0;
}
