#include "gpuslice/create/bundle_spec.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/json_text.hpp"
#include "gpuslice/cdi/names.hpp"

#include <sys/random.h>

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

namespace gpuslice::create {

namespace {
// runc's own config.json of a busybox container is 3 KiB, a Kubernetes
// pod's 20 KiB; a bundle cannot make a runtime on the node read more.
constexpr std::size_t kMaxBundleConfigSize = 16u << 20;

// linux.seccomp is kept as its text, not as a tree: gpuslice never reads
// it, and a pod that asks for RuntimeDefault carries the largest part of
// config.json in it (every system call allowed, by name): as a tree it
// would be built and written back on every create. It is still parsed, to the same depth bound
// and with the same refusal of a key given twice: only not built.

std::size_t skip_space(std::string_view t, std::size_t i) {
  while (i < t.size() && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r'))
    ++i;
  return i;
}

// The end of the string that starts at t[i] ('"'), or npos.
std::size_t skip_string(std::string_view t, std::size_t i) {
  for (++i; i < t.size(); ++i) {
    if (t[i] == '\\')
      ++i;
    else if (t[i] == '"')
      return i + 1;
  }
  return std::string_view::npos;
}

// The end of the value that starts at t[i], brackets matched and strings
// skipped; npos when the text ends first. Not a check of the value.
std::size_t skip_value(std::string_view t, std::size_t i) {
  if (i >= t.size())
    return std::string_view::npos;
  if (t[i] == '"')
    return skip_string(t, i);
  if (t[i] != '{' && t[i] != '[') {
    while (i < t.size() && t[i] != ',' && t[i] != '}' && t[i] != ']' && t[i] != ' ' && t[i] != '\t' &&
           t[i] != '\n' && t[i] != '\r')
      ++i;
    return i;
  }
  std::size_t depth = 0;
  for (; i < t.size(); ++i) {
    if (t[i] == '"') {
      i = skip_string(t, i);
      if (i == std::string_view::npos)
        return i;
      --i;
    } else if (t[i] == '{' || t[i] == '[') {
      ++depth;
    } else if ((t[i] == '}' || t[i] == ']') && --depth == 0) {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// The value of member `key` (spelled without escapes) of the object that
// starts at t[at]: [begin, end), or nullopt.
std::optional<std::pair<std::size_t, std::size_t>> member_value(std::string_view t, std::size_t at, std::string_view key) {
  std::size_t i = skip_space(t, at);
  if (i >= t.size() || t[i] != '{')
    return std::nullopt;
  i = skip_space(t, i + 1);
  while (i < t.size() && t[i] == '"') {
    const std::size_t key_end = skip_string(t, i);
    if (key_end == std::string_view::npos)
      return std::nullopt;
    const bool wanted = t.substr(i + 1, key_end - i - 2) == key;
    i = skip_space(t, key_end);
    if (i >= t.size() || t[i] != ':')
      return std::nullopt;
    i = skip_space(t, i + 1);
    const std::size_t end = skip_value(t, i);
    if (end == std::string_view::npos)
      return std::nullopt;
    if (wanted)
      return std::make_pair(i, end);
    i = skip_space(t, end);
    if (i >= t.size() || t[i] != ',')
      return std::nullopt;
    i = skip_space(t, i + 1);
  }
  return std::nullopt;
}

// Where linux.seccomp's object lies in config.json's text, both keys
// spelled plainly (with an escape in either: not found, and the member is
// built like any other); a key given twice is refused by the parse.
std::optional<std::pair<std::size_t, std::size_t>> seccomp_text(std::string_view t) {
  if (t.find("\"seccomp\"") == std::string_view::npos) // most configs: no walk
    return std::nullopt;
  const auto linux_ = member_value(t, 0, "linux");
  if (!linux_)
    return std::nullopt;
  const auto seccomp = member_value(t, linux_->first, "seccomp");
  if (!seccomp || t[seccomp->first] != '{')
    return std::nullopt;
  return seccomp;
}

// nlohmann's SAX events to DocumentBuilder, but for linux.seccomp's object,
// which it only checks: its nesting against the same bound, its keys
// against the same refusal. In the tree it stands as `placeholder`.
class SeccompAsText {
public:
  using Builder = json_detail::DocumentBuilder<cdi::OciSpec>;
  using string_t = cdi::OciSpec::string_t;

  SeccompAsText(Builder &builder, std::string placeholder) : b_(builder), placeholder_(std::move(placeholder)) {}

  bool null() { return skipping() || b_.null(); }
  bool boolean(bool v) { return skipping() || b_.boolean(v); }
  bool number_integer(cdi::OciSpec::number_integer_t v) { return skipping() || b_.number_integer(v); }
  bool number_unsigned(cdi::OciSpec::number_unsigned_t v) { return skipping() || b_.number_unsigned(v); }
  bool number_float(cdi::OciSpec::number_float_t v, const string_t &s) { return skipping() || b_.number_float(v, s); }
  bool string(string_t &v) { return skipping() || b_.string(v); }
  bool binary(cdi::OciSpec::binary_t &v) { return skipping() || b_.binary(v); }
  bool start_object(std::size_t n) {
    if (skipping() || (depth_ == 2 && in_linux_ && key_ == "seccomp")) {
      open_skipped();
      found_ = true;
      return true;
    }
    if (depth_ == 1)
      in_linux_ = key_ == "linux";
    ++depth_;
    return b_.start_object(n);
  }
  bool key(string_t &k) {
    if (skipping()) {
      skipped_keys_.back().push_back(std::move(k));
      return true;
    }
    if (depth_ <= 2) // the top's and linux's: where "linux" and "seccomp" are looked for
      key_ = k;
    return b_.key(k);
  }
  bool end_object() {
    if (skipping()) {
      json_detail::refuse_keys_twice(skipped_keys_.back(), [](const std::string &k) -> std::string_view { return k; });
      skipped_keys_.pop_back();
      if (skipping())
        return true;
      string_t placeholder = placeholder_;
      return b_.string(placeholder);
    }
    --depth_;
    if (depth_ == 1)
      in_linux_ = false;
    return b_.end_object();
  }
  bool start_array(std::size_t n) {
    if (skipping()) {
      open_skipped(); // an array's level: no keys
      return true;
    }
    ++depth_;
    key_.clear();
    return b_.start_array(n);
  }
  bool end_array() {
    if (skipping()) {
      skipped_keys_.pop_back();
      return true;
    }
    --depth_;
    return b_.end_array();
  }
  template <typename Exception> bool parse_error(std::size_t at, const std::string &token, const Exception &e) {
    return b_.parse_error(at, token, e);
  }

  bool found() const { return found_; }

private:
  bool skipping() const { return !skipped_keys_.empty(); }
  // One level more inside the skipped object, within DocumentBuilder's bound.
  void open_skipped() {
    if (depth_ + skipped_keys_.size() == kMaxJsonDepth)
      json_detail::nested_too_deep(kMaxJsonDepth);
    skipped_keys_.emplace_back();
  }

  Builder &b_;
  std::string placeholder_;
  std::size_t depth_ = 0; // of the objects and arrays built
  bool in_linux_ = false; // the object open at depth 2 is the top's "linux"
  string_t key_;          // the last key seen where nothing is skipped
  std::vector<std::vector<std::string>> skipped_keys_;
  bool found_ = false;
};

// parse_json's document, with linux.seccomp's object (which the text walk
// found) as `placeholder`.
cdi::OciSpec parse_with_seccomp_as_text(std::string_view text, const std::string &placeholder) {
  return parse_json<cdi::OciSpec>(text, [&](json_detail::DocumentBuilder<cdi::OciSpec> &builder) {
    SeccompAsText sax(builder, placeholder);
    const bool parsed = sax_parse_text<cdi::OciSpec>(text, sax);
    if (parsed && !sax.found()) // not where the text walk found it: never for a text that parses
      throw Error("linux.seccomp not where it was found in the text");
    return parsed;
  });
}

std::string random_placeholder() {
  unsigned char bytes[16];
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes))
    throw system_error("getrandom");
  std::string out = "gpuslice-seccomp-as-text-";
  for (unsigned char c : bytes) {
    out += "0123456789abcdef"[c >> 4];
    out += "0123456789abcdef"[c & 15];
  }
  return out;
}
} // namespace

BundleSpec BundleSpec::load(const std::string &path) {
  return with_context("OCI spec " + quote(path), [&] { return parse(fs::read_file(path, kMaxBundleConfigSize), path); });
}

BundleSpec BundleSpec::parse(const std::string &text, const std::string &path) {
  return with_context("OCI spec " + quote(path), [&] {
    if (text.size() > kMaxBundleConfigSize)
      throw Error("larger than " + std::to_string(kMaxBundleConfigSize) + " bytes");
    const auto seccomp = seccomp_text(text);
    std::string placeholder = seccomp ? random_placeholder() : std::string();
    auto doc = seccomp ? parse_with_seccomp_as_text(text, placeholder) : parse_json<cdi::OciSpec>(text);
    if (!doc.is_object())
      throw Error("not a JSON object");
    BundleSpec spec(std::move(doc));
    if (seccomp) {
      spec.seccomp_placeholder_ = std::move(placeholder);
      spec.seccomp_text_ = text.substr(seccomp->first, seccomp->second - seccomp->first);
    }
    return spec;
  });
}

BundleSpec::BundleSpec(cdi::OciSpec doc) : doc_(std::move(doc)) {}

std::string BundleSpec::root_path() const {
  auto root = doc_.find("root");
  auto path = root == doc_.end() ? std::nullopt : string_member(*root, "path", "root.path");
  if (!path)
    throw Error("OCI spec has no root.path");
  return *path;
}

bool BundleSpec::root_readonly() const {
  auto root = doc_.find("root");
  return root != doc_.end() && bool_member(*root, "readonly", "root.readonly").value_or(false);
}

std::map<std::string, std::string> BundleSpec::annotations() const {
  std::map<std::string, std::string> out;
  auto it = doc_.find("annotations");
  if (it == doc_.end() || it->is_null())
    return out;
  if (!it->is_object())
    throw Error("annotations is not an object");
  for (auto a = it->begin(); a != it->end(); ++a)
    if (a->is_string())
      out[a.key()] = a->get<std::string>();
  return out;
}

std::vector<std::string> BundleSpec::process_env() const {
  std::vector<std::string> out;
  auto p = doc_.find("process");
  if (p == doc_.end() || !p->is_object())
    return out;
  auto env = p->find("env");
  if (env == p->end() || !env->is_array())
    return out;
  for (const auto &e : *env)
    if (e.is_string())
      out.push_back(e.get<std::string>());
  return out;
}

namespace {

// A string two levels down ("linux", "mountLabel"); nullopt when absent.
std::optional<std::string> nested_string(const cdi::OciSpec &doc, const char *outer, const char *key) {
  auto it = doc.find(outer);
  if (it == doc.end())
    return std::nullopt;
  return string_member(*it, key, std::string(outer) + "." + key);
}

// linux.devices, when it is an array.
template <typename Doc> auto *linux_devices(Doc &doc) {
  auto lx = doc.find("linux");
  if (lx == doc.end() || !lx->is_object())
    return static_cast<decltype(&*lx)>(nullptr);
  auto devs = lx->find("devices");
  return devs != lx->end() && devs->is_array() ? &*devs : nullptr;
}

// Whether a linux.devices entry names a CDI device; an Error when its
// path is not a string, or names one badly.
bool names_cdi_device(const cdi::OciSpec &entry, std::size_t index) {
  const auto path = string_member(entry, "path", "linux.devices[" + std::to_string(index) + "].path").value_or("");
  if (path.empty() || path[0] == '/' || !cdi::is_qualified_name(path))
    return false;
  with_context("linux.devices entry " + quote(path), [&] { cdi::parse_qualified_name(path); });
  return true;
}

bool is_under(std::string_view path, std::string_view dir) {
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

// Whether a mount of the spec has a (cleaned) destination that `match`es.
template <typename Match> bool any_destination(const cdi::OciSpec &doc, Match match) {
  auto mounts = doc.find("mounts");
  if (mounts == doc.end() || !mounts->is_array())
    return false;
  for (const auto &m : *mounts)
    if (m.is_object() && m.contains("destination") && m["destination"].is_string() &&
        match(fs::clean_path(m["destination"].get<std::string>())))
      return true;
  return false;
}

cdi::OciSpec mount_json(const OciMount &m) {
  cdi::OciSpec j = {{"destination", m.destination}, {"type", m.type}, {"source", m.source}};
  j["options"] = m.options;
  return j;
}

} // namespace

std::optional<std::string> BundleSpec::mount_label() const { return nested_string(doc_, "linux", "mountLabel"); }
std::optional<std::string> BundleSpec::process_label() const { return nested_string(doc_, "process", "selinuxLabel"); }

std::vector<std::string> BundleSpec::cdi_device_names() const {
  std::vector<std::string> names;
  if (const auto *devs = linux_devices(doc_))
    for (std::size_t i = 0; i < devs->size(); ++i)
      if (names_cdi_device((*devs)[i], i))
        names.push_back((*devs)[i]["path"].get<std::string>());
  return names;
}

std::vector<cdi::DeviceNode> BundleSpec::device_nodes() const {
  std::vector<cdi::DeviceNode> nodes;
  const auto *devs = linux_devices(doc_);
  for (std::size_t i = 0; devs && i < devs->size(); ++i) {
    const auto &entry = (*devs)[i];
    const std::string at = "linux.devices[" + std::to_string(i) + "]";
    const auto path = string_member(entry, "path", at + ".path");
    if (!path || path->empty() || (*path)[0] != '/')
      continue;
    cdi::DeviceNode node;
    node.path = *path;
    node.type = string_member(entry, "type", at + ".type").value_or("");
    for (auto [key, number] : {std::pair{"major", &node.major}, std::pair{"minor", &node.minor}}) {
      const auto it = entry.find(key);
      if (it == entry.end())
        continue;
      if (!it->is_number_integer())
        throw Error(at + "." + key + " is not an integer");
      *number = it->get<int64_t>();
    }
    nodes.push_back(std::move(node));
  }
  return nodes;
}

bool BundleSpec::mounts_at(std::string_view destination) const {
  return any_destination(doc_, [&](const std::string &d) { return d == destination; });
}

bool BundleSpec::mounts_under(std::string_view dir) const {
  return any_destination(doc_, [&](const std::string &d) { return is_under(d, dir); });
}

void BundleSpec::apply(const cdi::ContainerEdits &edits, const cdi::HostNodeLookup &lookup) {
  if (auto *devs = linux_devices(doc_)) {
    for (std::size_t i = 0; i < devs->size();) {
      if (names_cdi_device((*devs)[i], i))
        devs->erase(devs->begin() + static_cast<std::ptrdiff_t>(i));
      else
        ++i;
    }
  }
  cdi::apply_edits(doc_, edits, lookup);
}

void BundleSpec::add_mount(const OciMount &m) {
  auto &mounts = doc_["mounts"];
  if (!mounts.is_array())
    mounts = cdi::OciSpec::array();
  mounts.push_back(mount_json(m));
}

std::size_t BundleSpec::remove_mounts(const std::vector<std::pair<std::string, std::string>> &pairs) {
  auto mounts = doc_.find("mounts");
  if (mounts == doc_.end() || !mounts->is_array())
    return 0;
  const auto before = mounts->size();
  auto &list = *mounts;
  list.erase(std::remove_if(list.begin(), list.end(),
                            [&](const cdi::OciSpec &m) {
                              const auto destination = string_member(m, "destination", "mounts[].destination");
                              const auto source = string_member(m, "source", "mounts[].source");
                              return destination && source &&
                                     std::find(pairs.begin(), pairs.end(), std::pair{*destination, *source}) !=
                                         pairs.end();
                            }),
             list.end());
  return before - list.size();
}

void BundleSpec::add_mounts_first(const std::vector<OciMount> &added) {
  auto &mounts = doc_["mounts"];
  if (!mounts.is_array())
    mounts = cdi::OciSpec::array();
  auto at = mounts.begin();
  for (const auto &m : added)
    at = std::next(mounts.insert(at, mount_json(m)));
}

void BundleSpec::add_hook(const std::string &stage, const OciHook &hook) {
  auto &hooks = doc_["hooks"];
  if (!hooks.is_object())
    hooks = cdi::OciSpec::object();
  auto &list = hooks[stage];
  if (!list.is_array())
    list = cdi::OciSpec::array();
  const cdi::OciSpec args = hook.args;
  for (const auto &h : list)
    if (string_member(h, "path", "hooks." + stage + "[].path") == hook.path && h.contains("args") && h["args"] == args)
      return;
  cdi::OciSpec j = {{"path", hook.path}, {"args", args}, {"env", hook.env}};
  if (hook.timeout > 0)
    j["timeout"] = hook.timeout;
  list.push_back(std::move(j));
}

std::string BundleSpec::text() const {
  try {
    if (seccomp_placeholder_.empty())
      return doc_.dump();
    const auto linux_ = doc_.find("linux");
    const bool kept = linux_ != doc_.end() && linux_->is_object() && linux_->contains("seccomp") &&
                      (*linux_)["seccomp"].is_string() &&
                      (*linux_)["seccomp"].get_ref<const std::string &>() == seccomp_placeholder_;
    if (!kept) // an edit set linux.seccomp: its value
      return doc_.dump();
    std::string text = doc_.dump();
    const std::string quoted = '"' + seccomp_placeholder_ + '"';
    const auto at = text.find(quoted);
    if (at != std::string::npos && text.find(quoted, at + 1) == std::string::npos)
      return text.replace(at, quoted.size(), seccomp_text_);
    // The placeholder elsewhere too (its 128 random bits guessed): as a tree.
    cdi::OciSpec doc = doc_;
    doc["linux"]["seccomp"] = parse_json<cdi::OciSpec>(seccomp_text_);
    return doc.dump();
  } catch (const nlohmann::json::exception &e) {
    throw Error(std::string("cannot serialise the edited OCI spec: ") + e.what());
  }
}

void BundleSpec::save(const std::string &path) const {
  const std::string text = this->text();
  with_context("OCI spec " + quote(path),
               [&] { fs::write_file_atomic(path, text, static_cast<mode_t>(-1), fs::Durability::atomic); });
}

} // namespace gpuslice::create
