#include "gpuslice/cdi/registry.hpp"

#include "gpuslice/cdi/parse.hpp"
#include "gpuslice/cdi/spec_cache.hpp"
#include "gpuslice/cdi/validate.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <map>
#include <tuple>

namespace gpuslice::cdi {

namespace {

bool is_spec_name(std::string_view name) {
  auto ends = [&](std::string_view suffix) {
    return name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix;
  };
  return ends(".json") || ends(".yaml");
}

} // namespace

std::vector<std::string> list_spec_files(const std::string &dir, std::vector<SpecError> *errors) {
  std::vector<std::string> names;
  DIR *d = ::opendir(dir.c_str());
  if (!d) {
    if (errno != ENOENT && errors)
      errors->push_back({dir, system_error("cannot read spec directory").message()});
    return names;
  }
  while (const dirent *e = ::readdir(d)) {
    if (!is_spec_name(e->d_name))
      continue;
    if (e->d_type == DT_DIR)
      continue;
    names.emplace_back(e->d_name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

// What a refresh compares when inotify is not available.
using Stamp = std::tuple<std::string, ino_t, int64_t, int64_t, off_t>;

std::vector<Stamp> take_stamps(const std::vector<std::string> &dirs) {
  std::vector<Stamp> out;
  for (const auto &dir : dirs) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) {
      out.emplace_back(dir, 0, 0, 0, -1);
      continue;
    }
    out.emplace_back(dir, st.st_ino, st.st_mtim.tv_sec, st.st_mtim.tv_nsec, st.st_size);
    for (const auto &name : list_spec_files(dir, nullptr)) {
      const std::string path = dir + "/" + name;
      struct stat fst {};
      if (::stat(path.c_str(), &fst) != 0)
        fst = {};
      out.emplace_back(path, fst.st_ino, fst.st_mtim.tv_sec, fst.st_mtim.tv_nsec, fst.st_size);
    }
  }
  return out;
}

} // namespace

// Change detection: one inotify descriptor watching every existing spec dir;
// dirs that do not exist yet are stat()ed on each refresh. Where inotify is
// not available (no instances left), a stamp of every spec file is compared.
struct Registry::Watch {
  bool force_stamps = false;
  bool disabled = false;
  int fd = -1;
  std::vector<std::string> missing;
  bool use_stamps = false;
  std::vector<Stamp> stamps;

  ~Watch() { close_fd(); }
  void close_fd() {
    if (fd >= 0)
      ::close(fd);
    fd = -1;
  }

  void arm(const std::vector<std::string> &dirs) {
    if (disabled)
      return;
    close_fd();
    missing.clear();
    use_stamps = false;
    fd = force_stamps ? -1 : ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd >= 0) {
      constexpr uint32_t mask = IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO |
                                IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_EXCL_UNLINK;
      for (const auto &dir : dirs) {
        if (::inotify_add_watch(fd, dir.c_str(), mask) >= 0)
          continue;
        if (errno == ENOENT || errno == ENOTDIR) {
          missing.push_back(dir);
          continue;
        }
        use_stamps = true;
        break;
      }
    } else {
      use_stamps = true;
    }
    if (use_stamps) {
      close_fd();
      stamps = take_stamps(dirs);
    }
  }

  bool changed(const std::vector<std::string> &dirs) {
    if (disabled)
      return false;
    if (use_stamps)
      return take_stamps(dirs) != stamps;
    bool any = false;
    alignas(inotify_event) char buf[4096];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n > 0) {
        any = true;
        continue;
      }
      if (n < 0 && errno == EINTR)
        continue;
      break; // EAGAIN: drained
    }
    for (const auto &dir : missing) {
      struct stat st {};
      if (::stat(dir.c_str(), &st) == 0)
        return true;
    }
    return any;
  }
};

Registry::Registry(std::vector<std::string> spec_dirs, ChangeDetection detection)
    : dirs_(std::move(spec_dirs)), watch_(std::make_unique<Watch>()) {
  watch_->force_stamps = detection == ChangeDetection::stamps;
  watch_->disabled = detection == ChangeDetection::none;
}

bool Registry::uses_inotify() const { return loaded_ && !watch_->disabled && !watch_->use_stamps; }

Registry::~Registry() = default;

bool Registry::changed() { return !loaded_ || watch_->changed(dirs_); }

bool Registry::refresh() {
  if (!changed())
    return false;
  reload();
  return true;
}

void Registry::reload() { load(nullptr); }

void Registry::reload(const std::set<std::string> &kinds) { load(&kinds); }

