// Any bytes as a user's containerd config.toml: every text splice that
// `gpuslice configure containerd` makes in a main file must leave valid TOML
// that shows the change, and strip_gpuslice_edits must give back the exact
// original bytes (that is what `--remove` promises). Errors are allowed
// (gpuslice::Error, e.g. `imports` is not an array); crashes, other
// exceptions and broken round trips are not.
#include "toml_text_edit.hpp"

#include "gpuslice/common/error.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace text = gpuslice::containerd::text;

namespace {

constexpr std::string_view kEntry = "/etc/containerd/conf.d/99-gpuslice.toml";

void require(bool ok) {
  if (!ok)
    std::abort();
}

void check_round_trip(std::string_view original, const std::string &edited) {
  require(text::has_gpuslice_edits(edited));
  require(text::strip_gpuslice_edits(edited, "edited") == original);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, std::size_t size) {
  std::string_view original(reinterpret_cast<const char *>(data), size);
  if (original.find("gpuslice") != std::string_view::npos)
    return 0; // marks written by hand are not ours to undo
  toml::table parsed;
  try {
    parsed = text::parse(original, "fuzz");
  } catch (const gpuslice::Error &) {
    return 0;
  }
  // The splices may refuse (Error); what they return must then hold up.
  std::string edited;
  try {
    edited = text::add_import(original, parsed, kEntry);
  } catch (const gpuslice::Error &) {
    edited.clear();
  }
  if (!edited.empty())
    try {
      toml::table t = text::parse(edited, "edited");
      const toml::array *imports = t["imports"].as_array();
      require(imports && imports->back().value<std::string>() == std::string(kEntry));
      check_round_trip(original, edited);
    } catch (const gpuslice::Error &) {
      std::abort();
    }
  try {
    edited = text::append_block(original, "[gpuslice_fuzz_block]\nx = 1\n");
    toml::table t = text::parse(edited, "edited");
    require(t["gpuslice_fuzz_block"]["x"].value<int>() == 1);
    check_round_trip(original, edited);
  } catch (const gpuslice::Error &) {
    std::abort();
  }
  return 0;
}
