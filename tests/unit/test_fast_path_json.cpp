// The fast path's JSON tree (shim/fast_path/json_tree.h): it takes only
// what parse_json takes, builds the same tree, and refuses on doubt.
// tests/fuzz/fuzz_fast_path_json.cpp holds it to parse_json on any text.
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/json_text.hpp"

#include "../../shim/fast_path/json_tree.h"

#include <catch2/catch.hpp>

#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

using Json = nlohmann::ordered_json;

struct Tree {
  std::string text;
  std::vector<gpuslice_fp_json_node> nodes = std::vector<gpuslice_fp_json_node>(4096);
  int count = -1;
  explicit Tree(std::string t, int max_depth = GPUSLICE_FP_JSON_MAX_DEPTH) : text(std::move(t)) {
    count = gpuslice_fp_json_parse(text.data(), text.size(), nodes.data(), static_cast<int>(nodes.size()), max_depth);
  }
  std::string bytes(int n) const { return text.substr(nodes[n].start, nodes[n].end - nodes[n].start); }
  std::string key(int n) const { return text.substr(nodes[n].key_start, nodes[n].key_end - nodes[n].key_start); }
  int member(int object, const char *k) const { return gpuslice_fp_json_member(text.data(), nodes.data(), object, k); }
  // The tree as nlohmann builds it, from each scalar's and key's bytes.
  Json rebuilt(int n = 0) const {
    const auto &v = nodes[n];
    if (v.kind != GPUSLICE_FP_JSON_OBJECT && v.kind != GPUSLICE_FP_JSON_ARRAY)
      return Json::parse(bytes(n));
    Json out = v.kind == GPUSLICE_FP_JSON_OBJECT ? Json::object() : Json::array();
    for (int m = v.first_child; m >= 0; m = nodes[m].next_sibling) {
      if (v.kind == GPUSLICE_FP_JSON_OBJECT)
        out[Json::parse(key(m)).get<std::string>()] = rebuilt(m);
      else
        out.push_back(rebuilt(m));
    }
    return out;
  }
};

bool taken_by_parse_json(const std::string &text) {
  try {
    gpuslice::parse_json<Json>(text);
    return true;
  } catch (const gpuslice::Error &) {
    return false;
  }
}

} // namespace

TEST_CASE("fast path JSON: spans, keys and links of each value", "[fast-path]") {
  const Tree t(R"( {"a": [1, -2.5, "x\ny", true, false, null], "b" : {}, "c":[] } )");
  REQUIRE(t.count == 10);
  CHECK(t.nodes[0].kind == GPUSLICE_FP_JSON_OBJECT);
  CHECK(t.bytes(0) == R"({"a": [1, -2.5, "x\ny", true, false, null], "b" : {}, "c":[] })");
  CHECK(t.nodes[0].children == 3);
  const int a = t.member(0, "a"), b = t.member(0, "b"), c = t.member(0, "c");
  REQUIRE((a == 1 && b == 8 && c == 9));
  CHECK(t.member(0, "d") == -1);
  CHECK(t.member(a, "a") == -1); // not an object
  CHECK(t.key(b) == "\"b\"");
  CHECK(t.nodes[a].children == 6);
  CHECK(t.bytes(t.nodes[a].first_child) == "1");
  const int text = t.nodes[t.nodes[a].first_child + 1].next_sibling;
  CHECK(t.bytes(text) == R"("x\ny")");
  CHECK(t.nodes[text].escaped == 1);
  CHECK(t.nodes[text].key_start == 0);
  CHECK(t.nodes[text].parent == a);
  CHECK(t.nodes[c].next_sibling == -1);
  CHECK(t.bytes(b) == "{}");
  CHECK(t.nodes[b].first_child == -1);
  CHECK(t.bytes(c) == "[]");
  CHECK(t.rebuilt() == Json::parse(t.text));
  const Tree s(R"({"k":"v","e":"v\u0041","n":1})");
  CHECK(gpuslice_fp_json_string_is(s.text.data(), s.nodes.data(), 1, "v") == 1);
  CHECK(gpuslice_fp_json_string_is(s.text.data(), s.nodes.data(), 1, "vv") == 0);
  CHECK(gpuslice_fp_json_string_is(s.text.data(), s.nodes.data(), 1, "") == 0);
  CHECK(gpuslice_fp_json_string_is(s.text.data(), s.nodes.data(), 2, "vA") == 0); // escaped: not vouched for
  CHECK(gpuslice_fp_json_string_is(s.text.data(), s.nodes.data(), 3, "1") == 0);  // a number
}

