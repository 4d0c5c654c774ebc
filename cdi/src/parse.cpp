// JSON and YAML specs are turned into one JSON tree, then decoded by a single
// strict, schema-directed decoder. YAML scalars arrive as strings (a plain
// `0644` or `true` is only typed once the decoder knows which field it is in),
// so YAML and JSON specs of the same content decode identically.
#include "gpuslice/cdi/parse.hpp"

#include "gpuslice/cdi/validate.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/json_text.hpp"

#include "gpuslice/cdi/yaml_json.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <limits>

namespace gpuslice::cdi {

using json = nlohmann::json;

namespace {

// ---- strict decoding ----------------------------------------------------

// Where the decoder is, rendered ("devices[0].containerEdits.env") only when
// an error needs it: building the string for every field would cost more
// than decoding.
struct Path {
  const Path *parent = nullptr;
  const char *key = nullptr; // a field, or nullptr for an index
  std::size_t index = 0;

  Path field(const char *k) const { return {this, k, 0}; }
  Path at(std::size_t i) const { return {this, nullptr, i}; }

  std::string str() const {
    if (!parent)
      return key ? key : "";
    std::string base = parent->str();
    if (!key)
      return base + "[" + std::to_string(index) + "]";
    return base.empty() ? key : base + "." + key;
  }
};

struct Decoder {
  bool from_yaml;

  [[noreturn]] void type_error(const Path &at, const char *want) const {
    throw Error("field " + quote(at.str()) + " must be " + want);
  }

  void expect_object(const json &j, const Path &at, std::initializer_list<const char *> known) const {
    if (!j.is_object()) {
      const std::string where = at.str();
      throw Error("field " + quote(where.empty() ? "(top)" : where) + " must be an object");
    }
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string &key = it.key();
      if (std::none_of(known.begin(), known.end(), [&](const char *k) { return key == k; })) {
        const std::string where = at.str();
        throw Error("unknown field " + quote(where.empty() ? key : where + "." + key));
      }
    }
  }

