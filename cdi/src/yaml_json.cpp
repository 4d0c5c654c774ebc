#include "gpuslice/cdi/yaml_json.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/strings.hpp"

#include <yaml.h>

#include <map>
#include <memory>

namespace gpuslice::cdi {

namespace {

using json = nlohmann::json;

constexpr int kMaxDepth = 64;
// Aliases can multiply a document ("billion laughs"); bound the nodes built.
constexpr std::size_t kMaxNodes = 1 << 20;

bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const Utf8Char ch = decode_utf8(s, i);
    if (!ch.valid)
      return false;
    i += ch.len;
  }
  return true;
}

class EventReader {
public:
  explicit EventReader(std::string_view text) {
    yaml_parser_initialize(&parser_);
    yaml_parser_set_input_string(&parser_, reinterpret_cast<const unsigned char *>(text.data()), text.size());
  }
  ~EventReader() {
    if (has_event_)
      yaml_event_delete(&event_);
    yaml_parser_delete(&parser_);
  }
  EventReader(const EventReader &) = delete;
  EventReader &operator=(const EventReader &) = delete;

  // Advances to the next event.
  const yaml_event_t &next() {
    if (has_event_)
      yaml_event_delete(&event_);
    has_event_ = false;
    if (!yaml_parser_parse(&parser_, &event_)) {
      std::string msg = "invalid YAML at line " + std::to_string(parser_.problem_mark.line + 1);
      if (parser_.problem)
        msg += std::string(": ") + parser_.problem;
      if (parser_.context)
        msg += std::string(" ") + parser_.context;
      throw Error(msg);
    }
    has_event_ = true;
    return event_;
  }

  std::size_t line() const { return event_.start_mark.line + 1; }

  json document() {
    expect(next(), YAML_STREAM_START_EVENT);
    const auto &e = next();
    if (e.type == YAML_STREAM_END_EVENT)
      return nullptr;
    expect(e, YAML_DOCUMENT_START_EVENT);
    json root = node(next(), 0);
    expect(next(), YAML_DOCUMENT_END_EVENT);
    if (next().type != YAML_STREAM_END_EVENT)
      throw Error("a spec file must hold one YAML document (another starts at line " + std::to_string(line()) + ")");
    return root;
  }

private:
  void expect(const yaml_event_t &e, yaml_event_type_t type) {
    if (e.type != type)
      throw Error("unexpected YAML structure at line " + std::to_string(line()));
  }

  // Errors name the line: building a field path for every node would cost
  // more than parsing it.
  std::string at_line() const { return " at line " + std::to_string(line()); }

  void count_node() {
    if (++nodes_ > kMaxNodes)
      throw Error("YAML document expands to too many nodes" + at_line());
  }

  void remember(const yaml_char_t *anchor, const json &value) {
    if (anchor)
      anchors_[reinterpret_cast<const char *>(anchor)] = value;
  }

  json node(const yaml_event_t &e, int depth) {
    if (depth > kMaxDepth)
      throw Error("YAML nested too deeply" + at_line());
    count_node();
    switch (e.type) {
    case YAML_SCALAR_EVENT: {
      std::string_view s(reinterpret_cast<const char *>(e.data.scalar.value), e.data.scalar.length);
      const yaml_char_t *anchor = e.data.scalar.anchor;
      json value;
      if (e.data.scalar.plain_implicit && e.data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
          (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL")) {
        value = nullptr;
      } else {
        if (!valid_utf8(s))
          throw Error("invalid UTF-8" + at_line());
        value = std::string(s);
      }
      remember(anchor, value);
      return value;
    }
    case YAML_ALIAS_EVENT: {
      auto it = anchors_.find(reinterpret_cast<const char *>(e.data.alias.anchor));
      if (it == anchors_.end())
        throw Error("unknown YAML alias at line " + std::to_string(line()));
      nodes_ += it->second.size();
      count_node();
      return it->second;
    }
    case YAML_SEQUENCE_START_EVENT: {
      std::string anchor = e.data.sequence_start.anchor ? reinterpret_cast<const char *>(e.data.sequence_start.anchor) : "";
      json arr = json::array();
      for (;;) {
        const auto &item = next();
        if (item.type == YAML_SEQUENCE_END_EVENT)
          break;
        arr.push_back(node(item, depth + 1));
      }
      if (!anchor.empty())
        anchors_[anchor] = arr;
      return arr;
    }
    case YAML_MAPPING_START_EVENT: {
      std::string anchor = e.data.mapping_start.anchor ? reinterpret_cast<const char *>(e.data.mapping_start.anchor) : "";
      json obj = json::object();
      for (;;) {
        const auto &k = next();
        if (k.type == YAML_MAPPING_END_EVENT)
          break;
        if (k.type != YAML_SCALAR_EVENT)
          throw Error("mapping keys must be strings" + at_line());
        std::string key(reinterpret_cast<const char *>(k.data.scalar.value), k.data.scalar.length);
        if (!valid_utf8(key))
          throw Error("invalid UTF-8 in a key" + at_line());
        if (obj.contains(key))
          throw Error("duplicate field " + quote(key) + at_line());
        json value = node(next(), depth + 1);
        obj[key] = std::move(value);
      }
      if (!anchor.empty())
        anchors_[anchor] = obj;
      return obj;
    }
    default:
      throw Error("unexpected YAML structure at line " + std::to_string(line()));
    }
  }

  yaml_parser_t parser_{};
  yaml_event_t event_{};
  bool has_event_ = false;
  std::map<std::string, json> anchors_;
  std::size_t nodes_ = 0;
};

} // namespace

json yaml_to_json(std::string_view text) {
  EventReader reader(text);
  return reader.document();
}

} // namespace gpuslice::cdi
