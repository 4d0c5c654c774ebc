#include "gpuslice/shim/bundle_spec.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/json_text.hpp"

namespace gpuslice::shim {

namespace {
// runc's own config.json of a busybox container is 3 KiB, a Kubernetes
// pod's 20 KiB; a bundle cannot make a runtime on the node read more.
constexpr std::size_t kMaxBundleConfigSize = 16u << 20;
} // namespace

BundleSpec BundleSpec::load(const std::string &path) {
  return with_context("OCI spec " + quote(path), [&] { return parse(fs::read_file(path, kMaxBundleConfigSize), path); });
}

BundleSpec BundleSpec::parse(const std::string &text, const std::string &path) {
  return with_context("OCI spec " + quote(path), [&] {
    if (text.size() > kMaxBundleConfigSize)
      throw Error("larger than " + std::to_string(kMaxBundleConfigSize) + " bytes");
    auto doc = parse_json<cdi::OciSpec>(text);
    if (!doc.is_object())
      throw Error("not a JSON object");
    return BundleSpec(std::move(doc));
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

std::vector<std::string> BundleSpec::process_env() const { return shim::process_env(doc_); }

std::vector<std::string> process_env(const cdi::OciSpec &doc) {
  std::vector<std::string> out;
  auto p = doc.find("process");
  if (p == doc.end() || !p->is_object())
    return out;
  auto env = p->find("env");
  if (env == p->end() || !env->is_array())
    return out;
  for (const auto &e : *env)
    if (e.is_string())
      out.push_back(e.get<std::string>());
  return out;
}

void BundleSpec::save(const std::string &path) const {
  std::string text;
  try {
    text = doc_.dump();
  } catch (const nlohmann::json::exception &e) {
    throw Error(std::string("cannot serialise the edited OCI spec: ") + e.what());
  }
  with_context("OCI spec " + quote(path),
               [&] { fs::write_file_atomic(path, text, static_cast<mode_t>(-1), fs::Durability::atomic); });
}

} // namespace gpuslice::shim
