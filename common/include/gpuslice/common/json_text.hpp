// Parsing JSON that someone else wrote (a bundle's config.json, a hook's
// state on stdin, a spec) into nlohmann's types without letting its shape
// hurt the parser's caller. nlohmann parses iteratively, but copying,
// dumping and comparing a document recurse once per nesting level: a
// config.json nested 50,000 deep parses fine and then overflows the stack.
// No OCI spec, state or CDI spec nests deeper than a dozen levels, so the
// text is refused when it nests deeper than kMaxJsonDepth, before anything
// that deep is built.
#pragma once

#include "gpuslice/common/error.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace gpuslice {

inline constexpr std::size_t kMaxJsonDepth = 128;

// Throws Error when arrays and objects nest deeper than max_depth (strings
// are skipped, escapes included); says nothing about the text's validity.
void check_json_depth(std::string_view text, std::size_t max_depth = kMaxJsonDepth);

namespace json_detail {

// nlohmann's exception text less its "[json.exception.parse_error.101] ".
inline std::string reason(const char *what) {
  std::string text = what;
  if (auto pos = text.find("] "); pos != std::string::npos)
    text.erase(0, pos + 2);
  return text;
}

[[noreturn]] inline void nested_too_deep(std::size_t max_depth) {
  throw Error("JSON nested more than " + std::to_string(max_depth) + " levels deep");
}

[[noreturn]] inline void key_twice(std::string_view key) {
  throw Error("invalid JSON: the key " + quote(key) + " twice in one object");
}

// The keys of one object (key_of(item) for each item), compared with the
// keys before each, or, past a few dozen, sorted (an object may hold
// thousands of annotations; no hash that chosen keys could make collide).
template <typename Items, typename KeyOf> void refuse_keys_twice(const Items &items, KeyOf key_of) {
  constexpr std::size_t kScanned = 32;
  if (items.size() <= kScanned) {
    for (std::size_t i = 1; i < items.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (key_of(items[j]) == key_of(items[i]))
          key_twice(key_of(items[i]));
    return;
  }
  std::vector<std::string_view> keys;
  keys.reserve(items.size());
  for (const auto &item : items)
    keys.emplace_back(key_of(item));
  std::sort(keys.begin(), keys.end());
  if (auto same = std::adjacent_find(keys.begin(), keys.end()); same != keys.end())
    key_twice(*same);
}

template <typename T, typename = void> struct kept_in_a_vector : std::false_type {};
template <typename T> struct kept_in_a_vector<T, std::void_t<typename T::Container>> : std::true_type {};

// The document, built from nlohmann's SAX events as its own parser builds
// it, but each object's members are gathered and moved in once it ends,
// and a key given twice in one object is refused.
//
// Why: ordered_json (config.json's type) keeps an object's members in a
// vector of pair<const string, json>, which cannot be moved: nlohmann's
// parser adds them one by one, and every growth of that vector copied the
// members already parsed, subtrees included: ~20 % of parsing a pod's
// config.json. Counting the nesting here also spares a pass over the text.
// And a key twice: nlohmann's parser keeps the last value, Go's
// encoding/json (runc's) merges an object given twice into the first, so
// the two would read different specs from one text; no engine writes one.
template <typename Json> class DocumentBuilder {
public:
  using string_t = typename Json::string_t;

  explicit DocumentBuilder(std::size_t max_depth) : max_depth_(max_depth) {}

  bool null() { return add(Json(nullptr)); }
  bool boolean(bool value) { return add(Json(value)); }
  bool number_integer(typename Json::number_integer_t value) { return add(Json(value)); }
  bool number_unsigned(typename Json::number_unsigned_t value) { return add(Json(value)); }
  bool number_float(typename Json::number_float_t value, const string_t &) { return add(Json(value)); }
  bool string(string_t &value) { return add(Json(std::move(value))); }
  bool binary(typename Json::binary_t &value) { return add(Json::binary(std::move(value))); } // not from JSON text
  bool start_object(std::size_t) { return open(true); }
  bool key(string_t &key) {
    levels_[depth_ - 1].key = std::move(key);
    return true;
  }
  bool end_object() {
    Level &level = levels_[--depth_];
    Json object(Json::value_t::object);
    move_members(level.members, object.template get_ref<typename Json::object_t &>());
    level.members.clear(); // its capacity kept for the next object this deep
    return add(std::move(object));
  }
  bool start_array(std::size_t) { return open(false); }
  bool end_array() {
    Level &level = levels_[--depth_];
    Json array(Json::value_t::array);
    array.template get_ref<typename Json::array_t &>() = std::move(level.elements);
    level.elements.clear();
    return add(std::move(array));
  }
  template <typename Exception> bool parse_error(std::size_t, const std::string &, const Exception &e) {
    throw Error("invalid JSON: " + reason(e.what()));
  }

  Json take() { return std::move(document_); }

private:
  using Members = std::vector<std::pair<string_t, Json>>;
  struct Level {
    bool object = false;
    string_t key;
    Members members;
    typename Json::array_t elements;
  };

  bool open(bool object) {
    if (depth_ == max_depth_)
      nested_too_deep(max_depth_);
    if (depth_ == levels_.size())
      levels_.emplace_back();
    levels_[depth_++].object = object;
    return true;
  }

  bool add(Json &&value) {
    if (depth_ == 0) {
      document_ = std::move(value);
    } else if (Level &level = levels_[depth_ - 1]; level.object) {
      level.members.emplace_back(std::move(level.key), std::move(value));
    } else {
      level.elements.push_back(std::move(value));
    }
    return true;
  }

  static void refuse_keys_twice(const Members &members) {
    json_detail::refuse_keys_twice(members, [](const auto &member) -> std::string_view { return member.first; });
  }

  template <typename Object> static void move_members(Members &from, Object &to) {
    refuse_keys_twice(from);
    if constexpr (kept_in_a_vector<Object>::value) {
      auto &vector = static_cast<typename Object::Container &>(to);
      vector.reserve(from.size());
      for (auto &[key, value] : from)
        vector.emplace_back(std::move(key), std::move(value));
    } else {
      for (auto &[key, value] : from)
        to.emplace(std::move(key), std::move(value));
    }
  }

  std::size_t max_depth_;
  std::size_t depth_ = 0;
  std::vector<Level> levels_;
  Json document_;
};

} // namespace json_detail

// The parsed document; throws Error "invalid JSON: <reason>" (never a
// nlohmann exception) or the depth error above, before building deeper.
// Refused too: a key given twice in one object (DocumentBuilder), and a
// NUL byte, which no JSON text holds: nlohmann's parser would take it for the
// end of the text and ignore what follows.
// With `run`, the events go to the builder through run(builder) (a filter of
// them around nlohmann's sax_parse of the same text), which returns what
// sax_parse did.
template <typename Json, typename Run> Json parse_json(std::string_view text, Run run) {
  if (auto nul = text.find('\0'); nul != std::string_view::npos)
    throw Error("invalid JSON: a NUL byte at offset " + std::to_string(nul));
  json_detail::DocumentBuilder<Json> builder(kMaxJsonDepth);
  try {
    if (!run(builder))
      throw Error("invalid JSON"); // not reached: the builder throws its reason
  } catch (const nlohmann::json::exception &e) {
    throw Error("invalid JSON: " + json_detail::reason(e.what()));
  }
  return builder.take();
}

// The events of `text` to `sax` (strict, no comments), from nlohmann's JSON
// text parser itself: Json::sax_parse would also instantiate its CBOR,
// MessagePack, UBJSON and BSON readers, which every program that parses
// (gpuslice-shim too, one per container) would then carry.
template <typename Json, typename Sax> bool sax_parse_text(std::string_view text, Sax &sax) {
  auto input = nlohmann::detail::input_adapter(text.begin(), text.end());
  return nlohmann::detail::parser<Json, decltype(input)>(std::move(input), nullptr, true, false).sax_parse(&sax, true);
}

template <typename Json = nlohmann::json> Json parse_json(std::string_view text) {
  return parse_json<Json>(text, [&](json_detail::DocumentBuilder<Json> &builder) {
    return sax_parse_text<Json>(text, builder);
  });
}

// nlohmann's parser and the builder, instantiated once (json_text.cpp) for
// the two document types rather than in every file that parses: they are
// most of such a file's compile time.
extern template nlohmann::json parse_json<nlohmann::json>(std::string_view);
extern template nlohmann::ordered_json parse_json<nlohmann::ordered_json>(std::string_view);

// Typed access to a member of a JSON object that someone else wrote: the
// value, nullopt when the member is absent or null, and an Error naming
// `where` (the member's JSON path, e.g. "linux.devices[2].path") when it is
// of another type. nlohmann's own accessors throw type_error there, which
// no caller expects.
template <typename Json>
std::optional<std::string> string_member(const Json &object, std::string_view key, std::string_view where) {
  if (!object.is_object())
    return std::nullopt;
  auto it = object.find(key);
  if (it == object.end() || it->is_null())
    return std::nullopt;
  if (!it->is_string())
    throw Error(std::string(where) + " is not a string");
  return it->template get<std::string>();
}

template <typename Json> std::optional<bool> bool_member(const Json &object, std::string_view key, std::string_view where) {
  if (!object.is_object())
    return std::nullopt;
  auto it = object.find(key);
  if (it == object.end() || it->is_null())
    return std::nullopt;
  if (!it->is_boolean())
    throw Error(std::string(where) + " is not a boolean");
  return it->template get<bool>();
}

} // namespace gpuslice
