// Input: any text, as config.json or a hook's state. parse_json builds its
// document from nlohmann's SAX events (json_text.hpp's DocumentBuilder);
// it must agree with nlohmann's own parser on every text no deeper than
// kMaxJsonDepth: both refuse it with the same reason, or both give the
// same document, its members in the same order (ordered_json); or
// parse_json alone refuses a key given twice in one object, where the
// text has one. A deeper text is refused, and so is one with a NUL byte.
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/json_text.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace {

// Whether an object of the text, as far as nlohmann's parser reads it,
// holds a key twice.
bool has_a_key_twice(std::string_view text) {
  using json = nlohmann::json;
  std::vector<std::set<std::string>> keys; // per open object
  bool twice = false;
  auto watch = [&](int, json::parse_event_t event, json &parsed) {
    if (event == json::parse_event_t::object_start)
      keys.emplace_back();
    else if (event == json::parse_event_t::object_end && !keys.empty())
      keys.pop_back();
    else if (event == json::parse_event_t::key && !keys.empty() && !keys.back().insert(parsed.get<std::string>()).second)
      twice = true;
    return true;
  };
  try {
    (void)json::parse(text, watch);
  } catch (const nlohmann::json::exception &) {
  }
  return twice;
}

template <typename Json> void agree(std::string_view text) {
  std::optional<Json> ours, theirs;
  std::string our_error, their_error;
  try {
    ours = gpuslice::parse_json<Json>(text);
  } catch (const gpuslice::Error &e) {
    our_error = e.message();
  }
  try {
    theirs = Json::parse(text);
  } catch (const nlohmann::json::exception &e) {
    their_error = "invalid JSON: " + gpuslice::json_detail::reason(e.what());
  }
  if (our_error.rfind("invalid JSON: the key ", 0) == 0) { // not nlohmann's: "parse error at ..." and the like
    if (!has_a_key_twice(text))
      std::abort();
    return;
  }
  if (ours.has_value() != theirs.has_value() || our_error != their_error)
    std::abort();
  if (ours && (*ours != *theirs || ours->dump() != theirs->dump() || has_a_key_twice(text)))
    std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  if (text.find('\0') != std::string_view::npos) { // nlohmann's parser would stop there
    try {
      (void)gpuslice::parse_json<nlohmann::ordered_json>(text);
    } catch (const gpuslice::Error &) {
      return 0;
    }
    std::abort();
  }
  try {
    gpuslice::check_json_depth(text);
  } catch (const gpuslice::Error &) {
    try {
      (void)gpuslice::parse_json<nlohmann::ordered_json>(text);
    } catch (const gpuslice::Error &) {
      return 0;
    }
    std::abort(); // deeper than allowed, yet built
  }
  agree<nlohmann::ordered_json>(text);
  agree<nlohmann::json>(text);
  return 0;
}