TEST_CASE("fast path JSON: refuses what parse_json refuses", "[fast-path]") {
  for (const char *bad : {"", " ", "{", "}", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "[01]", "[1.]", "[.5]", "[-]",
                          "[+1]", "[tru]", "[nul]", "[truex]", "\"a", "\"\\x\"", "\"\\u12G4\"", "\"\\ud800\"",
                          "\"\\udc00\"", "\"\\ud800\\u0041\"", "\"a\tb\"", "[1] [2]", "{}x", "[\"\xc0\xaf\"]",
                          "[\"\xed\xa0\x80\"]", "[\"\xf4\x90\x80\x80\"]", "[\"\xe2\x82\"]", "[\xc3\xa9]",
                          "{\"a\":1,\"a\":2}"}) {
    INFO(bad);
    CHECK(!taken_by_parse_json(bad));
    CHECK(Tree(bad).count == -1);
  }
}

TEST_CASE("fast path JSON: refuses on doubt what parse_json takes", "[fast-path]") {
  // Each taken by parse_json; each handed to the full program by the entry.
  for (const std::string &doubt : std::vector<std::string>{"{\"\\u0061\":1}",          // a key with an escape: another spelling of "a"
                                  "\xef\xbb\xbf{}",             // a byte order mark
                                  "[1e3]", "[1E-2]",            // an exponent: a double that might overflow
                                  "[" + std::string(301, '7') + "]"}) {
    INFO(doubt);
    CHECK(taken_by_parse_json(doubt));
    CHECK(Tree(doubt).count == -1);
  }
  // Nesting: to the depth asked for, and no deeper.
  const std::string deep = std::string(8, '[') + std::string(8, ']');
  CHECK(Tree(deep, 8).count == 8);
  CHECK(Tree(deep, 7).count == -1);
  CHECK(Tree(deep, GPUSLICE_FP_JSON_MAX_DEPTH + 1).count == -1);
  // Room: as many values as given, and no more.
  const std::string three = "[1,2]";
  std::vector<gpuslice_fp_json_node> nodes(3);
  CHECK(gpuslice_fp_json_parse(three.data(), three.size(), nodes.data(), 3, 4) == 3);
  CHECK(gpuslice_fp_json_parse(three.data(), three.size(), nodes.data(), 2, 4) == -1);
  std::string many = "{";
  for (int i = 0; i <= GPUSLICE_FP_JSON_MAX_MEMBERS; ++i)
    many += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":0";
  many += "}";
  CHECK(taken_by_parse_json(many));
  CHECK(Tree(many).count == -1);
}

TEST_CASE("fast path JSON: builds parse_json's tree of a runc config.json and of random documents", "[fast-path]") {
  const Tree spec(gpuslice::fs::read_file(GPUSLICE_SOURCE_DIR "/tests/fuzz/corpus/fast_path_json/runc-spec-seccomp.json"));
  REQUIRE(spec.count > 100);
  CHECK(spec.rebuilt() == gpuslice::parse_json<Json>(spec.text));
  std::mt19937 random(15);
  auto pick = [&](int n) { return static_cast<int>(random() % static_cast<unsigned>(n)); };
  // Keys that need no escape (one with an escape is refused, above).
  const std::vector<std::string> keys = {"", "a", "path", "é", "😀", "/x/y"};
  const std::vector<std::string> words = {"", "a", "path", "é", "\"q\"", "back\\slash", "tab\t", "\x01", "😀", "/x/y"};
  std::function<Json(int)> make = [&](int depth) -> Json {
    switch (depth > 5 ? 2 + pick(5) : pick(7)) {
    case 0: {
      Json o = Json::object();
      for (int i = pick(6); i > 0; --i)
        o[keys[static_cast<std::size_t>(pick(static_cast<int>(keys.size())))] + std::to_string(pick(3))] = make(depth + 1);
      return o;
    }
    case 1: {
      Json a = Json::array();
      for (int i = pick(6); i > 0; --i)
        a.push_back(make(depth + 1));
      return a;
    }
    case 2: return words[static_cast<std::size_t>(pick(static_cast<int>(words.size())))];
    case 3: return pick(2) ? Json(static_cast<int64_t>(random()) - (1 << 30)) : Json(static_cast<uint64_t>(random()) << 20);
    case 4: return Json(pick(1000) / 8.0);
    case 5: return Json(pick(2) == 1);
    default: return Json(nullptr);
    }
  };
  for (int round = 0; round < 300; ++round) {
    const Json doc = make(0);
    for (const int indent : {-1, 2}) {
      const Tree t(doc.dump(indent));
      INFO(t.text);
      REQUIRE(t.count > 0);
      CHECK(t.rebuilt() == doc);
    }
  }
}
