// The running binary's build id: what names the build whose private
// encodings (common/byte_codec.hpp) a cache entry holds, so that a binary
// only ever reads back what this very build wrote.
#pragma once

#include <string>

namespace gpuslice {

// Its NT_GNU_BUILD_ID note in hex; empty when it has none (and the caches
// that need it are then off).
const std::string &own_build_id();

} // namespace gpuslice
