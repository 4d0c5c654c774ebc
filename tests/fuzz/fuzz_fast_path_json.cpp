// Input: any text. The fast path's JSON tree (shim/fast_path/json_tree.h)
// may refuse a text parse_json takes, never take one it refuses, and the
// tree it builds is parse_json's: each node's bytes, parsed alone, are the
// value parse_json built at that place, and each key's bytes its key.
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/json_text.hpp"

#include "../../shim/fast_path/json_tree.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

namespace {

using Json = nlohmann::ordered_json;

gpuslice_fp_json_node nodes[8192];

// The tree from node n, each scalar and key parsed alone from its bytes;
// *seen counts the nodes visited. Aborts on a tree not in document order.
Json rebuilt(const std::string &text, int n, int *seen) {
  ++*seen;
  const auto &v = nodes[n];
  const std::string bytes = text.substr(v.start, v.end - v.start);
  if (v.end <= v.start || v.end > text.size())
    std::abort();
  if (v.kind != GPUSLICE_FP_JSON_OBJECT && v.kind != GPUSLICE_FP_JSON_ARRAY)
    return Json::parse(bytes);
  Json out = v.kind == GPUSLICE_FP_JSON_OBJECT ? Json::object() : Json::array();
  unsigned children = 0;
  for (int m = v.first_child, before = n; m >= 0; before = m, m = nodes[m].next_sibling, ++children) {
    if (m <= before || nodes[m].parent != n || nodes[m].start <= v.start || nodes[m].end >= v.end)
      std::abort();
    if (v.kind == GPUSLICE_FP_JSON_OBJECT) {
      const std::string key = text.substr(nodes[m].key_start, nodes[m].key_end - nodes[m].key_start);
      out[Json::parse(key).get<std::string>()] = rebuilt(text, m, seen);
    } else {
      out.push_back(rebuilt(text, m, seen));
    }
  }
  if (children != v.children)
    std::abort();
  return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, std::size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  const int count = gpuslice_fp_json_parse(text.data(), text.size(), nodes, static_cast<int>(std::size(nodes)),
                                           GPUSLICE_FP_JSON_MAX_DEPTH);
  if (count < 0)
    return 0;
  std::optional<Json> built;
  try {
    built = gpuslice::parse_json<Json>(text);
  } catch (const gpuslice::Error &) {
    std::abort(); // taken here, refused there
  }
  int seen = 0;
  if (nodes[0].parent != -1 || rebuilt(text, 0, &seen) != *built || seen != count)
    std::abort();
  return 0;
}