void Registry::load(const std::set<std::string> *kinds) {
  // Arm first: a change made while we read is seen by the next refresh.
  watch_->arm(dirs_);
  specs_.clear();
  errors_.clear();
  devices_.clear();
  loaded_ = true;

  struct Slot {
    std::string path;
    int priority;
    std::unique_ptr<Spec> spec;
    std::vector<SpecError> errors;
  };
  std::vector<Slot> slots;
  for (std::size_t prio = 0; prio < dirs_.size(); ++prio)
    for (const auto &name : list_spec_files(dirs_[prio], &errors_))
      slots.push_back({dirs_[prio] + "/" + name, static_cast<int>(prio), nullptr, {}});

  auto load_slot = [kinds, cache = cache_](Slot &slot) {
    try {
      const std::string text = fs::read_file(slot.path, kMaxSpecSize);
      if (kinds) {
        const auto kind = plain_spec_kind(text);
        if (kind && !kinds->count(*kind))
          return;
      }
      if (auto cached = cache ? cache->find(text) : std::nullopt) { // parsed and valid before
        slot.spec = std::make_unique<Spec>(std::move(*cached));
        slot.spec->path = slot.path;
        slot.spec->priority = slot.priority;
        return;
      }
      auto spec = std::make_unique<Spec>(parse_spec(text));
      auto problems = validate_spec(*spec);
      for (auto &p : problems)
        slot.errors.push_back({slot.path, std::move(p)});
      if (!problems.empty())
        return;
      if (cache)
        cache->store(text, *spec);
      spec->path = slot.path;
      spec->priority = slot.priority;
      slot.spec = std::move(spec);
    } catch (const Error &e) {
      slot.errors.push_back({slot.path, e.message()});
    } catch (const std::exception &e) {
      slot.errors.push_back({slot.path, e.what()});
    }
  };
  // Parsing dominates a node-sized load (hundreds of specs); spread it over
  // the cores. A container start reads a handful of specs: no threads then,
  // nor a read of /sys for the number of CPUs.
  constexpr std::size_t kFilesPerThread = 64;
  const std::size_t threads =
      slots.size() < 2 * kFilesPerThread
          ? 1
          : std::min<std::size_t>(std::max(1u, std::thread::hardware_concurrency()), slots.size() / kFilesPerThread);
  if (threads <= 1) {
    for (auto &slot : slots)
      load_slot(slot);
  } else {
    std::atomic<std::size_t> next{0};
    auto worker = [&] {
      for (std::size_t i; (i = next.fetch_add(1)) < slots.size();)
        load_slot(slots[i]);
    };
    std::vector<std::thread> pool;
    for (std::size_t t = 1; t < threads; ++t)
      pool.emplace_back(worker);
    worker();
    for (auto &t : pool)
      t.join();
  }
  for (auto &slot : slots) {
    for (auto &e : slot.errors)
      errors_.push_back(std::move(e));
    if (slot.spec)
      specs_.push_back(std::move(slot.spec));
  }

  // Resolve names: a higher priority wins; a tie makes the device unusable.
  std::map<std::string, std::vector<const Spec *>> conflicts;
  for (const auto &spec : specs_) {
    for (const auto &dev : spec->devices) {
      std::string qn = spec->kind + "=" + dev.name;
      auto it = devices_.find(qn);
      if (it == devices_.end()) {
        devices_.emplace(qn, ResolvedDevice{qn, spec.get(), &dev});
      } else if (spec->priority > it->second.spec->priority) {
        conflicts.erase(qn);
        it->second = ResolvedDevice{qn, spec.get(), &dev};
      } else {
        auto &c = conflicts[qn];
        if (c.empty())
          c.push_back(it->second.spec);
        c.push_back(spec.get());
      }
    }
  }
  for (const auto &[qn, specs] : conflicts) {
    devices_.erase(qn);
    std::string files;
    for (const Spec *s : specs)
      files += (files.empty() ? "" : ", ") + quote(s->path);
    for (const Spec *s : specs)
      errors_.push_back({s->path, "conflicting device " + quote(qn) + " defined in " + files + " (same priority): device removed"});
  }
}

const ResolvedDevice *Registry::find(std::string_view qualified_name) const {
  auto it = devices_.find(std::string(qualified_name));
  return it == devices_.end() ? nullptr : &it->second;
}

std::vector<std::string> Registry::device_names() const {
  std::vector<std::string> names;
  names.reserve(devices_.size());
  for (const auto &[qn, dev] : devices_)
    names.push_back(qn);
  std::sort(names.begin(), names.end());
  return names;
}

} // namespace gpuslice::cdi
