// Plans and applies `gpuslice configure containerd` (see containerd_config.hpp).
//
// The part that decides correctness is the emulation of containerd's own
// config loading (load_chain): containerd loads the main file, then its
// `imports` breadth-first (globs sorted, relative paths against the importing
// file's directory, each file once), and before 2.1 each file's
// `plugins.<name>` table REPLACES the one loaded before it. So the drop-in
// copies the CRI table that would be in effect just before it, adds the
// handler, and must be the last file that sets that table.
#include "containerd_config.hpp"

#include "toml_text_edit.hpp"

#include "gpuslice/common/config.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"

#include <fnmatch.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <set>
#include <sstream>

namespace gpuslice::containerd {

// Version of an already parsed file (defined below, next to config_version_of).
int version_of_table(const toml::table &t, const std::string &source_name);

namespace {

constexpr std::string_view kDropInHeader =
    "# Written by `gpuslice configure containerd`; rerun it rather than editing this file,\n"
    "# and `gpuslice configure containerd --remove` to take it out.\n";
constexpr std::string_view kDropInExplanation =
    "# It carries a copy of the whole CRI plugin table in effect before it, plus the\n"
    "# gpuslice handler: containerd before 2.1 replaces a plugin's table by key when it\n"
    "# merges imported files. After changing CRI settings in the main config, rerun\n"
    "# `gpuslice configure containerd` to refresh this copy.\n";
constexpr std::string_view kRuncV2 = "io.containerd.runc.v2";
constexpr int kNewFileVersion = 2; // understood by containerd 1.6 to 2.x (2.x migrates it)

bool path_exists(const std::string &path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0)
    return true;
  if (errno != ENOENT && errno != ENOTDIR)
    throw system_error("cannot stat " + quote(path));
  return false;
}

mode_t mode_of(const std::string &path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0644;
}

std::optional<std::string> read_if_exists(const std::string &path) {
  if (!path_exists(path))
    return std::nullopt;
  return fs::read_file(path);
}

bool has_glob(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

// A file of containerd's load order; `table` is empty for the gpuslice drop-in
// itself, which is being (re)computed and so must not count.
struct LoadedFile {
  std::string path;
  std::optional<toml::table> table;
};

// The paths one file's `imports` resolve to, the way containerd resolves them.
// A glob that would match `ours` counts it even before it exists.
std::vector<std::string> resolve_imports(const std::string &importer, const toml::table &table,
                                         const std::string &ours) {
  std::vector<std::string> out;
  const toml::node *node = table.get("imports");
  if (!node)
    return out;
  const toml::array *imports = node->as_array();
  if (!imports)
    throw Error("\"imports\" in " + quote(importer) + " is not an array");
  for (const toml::node &entry : *imports) {
    auto value = entry.value<std::string>();
    if (!value)
      throw Error("\"imports\" in " + quote(importer) + " has an entry that is not a string");
    std::string path =
        fs::is_absolute(*value) ? fs::clean_path(*value) : fs::clean_path(fs::dirname(importer) + "/" + *value);
    if (!has_glob(path)) {
      out.push_back(path);
      continue;
    }
    std::vector<std::string> matches;
    glob_t g{};
    if (::glob(path.c_str(), 0, nullptr, &g) == 0)
      for (std::size_t i = 0; i < g.gl_pathc; ++i)
        matches.emplace_back(g.gl_pathv[i]);
    ::globfree(&g);
    if (::fnmatch(path.c_str(), ours.c_str(), FNM_PATHNAME) == 0 &&
        std::find(matches.begin(), matches.end(), ours) == matches.end())
      matches.push_back(ours);
    std::sort(matches.begin(), matches.end());
    out.insert(out.end(), matches.begin(), matches.end());
  }
  return out;
}

// True when an entry of the main file's imports already loads `ours`.
bool imports_cover(const std::string &main_path, const toml::table &main_table, const std::string &ours) {
  auto resolved = resolve_imports(main_path, main_table, ours);
  return std::find(resolved.begin(), resolved.end(), ours) != resolved.end();
}

// containerd's load order, starting at the main file (already parsed).
std::vector<LoadedFile> load_chain(const std::string &main_path, const toml::table &main_table, const std::string &ours,
                                   bool ours_appended_to_main) {
  std::vector<LoadedFile> chain;
  std::vector<std::string> pending{main_path};
  std::set<std::string> loaded;
  for (std::size_t next = 0; next < pending.size(); ++next) {
    std::string path = pending[next];
    if (!loaded.insert(path).second)
      continue;
    if (path == ours) {
      chain.push_back({path, std::nullopt});
      continue;
    }
    toml::table table = path == main_path ? main_table : with_context("imported config " + quote(path), [&] {
      return text::parse(fs::read_file(path), path);
    });
    auto imports = resolve_imports(path, table, ours);
    if (path == main_path && ours_appended_to_main)
      imports.push_back(ours);
    pending.insert(pending.end(), imports.begin(), imports.end());
    chain.push_back({path, std::move(table)});
  }
  return chain;
}

const toml::table *plugin_table(const toml::table &file, const std::string &plugin_key) {
  const toml::table *plugins = file["plugins"].as_table();
  return plugins ? (*plugins)[plugin_key].as_table() : nullptr;
}

toml::table &ensure_table(toml::table &parent, std::string_view key) {
  if (!parent.contains(key) || !parent.get(key)->is_table())
    parent.insert_or_assign(key, toml::table{});
  return *parent.get(key)->as_table();
}

toml::array annotation_array() {
  toml::array a;
  for (const auto &p : handler_annotation_patterns())
    a.push_back(p);
  return a;
}

// The runtime handler whose options the gpuslice handler copies: `runc`, or
// else the default runtime when it is a runc v2 handler.
const toml::table *runc_like_handler(const toml::table *cri) {
  if (!cri)
    return nullptr;
  const toml::table *runtimes = (*cri)["containerd"]["runtimes"].as_table();
  if (!runtimes)
    return nullptr;
  if (auto *runc = (*runtimes)["runc"].as_table())
    return runc;
  auto default_name = (*cri)["containerd"]["default_runtime_name"].value<std::string>();
  if (default_name)
    if (auto *handler = (*runtimes)[*default_name].as_table())
      if ((*handler)["runtime_type"].value_or(std::string(kRuncV2)) == kRuncV2)
        return handler;
  return nullptr;
}

// The gpuslice handler's table, options copied from the runc-like handler.
toml::table handler_table(const toml::table *cri, const ConfigureOptions &options, std::vector<std::string> &notes) {
  toml::table handler;
  handler.insert("runtime_type", std::string(kRuncV2));
  // Container annotations only: DRA drivers and device plugins set those
  // (through kubelet), pod authors cannot. A pod's own metadata annotations
  // are the author's; passing them (pod_annotations) would let any pod ask
  // for any CDI device. Rewriting the handler also drops the pod_annotations
  // entry that versions before 0.2 wrote.
  handler.insert("container_annotations", annotation_array());
  toml::table runtime_options;
  if (const toml::table *source = runc_like_handler(cri))
    if (const toml::table *source_options = (*source)["options"].as_table()) {
      runtime_options = *source_options;
      if (auto runc_binary = runtime_options["BinaryName"].value<std::string>())
        notes.push_back("the runc handler runs " + quote(*runc_binary) +
                        ": list it in `runtimes` of " + std::string(kDefaultConfigPath) + " so that gpuslice-runtime runs it too");
      runtime_options.erase("BinaryName");
      if (!runtime_options.empty()) {
        std::string names;
        for (auto &&[key, value] : runtime_options)
          names += (names.empty() ? "" : ", ") + std::string(key.str());
        notes.push_back("copied runc options to the " + options.handler_name + " handler: " + names);
      }
    }
  runtime_options.insert_or_assign("BinaryName", options.runtime_path);
  handler.insert("options", std::move(runtime_options));
  return handler;
}

// The CRI table with the handler (and, where the config had no runtimes at
// all, containerd's default runc handler, which any `runtimes` table would
// otherwise hide).
toml::table cri_with_handler(const toml::table *effective, const ConfigureOptions &options,
                             std::vector<std::string> &notes) {
  toml::table cri = effective ? *effective : toml::table{};
  toml::table &containerd_table = ensure_table(cri, "containerd");
  bool had_runtimes = containerd_table["runtimes"].is_table();
  toml::table &runtimes = ensure_table(containerd_table, "runtimes");
  if (!had_runtimes) {
    toml::table runc;
    runc.insert("runtime_type", std::string(kRuncV2));
    runtimes.insert("runc", std::move(runc));
  } else if (runtimes.contains(options.handler_name)) {
    notes.push_back("replaced the existing " + quote(options.handler_name) + " handler's settings with gpuslice's");
  }
  runtimes.insert_or_assign(options.handler_name, handler_table(effective, options, notes));
  if (options.set_as_default)
    containerd_table.insert_or_assign("default_runtime_name", options.handler_name);
  return cri;
}

std::string to_toml(const toml::table &t) {
  std::ostringstream out;
  out << toml::toml_formatter(t);
  std::string s = out.str();
  if (!s.empty() && s.back() != '\n')
    s += '\n';
  return s;
}

void validate_options(const ConfigureOptions &o) {
  if (o.handler_name.empty() || !std::all_of(o.handler_name.begin(), o.handler_name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
      }))
    throw Error("handler name " + quote(o.handler_name) + " must be letters, digits, '-' or '_'");
  if (!fs::is_absolute(o.runtime_path))
    throw Error("runtime path " + quote(o.runtime_path) + " must be absolute");
  text::quote_plain(o.runtime_path);
}

// Docker's containerd config disables the CRI plugin: a handler there would
// never be used, which is worth saying rather than failing silently later.
void note_if_cri_disabled(Plan &plan, const toml::table &file, const std::string &path, const std::string &plugin_key) {
  const toml::array *disabled = file["disabled_plugins"].as_array();
  if (!disabled)
    return;
  for (const toml::node &n : *disabled) {
    auto name = n.value<std::string>();
    if (name && (*name == "cri" || *name == "io.containerd.grpc.v1.cri" || *name == plugin_key))
      plan.notes.push_back("the CRI plugin is disabled in " + quote(path) + " (disabled_plugins = " + quote(*name) +
                           "): Kubernetes pods cannot use the handler until it is enabled");
  }
}

std::string backup_path_of(const std::string &config_path) { return config_path + ".gpuslice.bak"; }

void add_backup_if_needed(Plan &plan, const std::string &config_path, const std::string &original) {
  std::string backup = backup_path_of(config_path);
  if (path_exists(backup))
    return;
  plan.changes.push_back({FileChange::Kind::write, backup, original, mode_of(config_path),
                          "back up " + quote(config_path) + " as " + quote(backup)});
}

// containerd's own CDI is left as it is; say what it means here. Its default:
// off in 1.7 (config version 2), on from 2.0 (version 3; a version 2 file on
// containerd 2 is migrated with the 2.x default, so say both).
std::string enable_cdi_note(const toml::table *cri, int version) {
  const std::optional<bool> set = cri ? (*cri)["enable_cdi"].value<bool>() : std::nullopt;
  const std::string state = set ? (*set ? "on (enable_cdi = true)" : "off (enable_cdi = false)")
                            : version == 3 ? "on (containerd 2's default)"
                                           : "off on containerd 1.7, on on containerd 2 (the default of each)";
  return "containerd's own CDI is " + state +
         ", left as it is: when on, containerd applies the CDI edits and gpuslice-runtime adds only what is "
         "missing, then its limits (docs/configure-containerd.md)";
}

// Version 2 and 3: drop-in plus an imports entry.
// `current` is the main file's text, empty when there is none (or it is one
// gpuslice created, whose text is then `created_earlier`).
void plan_with_drop_in(Plan &plan, const ConfigureOptions &o, const std::string &drop_in, int version,
                       const std::optional<std::string> &current, const std::string &base,
                       const std::optional<std::string> &created_earlier) {
  toml::table base_table = text::parse(base, o.config_path);
  bool covered = current && imports_cover(o.config_path, base_table, drop_in);
  std::string new_main;
  if (!current)
    new_main = text::insert_top_level_block(
        "", toml::table{},
        "version = " + std::to_string(kNewFileVersion) + "\nimports = [" + text::quote_plain(drop_in) + "]\n", true);
  else
    new_main = covered ? base : text::add_import(base, base_table, drop_in);

  std::string plugin_key = runtime_plugin_key(version);
  auto chain = load_chain(o.config_path, base_table, drop_in, current && !covered);
  const toml::table *effective = nullptr;
  std::string effective_from;
  bool after_ours = false;
  for (const LoadedFile &f : chain) {
    if (!f.table) {
      after_ours = true;
      continue;
    }
    note_if_cri_disabled(plan, *f.table, f.path, plugin_key);
    if (f.path != o.config_path && version_of_table(*f.table, f.path) != version)
      plan.notes.push_back("imported config " + quote(f.path) + " has another config version than " +
                           quote(o.config_path));
    const toml::table *cri = plugin_table(*f.table, plugin_key);
    if (!cri)
      continue;
    if (after_ours)
      throw Error(quote(f.path) + " is imported after " + quote(drop_in) + " and sets the plugins." +
                  quote(plugin_key) +
                  " table, which would replace gpuslice's (containerd before 2.1): pass a --drop-in "
                  "path that loads last");
    effective = cri;
    effective_from = f.path;
  }

  toml::table cri = cri_with_handler(effective, o, plan.notes);
  toml::table plugins;
  plugins.insert(plugin_key, std::move(cri));
  toml::table drop_in_table;
  drop_in_table.insert("version", version);
  drop_in_table.insert("plugins", std::move(plugins));
  std::string drop_in_text = std::string(kDropInHeader) + std::string(kDropInExplanation) +
                             (effective ? "# CRI settings copied from " + effective_from + ".\n" : std::string()) +
                             "\n" + to_toml(drop_in_table);

  auto existing_drop_in = read_if_exists(drop_in);
  if (existing_drop_in && !existing_drop_in->starts_with(kDropInHeader))
    throw Error("refusing to overwrite " + quote(drop_in) +
                ": gpuslice did not write it; pass --drop-in with another path");
  if (!existing_drop_in || *existing_drop_in != drop_in_text)
    plan.changes.push_back({FileChange::Kind::write, drop_in, drop_in_text, 0644,
                            "write drop-in " + quote(drop_in) + " with the " + quote(o.handler_name) + " handler"});
  if (!current) {
    if (created_earlier != new_main)
      plan.changes.push_back({FileChange::Kind::write, o.config_path, new_main, 0644,
                              "create " + quote(o.config_path) + " (version " + std::to_string(kNewFileVersion) +
                                  ", imports the drop-in); containerd's defaults apply otherwise"});
  } else if (new_main != *current) {
    add_backup_if_needed(plan, o.config_path, *current);
    plan.changes.push_back({FileChange::Kind::write, o.config_path, new_main, static_cast<mode_t>(-1),
                            covered ? "take gpuslice's edits out of " + quote(o.config_path)
                                    : "add " + quote(drop_in) + " to imports in " + quote(o.config_path)});
  }
  if (effective)
    plan.notes.push_back("the drop-in carries a copy of the CRI settings from " + quote(effective_from) +
                         ": after changing them there, rerun `gpuslice configure containerd`");
  plan.notes.push_back(enable_cdi_note(effective, version));
}

// Sets plugins.cri.containerd.default_runtime_name in a version 1 file that
// already has the appended handler block: replaces an existing value, or tries
// a line after the [plugins.cri.containerd] header, or a header of its own in
// the block; the first result that parses and shows the value wins.
std::string with_default_runtime_v1(const ConfigureOptions &o, const std::string &base, const std::string &with_block,
                                    const std::string &block_body) {
  std::string value = text::quote_plain(o.handler_name);
  toml::table parsed = text::parse(with_block, o.config_path);
  toml::table *containerd_table = parsed["plugins"]["cri"]["containerd"].as_table();
  auto it = containerd_table->find("default_runtime_name");
  if (it != containerd_table->end())
    return text::replace_value(with_block, it->second, it->first.source().begin.line, "default_runtime_name", value);
  std::vector<std::string> candidates{
      text::insert_block_after_line(with_block, containerd_table->source().begin.line,
                                    "default_runtime_name = " + value + "\n"),
      text::append_block(base, "[plugins.cri.containerd]\n  default_runtime_name = " + value + "\n\n" + block_body)};
  for (const std::string &candidate : candidates) {
    try {
      toml::table check = text::parse(candidate, o.config_path);
      if (check["plugins"]["cri"]["containerd"]["default_runtime_name"].value<std::string>() == o.handler_name &&
          check["plugins"]["cri"]["containerd"]["runtimes"][o.handler_name].is_table())
        return candidate;
    } catch (const Error &) {
    }
  }
  throw Error("cannot set default_runtime_name in " + quote(o.config_path) +
              " (version 1): add `default_runtime_name = " + value + "` to [plugins.cri.containerd] by hand");
}

// Version 1: containerd 1.x's `cri` plugin; a marked block in the main file.
void plan_in_main_file(Plan &plan, const ConfigureOptions &o, const std::string &current, const std::string &base) {
  toml::table base_table = text::parse(base, o.config_path);
  note_if_cri_disabled(plan, base_table, o.config_path, "cri");
  const toml::table *cri = plugin_table(base_table, "cri");
  if (cri && (*cri)["containerd"]["runtimes"][o.handler_name])
    throw Error("handler " + quote(o.handler_name) + " is already defined in " + quote(o.config_path) +
                " and gpuslice did not write it: remove it or pass another --handler-name");
  ConfigureOptions without_default = o;
  without_default.set_as_default = false;
  toml::table new_cri = cri_with_handler(cri, without_default, plan.notes);
  // Only the runtimes go into the appended block: they are new tables there.
  toml::table runtimes_only;
  ensure_table(runtimes_only, "containerd").insert("runtimes", *new_cri["containerd"]["runtimes"].as_table());
  toml::table &existing_runtimes = *ensure_table(runtimes_only, "containerd")["runtimes"].as_table();
  if (cri && (*cri)["containerd"]["runtimes"].is_table())
    for (auto &&[key, value] : *(*cri)["containerd"]["runtimes"].as_table())
      existing_runtimes.erase(key.str());
  toml::table block_table;
  ensure_table(ensure_table(block_table, "plugins"), "cri") = std::move(runtimes_only);
  std::string new_main = text::append_block(base, to_toml(block_table));

  if (o.set_as_default)
    new_main = with_default_runtime_v1(o, base, new_main, to_toml(block_table));

  toml::table check =
      with_context("gpuslice's edit of " + quote(o.config_path) + " is not valid TOML, please report it",
                   [&] { return text::parse(new_main, o.config_path); });
  if (check["plugins"]["cri"]["containerd"]["runtimes"][o.handler_name]["options"]["BinaryName"].value<std::string>() !=
      o.runtime_path)
    throw Error("cannot add the handler to " + quote(o.config_path) + ": the edited file does not show it");
  if (new_main != current) {
    add_backup_if_needed(plan, o.config_path, current);
    plan.changes.push_back(
        {FileChange::Kind::write, o.config_path, new_main, static_cast<mode_t>(-1),
         "add the " + quote(o.handler_name) + " handler to " + quote(o.config_path) + " (version 1)"});
  }
}

// One change; directories are not created except the drop-in's (conf.d).
void apply_one(const FileChange &c) {
  if (c.kind == FileChange::Kind::remove) {
    if (::unlink(c.path.c_str()) != 0 && errno != ENOENT)
      throw system_error("cannot remove " + quote(c.path));
    return;
  }
  // A main config that is a symlink (to a file managed elsewhere) stays a
  // symlink: its target is what gets replaced.
  std::string target = c.path;
  struct stat st {};
  if (::lstat(c.path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    char *resolved = ::realpath(c.path.c_str(), nullptr);
    if (!resolved)
      throw system_error("cannot resolve the symlink " + quote(c.path));
    target = resolved;
    ::free(resolved);
  }
  std::string dir = fs::dirname(target);
  if (!path_exists(dir)) {
    // The drop-in directory (conf.d) is the only one gpuslice creates.
    std::string parent = fs::dirname(dir);
    if (!path_exists(parent))
      throw Error("cannot write " + quote(c.path) + ": " + quote(parent) + " does not exist");
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
      throw system_error("cannot create directory " + quote(dir));
  }
  fs::write_file_atomic(target, c.content, c.mode);
}

ConfigureOptions normalised(const ConfigureOptions &options) {
  ConfigureOptions o = options;
  o.config_path = fs::absolute(o.config_path);
  o.drop_in_path = o.drop_in_path.empty() ? default_drop_in_path(o.config_path) : fs::absolute(o.drop_in_path);
  validate_options(o);
  return o;
}

} // namespace

const std::vector<std::string> &handler_annotation_patterns() {
  static const std::vector<std::string> patterns{"cdi.k8s.io/*", "gpuslice.io/*"};
  return patterns;
}

std::string default_drop_in_path(const std::string &config_path) {
  return fs::dirname(config_path) + "/conf.d/99-gpuslice.toml";
}

int config_version_of(const std::string &text_, const std::string &source_name) {
  return version_of_table(text::parse(text_, source_name), source_name);
}

int version_of_table(const toml::table &t, const std::string &source_name) {
  const toml::node *v = t.get("version");
  if (!v)
    return 1;
  auto n = v->value<int64_t>();
  if (!n || *n < 1 || *n > 3)
    throw Error("config " + quote(source_name) + " has version " + (n ? std::to_string(*n) : "of the wrong type") +
                "; gpuslice knows containerd config versions 1, 2 and 3");
  return static_cast<int>(*n);
}

std::string runtime_plugin_key(int version) {
  switch (version) {
  case 1:
    return "cri";
  case 2:
    return "io.containerd.grpc.v1.cri";
  default:
    return "io.containerd.cri.v1.runtime";
  }
}

Plan plan_configure(const ConfigureOptions &options) {
  ConfigureOptions o = normalised(options);
  return with_context("cannot configure containerd", [&] {
    Plan plan;
    auto current = read_if_exists(o.config_path);
    bool created_by_gpuslice = false;
    std::string base =
        current ? text::strip_gpuslice_edits(*current, o.config_path, &created_by_gpuslice) : std::string();
    // A main file gpuslice created earlier counts as missing: it is rewritten the same way.
    bool missing = !current || (created_by_gpuslice && base.find_first_not_of(" \t\n") == std::string::npos);
    int version = missing ? kNewFileVersion : config_version_of(base, o.config_path);
    if (version == 1)
      plan_in_main_file(plan, o, *current, base);
    else
      plan_with_drop_in(plan, o, o.drop_in_path, version, missing ? std::nullopt : current, base,
                        missing ? current : std::nullopt);
    return plan;
  });
}

Plan plan_remove(const ConfigureOptions &options) {
  ConfigureOptions o = normalised(options);
  return with_context("cannot remove gpuslice from containerd's config", [&] {
    Plan plan;
    auto current = read_if_exists(o.config_path);
    std::optional<std::string> base;
    if (current) {
      bool created = false;
      base = text::strip_gpuslice_edits(*current, o.config_path, &created);
      if (created && base->find_first_not_of(" \t\n") == std::string::npos)
        plan.changes.push_back({FileChange::Kind::remove,
                                o.config_path,
                                {},
                                0,
                                "remove " + quote(o.config_path) + ", which gpuslice created"});
      else if (*base != *current)
        plan.changes.push_back({FileChange::Kind::write, o.config_path, *base, static_cast<mode_t>(-1),
                                "take gpuslice's edits out of " + quote(o.config_path)});
    }
    if (auto drop_in = read_if_exists(o.drop_in_path)) {
      if (drop_in->starts_with(kDropInHeader))
        plan.changes.push_back(
            {FileChange::Kind::remove, o.drop_in_path, {}, 0, "remove drop-in " + quote(o.drop_in_path)});
      else
        plan.notes.push_back("left " + quote(o.drop_in_path) + " alone: gpuslice did not write it");
    }
    std::string backup = backup_path_of(o.config_path);
    if (base)
      if (auto saved = read_if_exists(backup); saved && *saved == *base)
        plan.changes.push_back({FileChange::Kind::remove,
                                backup,
                                {},
                                0,
                                "remove the backup " + quote(backup) + ": the config is back to it"});
    return plan;
  });
}

void apply(const Plan &plan) {
  for (const FileChange &c : plan.changes)
    with_context("cannot " + c.summary, [&] { apply_one(c); });
}

std::string describe(const Plan &plan, bool dry_run) {
  std::string out;
  if (plan.changes.empty())
    out += "nothing to change\n";
  for (const FileChange &c : plan.changes) {
    out += (dry_run ? "would " : "") + c.summary + "\n";
    if (dry_run && c.kind == FileChange::Kind::write && !c.path.ends_with(".gpuslice.bak"))
      out += "----- " + c.path + " -----\n" + c.content + "----- end of " + c.path + " -----\n";
  }
  for (const std::string &n : plan.notes)
    out += "note: " + n + "\n";
  if (!plan.changes.empty() && !dry_run)
    out += "restart containerd to apply this (gpuslice does not restart it): systemctl restart containerd\n";
  return out;
}

} // namespace gpuslice::containerd