  static const json *member(const json &obj, const char *key) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null())
      return nullptr;
    return &*it;
  }

  void str(const json &obj, const char *key, const Path &at, std::string &out) const {
    if (const json *j = member(obj, key)) {
      if (!j->is_string())
        type_error(at.field(key), "a string");
      out = j->get<std::string>();
    }
  }

  void strings(const json &obj, const char *key, const Path &at, std::vector<std::string> &out) const {
    if (const json *j = member(obj, key)) {
      const Path here = at.field(key);
      if (!j->is_array())
        type_error(here, "a list of strings");
      out.reserve(j->size());
      std::size_t i = 0;
      for (const auto &el : *j) {
        if (!el.is_string())
          type_error(here.at(i), "a string");
        out.push_back(el.get<std::string>());
        ++i;
      }
    }
  }

  // Integers: JSON numbers, or YAML scalars in YAML 1.1 notation (decimal,
  // 0x hex, 0o or leading-0 octal) as the reference's YAML parser reads them.
  template <typename T> T integer(const json &j, const Path &at) const {
    const char *want = std::is_signed_v<T> ? "an integer" : "a non-negative integer";
    if (j.is_number_integer()) {
      if (j.is_number_unsigned()) {
        auto v = j.get<uint64_t>();
        if (v > static_cast<uint64_t>(std::numeric_limits<T>::max()))
          type_error(at, "an integer in range");
        return static_cast<T>(v);
      }
      auto v = j.get<int64_t>();
      if (v < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
          (v > 0 && static_cast<uint64_t>(v) > static_cast<uint64_t>(std::numeric_limits<T>::max())))
        type_error(at, "an integer in range");
      return static_cast<T>(v);
    }
    if (from_yaml && j.is_string()) {
      const std::string &s = j.get_ref<const std::string &>();
      bool neg = false;
      std::string_view v = s;
      if (!v.empty() && (v.front() == '-' || v.front() == '+')) {
        neg = v.front() == '-';
        v.remove_prefix(1);
      }
      int base = 10;
      if (v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
        base = 16;
        v.remove_prefix(2);
      } else if (v.size() > 2 && v[0] == '0' && v[1] == 'o') {
        base = 8;
        v.remove_prefix(2);
      } else if (v.size() > 1 && v[0] == '0') {
        base = 8;
        v.remove_prefix(1);
      }
      uint64_t u = 0;
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), u, base);
      if (ec != std::errc() || p != v.data() + v.size() || v.empty())
        type_error(at, want);
      if (neg) {
        if (!std::is_signed_v<T> || u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
          type_error(at, want);
        return integer<T>(json(-static_cast<int64_t>(u)), at);
      }
      return integer<T>(json(u), at);
    }
    type_error(at, want);
  }

  bool boolean(const json &j, const Path &at) const {
    if (j.is_boolean())
      return j.get<bool>();
    if (from_yaml && j.is_string()) {
      static const char *yes[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", "y", "Y"};
      static const char *no[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", "n", "N"};
      const auto &s = j.get_ref<const std::string &>();
      for (const char *w : yes)
        if (s == w)
          return true;
      for (const char *w : no)
        if (s == w)
          return false;
    }
    type_error(at, "true or false");
  }

  template <typename T> void optional_integer(const json &obj, const char *key, const Path &at, T &out) const {
    if (const json *v = member(obj, key))
      out = integer<T>(*v, at.field(key));
  }
  template <typename T> void optional_integer(const json &obj, const char *key, const Path &at, std::optional<T> &out) const {
    if (const json *v = member(obj, key))
      out = integer<T>(*v, at.field(key));
  }
  void optional_bool(const json &obj, const char *key, const Path &at, bool &out) const {
    if (const json *v = member(obj, key))
      out = boolean(*v, at.field(key));
  }

  Annotations annotations(const json &obj, const Path &at) const {
    Annotations out;
    if (const json *j = member(obj, "annotations")) {
      const Path here = at.field("annotations");
      if (!j->is_object())
        type_error(here, "a map of strings");
      for (auto it = j->begin(); it != j->end(); ++it) {
        if (!it->is_string())
          type_error(here.field(it.key().c_str()), "a string");
        out[it.key()] = it->get<std::string>();
      }
    }
    return out;
  }

  template <typename T, typename Fn>
  void list(const json &obj, const char *key, const Path &at, std::vector<T> &out, Fn &&each) const {
    if (const json *j = member(obj, key)) {
      const Path here = at.field(key);
      if (!j->is_array())
        type_error(here, "a list");
      out.reserve(j->size());
      std::size_t i = 0;
      for (const auto &el : *j)
        out.push_back(each(el, here.at(i++)));
    }
  }

  DeviceNode device_node(const json &j, const Path &at) const {
    expect_object(j, at, {"path", "hostPath", "type", "major", "minor", "fileMode", "permissions", "uid", "gid"});
    DeviceNode d;
    str(j, "path", at, d.path);
    str(j, "hostPath", at, d.host_path);
    str(j, "type", at, d.type);
    optional_integer(j, "major", at, d.major);
    optional_integer(j, "minor", at, d.minor);
    optional_integer(j, "fileMode", at, d.file_mode);
    str(j, "permissions", at, d.permissions);
    optional_integer(j, "uid", at, d.uid);
    optional_integer(j, "gid", at, d.gid);
    return d;
  }

  Mount mount(const json &j, const Path &at) const {
    expect_object(j, at, {"hostPath", "containerPath", "options", "type"});
    Mount m;
    str(j, "hostPath", at, m.host_path);
    str(j, "containerPath", at, m.container_path);
    strings(j, "options", at, m.options);
    str(j, "type", at, m.type);
    return m;
  }

  Hook hook(const json &j, const Path &at) const {
    expect_object(j, at, {"hookName", "path", "args", "env", "timeout"});
    Hook h;
    str(j, "hookName", at, h.hook_name);
    str(j, "path", at, h.path);
    strings(j, "args", at, h.args);
    strings(j, "env", at, h.env);
    optional_integer(j, "timeout", at, h.timeout);
    return h;
  }

  NetDevice net_device(const json &j, const Path &at) const {
    expect_object(j, at, {"hostInterfaceName", "name"});
    NetDevice n;
    str(j, "hostInterfaceName", at, n.host_interface_name);
    str(j, "name", at, n.name);
    return n;
  }

  IntelRdt intel_rdt(const json &j, const Path &at) const {
    expect_object(j, at, {"closID", "l3CacheSchema", "memBwSchema", "schemata", "enableMonitoring", "enableCMT", "enableMBM"});
    IntelRdt r;
    str(j, "closID", at, r.clos_id);
    str(j, "l3CacheSchema", at, r.l3_cache_schema);
    str(j, "memBwSchema", at, r.mem_bw_schema);
    strings(j, "schemata", at, r.schemata);
    optional_bool(j, "enableMonitoring", at, r.enable_monitoring);
    optional_bool(j, "enableCMT", at, r.enable_cmt);
    optional_bool(j, "enableMBM", at, r.enable_mbm);
    return r;
  }

  ContainerEdits edits(const json &j, const Path &at) const {
    expect_object(j, at, {"env", "deviceNodes", "netDevices", "hooks", "mounts", "intelRdt", "additionalGids"});
    ContainerEdits e;
    strings(j, "env", at, e.env);
    list(j, "deviceNodes", at, e.device_nodes, [&](const json &el, const Path &p) { return device_node(el, p); });
    list(j, "netDevices", at, e.net_devices, [&](const json &el, const Path &p) { return net_device(el, p); });
    list(j, "hooks", at, e.hooks, [&](const json &el, const Path &p) { return hook(el, p); });
    list(j, "mounts", at, e.mounts, [&](const json &el, const Path &p) { return mount(el, p); });
    if (const json *v = member(j, "intelRdt"))
      e.intel_rdt = intel_rdt(*v, at.field("intelRdt"));
    list(j, "additionalGids", at, e.additional_gids, [&](const json &el, const Path &p) { return integer<uint32_t>(el, p); });
    return e;
  }

  Device device(const json &j, const Path &at) const {
    expect_object(j, at, {"name", "annotations", "containerEdits"});
    Device d;
    str(j, "name", at, d.name);
    d.annotations = annotations(j, at);
    if (const json *v = member(j, "containerEdits"))
      d.edits = edits(*v, at.field("containerEdits"));
    return d;
  }

  Spec spec(const json &j) const {
    const Path top;
    expect_object(j, top, {"cdiVersion", "kind", "annotations", "devices", "containerEdits"});
    Spec s;
    str(j, "cdiVersion", top, s.version);
    str(j, "kind", top, s.kind);
    s.annotations = annotations(j, top);
    list(j, "devices", top, s.devices, [&](const json &el, const Path &p) { return device(el, p); });
    if (const json *v = member(j, "containerEdits"))
      s.edits = edits(*v, top.field("containerEdits"));
    return s;
  }
};

// The decoders recurse once per nesting level: a hostile or broken spec must
// not overflow the stack of a runtime or hook. No real spec nests deeper
// than a dozen levels, so depth and indentation are bounded before parsing.
constexpr int kMaxFlowDepth = 64;
constexpr std::size_t kMaxIndent = 256;

void check_shape(std::string_view text) {
  if (text.size() > kMaxSpecSize)
    throw Error("spec is larger than " + std::to_string(kMaxSpecSize >> 20) + " MiB");
  int depth = 0;
  char in_quote = 0;
  std::size_t indent = 0;
  bool line_start = true;
  char prev = ' ';
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      line_start = true;
      indent = 0;
      prev = ' ';
      continue;
    }
    if (line_start && !in_quote) {
      if (c == ' ' || c == '\t' || c == '-' || c == '?' || c == ':') {
        if (++indent > kMaxIndent)
          throw Error("spec is nested too deeply (line indented more than " + std::to_string(kMaxIndent) + ")");
        prev = c;
        continue;
      }
      line_start = false;
    }
    if (in_quote) {
      if (c == '\\' && in_quote == '"')
        ++i;
      else if (c == '\'' && in_quote == '\'' && i + 1 < text.size() && text[i + 1] == '\'')
        ++i;
      else if (c == in_quote)
        in_quote = 0;
      prev = 'x';
      continue;
    }
    // Quotes and comments only start after a separator, as in YAML and JSON.
    const bool after_separator = prev == ' ' || prev == '\t' || prev == '[' || prev == '{' || prev == ',' || prev == ':' ||
                                 prev == '-' || prev == '?';
    if ((c == '"' || c == '\'') && after_separator) {
      in_quote = c;
    } else if (c == '#' && (prev == ' ' || prev == '\t')) {
      while (i + 1 < text.size() && text[i + 1] != '\n')
        ++i;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxFlowDepth)
        throw Error("spec is nested too deeply (more than " + std::to_string(kMaxFlowDepth) + " levels)");
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
    prev = c;
  }
}

} // namespace

bool looks_like_json(std::string_view text) {
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
      continue;
    return c == '{';
  }
  return false;
}

Spec parse_spec(std::string_view text) {
  check_shape(text);
  if (looks_like_json(text)) {
    // One strict rule for both formats: a key twice in one object is an
    // error (nlohmann's own parser would keep the last one silently).
    return Decoder{false}.spec(parse_json(text));
  }
  json root = yaml_to_json(text);
  if (!root.is_object())
    throw Error("a spec must be a mapping (object) at the top level");
  return Decoder{true}.spec(root);
}


} // namespace gpuslice::cdi
