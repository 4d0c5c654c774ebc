// JSON and YAML specs are turned into one JSON tree, then decoded by a single
// strict, schema-directed decoder. YAML scalars arrive as strings (a plain
// `0644` or `true` is only typed once the decoder knows which field it is in),
// so YAML and JSON specs of the same content decode identically.
#include "gpuslice/cdi/parse.hpp"

#include "gpuslice/cdi/validate.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <limits>

namespace gpuslice::cdi {

using json = nlohmann::json;

namespace {

// ---- YAML to JSON -------------------------------------------------------

// JSON text must be UTF-8; a YAML spec could smuggle other bytes into a string
// that would later make writing config.json fail.
bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (len == 0 || i + len > s.size())
      return false;
    uint32_t cp = len == 1 ? c : c & (0x7f >> len);
    for (std::size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80)
        return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i += len;
  }
  return true;
}

std::string utf8_scalar(const std::string &s, const std::string &at) {
  if (!valid_utf8(s))
    throw Error("field " + quote(at.empty() ? "(top)" : at) + ": invalid UTF-8");
  return s;
}

json yaml_to_json(const YAML::Node &node, const std::string &at) {
  switch (node.Type()) {
  case YAML::NodeType::Null:
  case YAML::NodeType::Undefined:
    return nullptr;
  case YAML::NodeType::Scalar: {
    const std::string &s = node.Scalar();
    if (node.Tag() != "!" && (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL"))
      return nullptr;
    return utf8_scalar(s, at);
  }
  case YAML::NodeType::Sequence: {
    json arr = json::array();
    std::size_t i = 0;
    for (const auto &el : node)
      arr.push_back(yaml_to_json(el, at + "[" + std::to_string(i++) + "]"));
    return arr;
  }
  case YAML::NodeType::Map: {
    json obj = json::object();
    for (const auto &kv : node) {
      if (!kv.first.IsScalar())
        throw Error(quote(at.empty() ? "(top)" : at) + ": mapping keys must be strings");
      const std::string key = utf8_scalar(kv.first.Scalar(), at);
      const std::string child = at.empty() ? key : at + "." + key;
      if (obj.contains(key))
        throw Error("duplicate field " + quote(child));
      obj[key] = yaml_to_json(kv.second, child);
    }
    return obj;
  }
  }
  return nullptr;
}

// ---- strict decoding ----------------------------------------------------

struct Decoder {
  bool from_yaml;

  [[noreturn]] void type_error(const std::string &at, const char *want) const {
    throw Error("field " + quote(at) + " must be " + want);
  }

  void expect_object(const json &j, const std::string &at, std::initializer_list<const char *> known) const {
    if (!j.is_object())
      type_error(at.empty() ? "(top)" : at, "an object");
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string &key = it.key();
      if (std::none_of(known.begin(), known.end(), [&](const char *k) { return key == k; }))
        throw Error("unknown field " + quote(at.empty() ? key : at + "." + key));
    }
  }

  static const json *member(const json &obj, const char *key) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null())
      return nullptr;
    return &*it;
  }

  void str(const json &obj, const char *key, const std::string &at, std::string &out) const {
    if (const json *j = member(obj, key)) {
      if (!j->is_string())
        type_error(at + "." + key, "a string");
      out = j->get<std::string>();
    }
  }

  void strings(const json &obj, const char *key, const std::string &at, std::vector<std::string> &out) const {
    if (const json *j = member(obj, key)) {
      if (!j->is_array())
        type_error(at + "." + key, "a list of strings");
      std::size_t i = 0;
      for (const auto &el : *j) {
        if (!el.is_string())
          type_error(at + "." + key + "[" + std::to_string(i) + "]", "a string");
        out.push_back(el.get<std::string>());
        ++i;
      }
    }
  }

  // Integers: JSON numbers, or YAML scalars in YAML 1.1 notation (decimal,
  // 0x hex, 0o or leading-0 octal) as the reference's YAML parser reads them.
  template <typename T> T integer(const json &j, const std::string &at) const {
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
      std::string s = j.get<std::string>();
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

  bool boolean(const json &j, const std::string &at) const {
    if (j.is_boolean())
      return j.get<bool>();
    if (from_yaml && j.is_string()) {
      static const char *yes[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", "y", "Y"};
      static const char *no[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", "n", "N"};
      const auto s = j.get<std::string>();
      for (const char *w : yes)
        if (s == w)
          return true;
      for (const char *w : no)
        if (s == w)
          return false;
    }
    type_error(at, "true or false");
  }

  Annotations annotations(const json &obj, const std::string &at) const {
    Annotations out;
    if (const json *j = member(obj, "annotations")) {
      if (!j->is_object())
        type_error(at + "annotations", "a map of strings");
      for (const auto &[k, v] : j->items()) {
        if (!v.is_string())
          type_error(at + "annotations." + k, "a string");
        out[k] = v.get<std::string>();
      }
    }
    return out;
  }

  template <typename T, typename Fn>
  void list(const json &obj, const char *key, const std::string &at, std::vector<T> &out, Fn &&each) const {
    if (const json *j = member(obj, key)) {
      if (!j->is_array())
        type_error(at + "." + key, "a list");
      std::size_t i = 0;
      for (const auto &el : *j) {
        out.push_back(each(el, at + "." + key + "[" + std::to_string(i) + "]"));
        ++i;
      }
    }
  }

  DeviceNode device_node(const json &j, const std::string &at) const {
    expect_object(j, at, {"path", "hostPath", "type", "major", "minor", "fileMode", "permissions", "uid", "gid"});
    DeviceNode d;
    str(j, "path", at, d.path);
    str(j, "hostPath", at, d.host_path);
    str(j, "type", at, d.type);
    if (const json *v = member(j, "major"))
      d.major = integer<int64_t>(*v, at + ".major");
    if (const json *v = member(j, "minor"))
      d.minor = integer<int64_t>(*v, at + ".minor");
    if (const json *v = member(j, "fileMode"))
      d.file_mode = integer<uint32_t>(*v, at + ".fileMode");
    str(j, "permissions", at, d.permissions);
    if (const json *v = member(j, "uid"))
      d.uid = integer<uint32_t>(*v, at + ".uid");
    if (const json *v = member(j, "gid"))
      d.gid = integer<uint32_t>(*v, at + ".gid");
    return d;
  }

  Mount mount(const json &j, const std::string &at) const {
    expect_object(j, at, {"hostPath", "containerPath", "options", "type"});
    Mount m;
    str(j, "hostPath", at, m.host_path);
    str(j, "containerPath", at, m.container_path);
    strings(j, "options", at, m.options);
    str(j, "type", at, m.type);
    return m;
  }

  Hook hook(const json &j, const std::string &at) const {
    expect_object(j, at, {"hookName", "path", "args", "env", "timeout"});
    Hook h;
    str(j, "hookName", at, h.hook_name);
    str(j, "path", at, h.path);
    strings(j, "args", at, h.args);
    strings(j, "env", at, h.env);
    if (const json *v = member(j, "timeout"))
      h.timeout = integer<int64_t>(*v, at + ".timeout");
    return h;
  }

  NetDevice net_device(const json &j, const std::string &at) const {
    expect_object(j, at, {"hostInterfaceName", "name"});
    NetDevice n;
    str(j, "hostInterfaceName", at, n.host_interface_name);
    str(j, "name", at, n.name);
    return n;
  }

  IntelRdt intel_rdt(const json &j, const std::string &at) const {
    expect_object(j, at, {"closID", "l3CacheSchema", "memBwSchema", "schemata", "enableMonitoring", "enableCMT", "enableMBM"});
    IntelRdt r;
    str(j, "closID", at, r.clos_id);
    str(j, "l3CacheSchema", at, r.l3_cache_schema);
    str(j, "memBwSchema", at, r.mem_bw_schema);
    strings(j, "schemata", at, r.schemata);
    if (const json *v = member(j, "enableMonitoring"))
      r.enable_monitoring = boolean(*v, at + ".enableMonitoring");
    if (const json *v = member(j, "enableCMT"))
      r.enable_cmt = boolean(*v, at + ".enableCMT");
    if (const json *v = member(j, "enableMBM"))
      r.enable_mbm = boolean(*v, at + ".enableMBM");
    return r;
  }

  ContainerEdits edits(const json &j, const std::string &at) const {
    expect_object(j, at, {"env", "deviceNodes", "netDevices", "hooks", "mounts", "intelRdt", "additionalGids"});
    ContainerEdits e;
    strings(j, "env", at, e.env);
    list(j, "deviceNodes", at, e.device_nodes, [&](const json &el, const std::string &a) { return device_node(el, a); });
    list(j, "netDevices", at, e.net_devices, [&](const json &el, const std::string &a) { return net_device(el, a); });
    list(j, "hooks", at, e.hooks, [&](const json &el, const std::string &a) { return hook(el, a); });
    list(j, "mounts", at, e.mounts, [&](const json &el, const std::string &a) { return mount(el, a); });
    if (const json *v = member(j, "intelRdt"))
      e.intel_rdt = intel_rdt(*v, at + ".intelRdt");
    list(j, "additionalGids", at, e.additional_gids, [&](const json &el, const std::string &a) { return integer<uint32_t>(el, a); });
    return e;
  }

  Device device(const json &j, const std::string &at) const {
    expect_object(j, at, {"name", "annotations", "containerEdits"});
    Device d;
    str(j, "name", at, d.name);
    d.annotations = annotations(j, at + ".");
    if (const json *v = member(j, "containerEdits"))
      d.edits = edits(*v, at + ".containerEdits");
    return d;
  }

  Spec spec(const json &j) const {
    expect_object(j, "", {"cdiVersion", "kind", "annotations", "devices", "containerEdits"});
    Spec s;
    if (const json *v = member(j, "cdiVersion")) {
      if (!v->is_string())
        type_error("cdiVersion", "a string");
      s.version = v->get<std::string>();
    }
    if (const json *v = member(j, "kind")) {
      if (!v->is_string())
        type_error("kind", "a string");
      s.kind = v->get<std::string>();
    }
    s.annotations = annotations(j, "");
    if (const json *v = member(j, "devices")) {
      if (!v->is_array())
        type_error("devices", "a list");
      std::size_t i = 0;
      for (const auto &el : *v)
        s.devices.push_back(device(el, "devices[" + std::to_string(i++) + "]"));
    }
    if (const json *v = member(j, "containerEdits"))
      s.edits = edits(*v, "containerEdits");
    return s;
  }
};

// yaml-cpp recurses once per nesting level and has no depth limit of its own;
// a hostile or broken spec must not overflow the stack of a runtime hook.
// No real spec nests deeper than a dozen levels.
constexpr std::size_t kMaxSpecSize = 4 << 20;
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

bool looks_like_json(std::string_view text) {
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
      continue;
    return c == '{';
  }
  return false;
}

} // namespace

Spec parse_spec(std::string_view text) {
  check_shape(text);
  if (looks_like_json(text)) {
    json j;
    try {
      j = json::parse(text);
    } catch (const json::parse_error &e) {
      std::string what = e.what();
      // nlohmann prefixes "[json.exception.parse_error.101] "; keep the reason.
      if (auto pos = what.find("] "); pos != std::string::npos)
        what.erase(0, pos + 2);
      throw Error("invalid JSON: " + what);
    }
    return Decoder{false}.spec(j);
  }
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception &e) {
    throw Error("invalid YAML at line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (!root.IsMap())
    throw Error("a spec must be a mapping (object) at the top level");
  return Decoder{true}.spec(yaml_to_json(root, ""));
}

Spec load_spec_file(const std::string &path, int priority, std::vector<std::string> &problems) {
  Spec s = with_context("spec " + quote(path), [&] { return parse_spec(fs::read_file(path)); });
  s.path = path;
  s.priority = priority;
  problems = validate_spec(s);
  return s;
}

} // namespace gpuslice::cdi
