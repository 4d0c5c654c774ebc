// SELinux contexts and labels (selinux/, docs/selinux.md): the syntax of
// what config.json and the config give, which label each of gpuslice's
// files gets (through a recording System: no SELinux kernel needed), and
// the real path (selinux/src/kernel.cpp) writing security.selinux on tmpfs and on the
// temp dir's filesystem (root: CAP_SYS_ADMIN sets security.* attributes;
// a kernel without SELinux stores them as given).
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fd.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/selinux/context.hpp"
#include "gpuslice/selinux/labeler.hpp"
#include "gpuslice/create/bundle_spec.hpp"
#include "gpuslice/create/modifiers.hpp"
#include "gpuslice/create/container_limits.hpp"
#include "gpuslice/create/create.hpp"
#include "gpuslice/state/container_dir.hpp"

#include "tempdir.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <thread>

using namespace gpuslice;
using namespace gpuslice::selinux;
using gpuslice::testing::TempDir;

TEST_CASE("selinux: contexts parse and print back canonically", "[selinux]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"system_u:object_r:container_file_t:s0:c1,c2", "system_u:object_r:container_file_t:s0:c1,c2"},
      {"system_u:object_r:container_file_t", "system_u:object_r:container_file_t"}, // no MLS/MCS
      {"system_u:object_r:container_file_t:s0", "system_u:object_r:container_file_t:s0"},
      {"system_u:object_r:container_file_t:s0:c1023,c0", "system_u:object_r:container_file_t:s0:c0,c1023"},
      {"u:r:t:s0:c3,c1,c2", "u:r:t:s0:c1.c3"},   // a run of three or more: a range
      {"u:r:t:s0:c0.c1", "u:r:t:s0:c0,c1"},      // two: a pair
      {"u:r:t:s0:c5.c7,c8,c20", "u:r:t:s0:c5.c8,c20"},
      {"unconfined_u:unconfined_r:unconfined_t:s0-s0:c0.c1023", "unconfined_u:unconfined_r:unconfined_t:s0-s0:c0.c1023"},
      {"u:r:t:s2:c5-s3:c5,c6", "u:r:t:s2:c5-s3:c5,c6"},
      {"u:r:t:s0-s15:c0.c1023", "u:r:t:s0-s15:c0.c1023"},
      {"system_u:system_r:spc_t.v2:s0", "system_u:system_r:spc_t.v2:s0"},
  };
  for (const auto &[text, canonical] : cases) {
    INFO(text);
    CHECK(to_string(parse_context(text)) == canonical);
  }
  const Context c = parse_context("system_u:object_r:container_file_t:s0:c1,c5.c9");
  CHECK(c.user == "system_u");
  CHECK(c.role == "object_r");
  CHECK(c.type == "container_file_t");
  REQUIRE(c.range);
  CHECK(c.range->low == Level{0, {{1, 1}, {5, 9}}});
  CHECK_FALSE(c.range->high);
  CHECK(dominates(parse_level("s0:c0.c1023"), parse_level("s0:c1,c2")));
  CHECK_FALSE(dominates(parse_level("s0:c1,c2"), parse_level("s0:c1,c3")));
  CHECK_FALSE(dominates(parse_level("s0:c1"), parse_level("s1")));
}

TEST_CASE("selinux: malformed contexts name the field that is wrong", "[selinux]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "it is empty"},
      {"system_u", "has no role"},
      {"system_u:object_r", "has no type"},
      {"system_u:object_r:", "its type is empty"},
      {":object_r:t", "its user is empty"},
      {"system_u:object_r:container_file_t:", "its level is empty"},
      {"a b:r:t:s0", "its user \"a b\" is not a name"},
      {"u:r:t;rm -rf:s0", "its type \"t;rm -rf\" is not a name"},
      {"u:1r:t", "its role \"1r\" is not a name"},
      {"u:r:t:x0", "sensitivity \"x0\" is not s<number>"},
      {"u:r:t:s1024", "sensitivity \"s1024\" is above s1023"},
      {"u:r:t:s0:", "category list after \"s0:\" is empty"},
      {"u:r:t:s0:c1024", "category \"c1024\" is above c1023"},
      {"u:r:t:s0:c99999999999", "is not c<number>"},
      {"u:r:t:s0:c01", "category \"c01\" has a leading zero"},
      {"u:r:t:s0:c-1", "its level \"s0:c-1\": category \"c\" is not c<number>"}, // "-" starts the high level
      {"u:r:t:s0:c1,,c2", "category \"\" is not c<number>"},
      {"u:r:t:s0:c5.c3", "category range \"c5.c3\" does not go upwards"},
      {"u:r:t:s0:c3.c3", "does not go upwards"},
      {"u:r:t:s0:c1,c1", "category c1 is listed twice"},
      {"u:r:t:s0:c1.c4,c3", "category c3 is listed twice"},
      {"u:r:t:s0:c1:c2", "category \"c1:c2\" is not c<number>"},
      {"u:r:t:s1-s0", "its high level does not dominate its low level"},
      {"u:r:t:s0:c1,c2-s0:c1", "its high level does not dominate its low level"},
      {"u:r:t:s0-", "sensitivity \"\" is not s<number>"},
      {std::string("u:r:t:s0:c1\0", 12), "is not c<number>"},
      {"u:r:t:s0:c1\n", "is not c<number>"},
      {std::string(5000, 'a'), "longer than 4096 bytes"},
  };
  for (const auto &[text, message] : cases) {
    INFO(text);
    CHECK_THROWS_WITH(parse_context(text), Catch::StartsWith("SELinux context ") && Catch::Contains(message));
  }
}

TEST_CASE("selinux: a container's labels come from config.json, malformed ones are named", "[selinux]") {
  const std::string shared = "system_u:object_r:container_ro_file_t:s0";
  CHECK_FALSE(container_labels(std::nullopt, std::nullopt, shared));
  CHECK_FALSE(container_labels(std::string(), std::string(), shared)); // containerd writes "" with SELinux off
  // A confined process whose files would stay unlabelled: refused.
  CHECK_THROWS_WITH(container_labels(std::nullopt, std::string("system_u:system_r:container_t:s0:c1,c2"), shared),
                    Catch::StartsWith("process.selinuxLabel is \"system_u:system_r:container_t:s0:c1,c2\" but "
                                      "linux.mountLabel is empty"));
  const auto labels = container_labels(std::string("system_u:object_r:container_file_t:s0:c2,c1"),
                                       std::string("system_u:system_r:container_t:s0:c1,c2"), shared);
  REQUIRE(labels);
  CHECK(labels->private_file == "system_u:object_r:container_file_t:s0:c1,c2");
  CHECK(labels->private_read_only == "system_u:object_r:container_ro_file_t:s0:c1,c2"); // its own, read-only
  CHECK(labels->socket == "system_u:system_r:container_t:s0:c1,c2");
  CHECK(labels->shared_read_only == shared);
  CHECK(container_labels(std::string("system_u:object_r:container_file_t:s0:c1,c2"), std::nullopt, shared)->socket.empty());
  CHECK_THROWS_WITH(container_labels(std::string("system_u:object_r:container_file_t:s0:c1,"), std::nullopt, shared),
                    Catch::StartsWith("linux.mountLabel: SELinux context"));
  CHECK_THROWS_WITH(container_labels(std::string("system_u:object_r:container_file_t:s0"), std::string("x"), shared),
                    Catch::StartsWith("process.selinuxLabel: SELinux context \"x\": it has no role"));
  CHECK_THROWS_WITH(container_labels(std::string("system_u:object_r:container_file_t:s0"), std::nullopt, "bad"),
                    Catch::StartsWith("config selinux.shared-file-label: "));
  // checked even for a container without labels: a typo shows at once
  CHECK_THROWS_WITH(container_labels(std::nullopt, std::nullopt, "bad"),
                    Catch::StartsWith("config selinux.shared-file-label: "));
  CHECK(parse_mode("auto") == Mode::automatic);
  CHECK(parse_mode("on") == Mode::on);
  CHECK(parse_mode("off") == Mode::off);
  CHECK_THROWS_WITH(parse_mode("enforcing"), Catch::Contains("is not one of auto, on, off"));
}

namespace {

std::string fd_target(int fd) {
  char buf[4096];
  const ssize_t n = ::readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string("?");
}

// Records what would be labelled; the file a descriptor or a
// /proc/self/fd/N/name path stands for is resolved when called.
class RecordingSystem final : public System {
public:
  explicit RecordingSystem(bool kernel) : kernel_(kernel) {}
  struct Call {
    std::string what, target, context;
    bool operator==(const Call &) const = default;
  };
  std::vector<Call> calls;
  int enabled_asked = 0;
  std::string fail_on; // a target substring whose labelling fails

  bool enabled() override {
    enabled_asked++;
    return kernel_;
  }
  void set_fd_label(int fd, const std::string &context) override { record("fd", fd_target(fd), context); }
  void set_link_label(const std::string &path, const std::string &context) override {
    const auto slash = path.rfind('/');
    const std::string dir = path.substr(0, slash);
    REQUIRE(dir.rfind("/proc/self/fd/", 0) == 0);
    record("link", fd_target(std::stoi(dir.substr(14))) + path.substr(slash), context);
  }
  void set_socket_create_label(const std::string &context) override { calls.push_back({"sockcreate", "", context}); }

private:
  void record(const char *what, const std::string &target, const std::string &context) {
    if (!fail_on.empty() && target.find(fail_on) != std::string::npos)
      throw system_error("refused", EACCES);
    calls.push_back({what, target, context});
  }
  bool kernel_;
};

const std::string kMount = "system_u:object_r:container_file_t:s0:c1,c2";
const std::string kProcess = "system_u:system_r:container_t:s0:c1,c2";
const std::string kShared = "system_u:object_r:container_ro_file_t:s0";
const std::string kMountReadOnly = "system_u:object_r:container_ro_file_t:s0:c1,c2";

ContainerLabels labels() { return *container_labels(kMount, kProcess, kShared); }

} // namespace

TEST_CASE("selinux: the labeler labels only when asked and only what has a label", "[selinux]") {
  TempDir t;
  const std::string file = t.write("f", "x");
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(fd);
  SECTION("auto without an SELinux kernel: nothing") {
    RecordingSystem sys(false);
    Labeler l(sys, Mode::automatic, labels());
    CHECK_FALSE(l.active());
    l.label_fd(fd.get(), Share::private_file, file);
    { auto s = l.socket_label(); }
    CHECK(sys.calls.empty());
  }
  SECTION("off: not even the kernel is asked") {
    RecordingSystem sys(true);
    Labeler l(sys, Mode::off, labels());
    l.label_fd(fd.get(), Share::private_file, file);
    CHECK(sys.enabled_asked == 0);
    CHECK(sys.calls.empty());
  }
  SECTION("no mount label: nothing") {
    RecordingSystem sys(true);
    Labeler l(sys, Mode::on, std::nullopt);
    l.label_fd(fd.get(), Share::private_file, file);
    CHECK(sys.calls.empty());
  }
  SECTION("auto with an SELinux kernel: files, and sockets while the guard lives") {
    RecordingSystem sys(true);
    Labeler l(sys, Mode::automatic, labels());
    CHECK(l.active());
    l.label_fd(fd.get(), Share::private_file, file);
    l.label_fd(fd.get(), Share::shared_read_only, file);
    {
      auto s = l.socket_label();
      CHECK(sys.calls.back() == RecordingSystem::Call{"sockcreate", "", kProcess});
    }
    CHECK(sys.calls.back() == RecordingSystem::Call{"sockcreate", "", ""}); // reset
    CHECK(sys.calls[0] == RecordingSystem::Call{"fd", file, kMount});
    CHECK(sys.calls[1] == RecordingSystem::Call{"fd", file, kShared});
  }
  SECTION("on without an SELinux kernel: files are labelled, sockets are not (nothing would read it)") {
    RecordingSystem sys(false);
    Labeler l(sys, Mode::on, labels());
    l.label_fd(fd.get(), Share::private_file, file);
    { auto s = l.socket_label(); }
    CHECK(sys.calls == std::vector<RecordingSystem::Call>{{"fd", file, kMount}});
  }
  SECTION("a label the kernel refuses is an error naming the file") {
    RecordingSystem sys(true);
    sys.fail_on = "/f";
    Labeler l(sys, Mode::automatic, labels());
    CHECK_THROWS_WITH(l.label_fd(fd.get(), Share::private_file, file),
                      Catch::StartsWith("SELinux label of \"" + file + "\": refused"));
    UniqueFd dir(::open(t.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    CHECK_THROWS_AS(l.label_in_dir(dir.get(), "../f", Share::private_file, file), Error);
  }
}

TEST_CASE("selinux: create labels each file of a container with limits, and nothing without a label or when off",
          "[selinux][create]") {
  TempDir t;
  t.write("cdi/gpu.yaml", "cdiVersion: 0.6.0\nkind: v.com/gpu\ndevices:\n"
                          "  - name: \"0\"\n    containerEdits:\n      env: [GPUSLICE_MEMORY_LIMIT=256Mi]\n"
                          "  - name: burst\n    containerEdits:\n      env: [GPUSLICE_COMPUTE_LIMIT=30, GPUSLICE_COMPUTE_POLICY=burst]\n");
  Config config;
  config.spec_dirs = {t / "cdi"};
  config.state_dir = t / "state";
  config.interposer_path = t.write("interposer.so", "x");
  config.shim_path = GPUSLICE_SHIM; // not beside unit_tests
  auto create = [&](const std::string &id, const std::string &labels_json, RecordingSystem &sys) {
    t.write(id + "/config.json", R"({"root": {"path": "rootfs"}, "process": {"env": [])" + labels_json +
                                     R"(}, "mounts": [], "linux": {"mountLabel": ")" +
                                     (labels_json.empty() ? std::string() : kMount) + R"("}})");
    ::mkdir((t / (id + "/rootfs")).c_str(), 0755);
    create::BundleSpec spec = create::BundleSpec::load(t / (id + "/config.json"));
    const create::Context ctx = create::context_of(config, kDefaultConfigPath, id, t / id, create::HookMode::none);
    create::Facts facts;
    facts.requests.devices = {"v.com/gpu=burst"};
    facts.limits = sharing::Limits{{{"*", 256u << 20, 30, sharing::Policy::burst}}, ""};
    facts.rootfs = t / (id + "/rootfs");
    facts.image = create::read_image(facts.rootfs);
    facts.selinux_kernel = sys.enabled();
    create::Plan plan;
    for (const auto &m : {create::selinux_modifier(sys), create::sharing_modifier(), create::monitor_modifier()})
      m->modify(spec, plan, facts, ctx);
    // the monitor made ready, not started
    create::commit(plan, facts, ctx, {}, [&](const state::ContainerDir &) { spec.save(t / (id + "/config.json")); });
  };
  config.selinux_label = "auto";
  RecordingSystem sys(true);
  create("c1", R"(, "selinuxLabel": ")" + kProcess + "\"", sys);
  const std::string dir = t / "state/containers/c1";
  using Call = RecordingSystem::Call;
  CHECK(sys.calls == std::vector<Call>{
                         {"fd", "/memfd:gpuslice-region (deleted)", kMount},
                         {"fd", dir, kMount},
                         {"fd", dir + "/limits", kMountReadOnly},
                         {"fd", dir + "/ld.so.preload", kMountReadOnly},
                         {"fd", dir + "/run", kMount},
                         {"fd", dir + "/run/limits", kMountReadOnly},
                         {"fd", dir + "/run/libgpuslice-cuda.so", kMountReadOnly},
                         {"fd", dir + "/run/activity", kMountReadOnly},
                         {"sockcreate", "", kProcess},
                         {"sockcreate", "", ""},
                         {"link", dir + "/run/region.sock", kMount},
                         {"fd", t / "state/activity", kShared},
                     });
  // the labels in the record, for a monitor started again
  const auto record = state::read_record(state::open_container_dir(config.state_dir, "c1")->fd.get(), dir);
  REQUIRE(record.selinux);
  CHECK(record.selinux->file == kMount);
  CHECK(record.selinux->socket == kProcess);

  SECTION("a label that cannot be set leaves nothing behind") {
    RecordingSystem failing(true);
    failing.fail_on = "region.sock";
    CHECK_THROWS_WITH(create("c2", R"(, "selinuxLabel": ")" + kProcess + "\"", failing),
                      Catch::Contains("SELinux label of") && Catch::Contains("region.sock"));
    CHECK(::access((t / "state/containers/c2").c_str(), F_OK) != 0);
  }
  SECTION("without labels in config.json, nothing is labelled") {
    RecordingSystem quiet(true);
    create("c3", "", quiet);
    CHECK(quiet.calls.empty());
  }
  SECTION("selinux.label = off: nothing is labelled") {
    config.selinux_label = "off";
    RecordingSystem quiet(true);
    create("c4", R"(, "selinuxLabel": ")" + kProcess + "\"", quiet);
    CHECK(quiet.calls.empty());
  }
}

namespace {

std::optional<std::string> xattr_label(const std::string &path) {
  char buf[512];
  const ssize_t n = ::lgetxattr(path.c_str(), "security.selinux", buf, sizeof buf);
  if (n < 0)
    return std::nullopt;
  std::string s(buf, static_cast<std::size_t>(n));
  if (!s.empty() && s.back() == '\0')
    s.pop_back();
  return s;
}

// The real path: the kernel's interfaces with selinux.label = on, in `dir`. Returns
// what went wrong, "" when nothing did (it also runs in a forked child).
std::string label_for_real(const std::string &dir) {
  try {
    Labeler l(kernel(), Mode::on, labels());
    if (!l.active())
      return "labeler inactive with selinux.label = on";
    const std::string file = dir + "/limits";
    fs::write_file_atomic(file, "x", 0444);
    UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
    l.label_fd(fd.get(), Share::private_file, file);
    if (xattr_label(file) != kMount)
      return "limits: " + xattr_label(file).value_or("(none)");
    UniqueFd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (::mknod((dir + "/region.sock").c_str(), S_IFSOCK | 0666, 0) != 0)
      return "mknod region.sock failed";
    l.label_in_dir(d.get(), "region.sock", Share::private_file, "region.sock");
    if (xattr_label(dir + "/region.sock") != kMount)
      return "region.sock: " + xattr_label(dir + "/region.sock").value_or("(none)");
    l.label_fd(d.get(), Share::shared_read_only, dir);
    if (xattr_label(dir) != kShared)
      return "dir: " + xattr_label(dir).value_or("(none)");
    return "";
  } catch (const Error &e) {
    return e.message();
  }
}

bool has_magic(const std::string &path, unsigned long magic) {
  struct statfs st {};
  return ::statfs(path.c_str(), &st) == 0 && static_cast<unsigned long>(st.f_type) == magic;
}

// What `check` returns, run in a child with a fresh `fstype` (whose statfs
// magic is `magic`) mounted on `dir` in a private mount namespace, so that
// the mount goes with the child; "" means all went well.
std::string on_fresh_mount(const std::string &dir, const char *fstype, unsigned long magic,
                           const std::function<std::string()> &check) {
  int out[2];
  if (::pipe(out) != 0)
    return "no pipe";
  const pid_t pid = ::fork();
  if (pid < 0)
    return "no fork";
  if (pid == 0) {
    std::string result = std::string("cannot mount a ") + fstype;
    if (::unshare(CLONE_NEWNS) == 0 && ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
        ::mount(fstype, dir.c_str(), fstype, 0, "size=1m") == 0)
      result = has_magic(dir, magic) ? check() : std::string("not a ") + fstype;
    (void)!::write(out[1], result.data(), result.size());
    ::_exit(0);
  }
  ::close(out[1]);
  std::string result;
  char buf[1024];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;)
    result.append(buf, static_cast<std::size_t>(n));
  ::close(out[0]);
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid)
    return "no child";
  return result;
}

} // namespace

TEST_CASE("selinux: security.selinux written on the temp dir's filesystem", "[selinux][root]") {
  REQUIRE(::geteuid() == 0); // root: CAP_SYS_ADMIN for security.* attributes
  // The answer agrees with the kernel's own file (selinuxfs is
  // mounted with a policy where SELinux is on), and auto follows it.
  CHECK(kernel().enabled() == (::access("/sys/fs/selinux/enforce", F_OK) == 0));
  CHECK(Labeler(kernel(), Mode::automatic, labels()).active() == kernel().enabled());
  TempDir t;
  struct statfs st {};
  REQUIRE(::statfs(t.path().c_str(), &st) == 0);
  INFO("the temp dir's filesystem magic: 0x" << std::hex << st.f_type << " (ext4 0xef53 on this class of machine)");
  CHECK(label_for_real(t.path()).empty());
}

TEST_CASE("selinux: security.selinux written on a tmpfs", "[selinux][root]") {
  REQUIRE(::geteuid() == 0);
  TempDir t;
  CHECK(on_fresh_mount(t.path(), "tmpfs", 0x01021994 /* TMPFS_MAGIC */, [&] { return label_for_real(t.path()); }) ==
        "");
}

TEST_CASE("selinux: a filesystem without security attributes refuses a label, and says so", "[selinux][root]") {
  REQUIRE(::geteuid() == 0);
  TempDir t;
  // ramfs keeps no extended attributes: EOPNOTSUPP, and no label already
  // there to excuse it.
  const std::string result = on_fresh_mount(t.path(), "ramfs", 0x858458f6 /* RAMFS_MAGIC */, [&] {
    const std::string file = t.path() + "/limits";
    UniqueFd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    try {
      kernel().set_fd_label(fd.get(), kMount);
      return std::string("labelled");
    } catch (const Error &e) {
      return e.message();
    }
  });
  CHECK(result.find("cannot label it \"" + kMount + "\"") != std::string::npos);
  CHECK(result.find("not supported") != std::string::npos);
}

TEST_CASE("selinux: the socket creation label goes to the kernel, which says no without an LSM", "[selinux][root]") {
  REQUIRE(::geteuid() == 0);
  // Whether a security module answers for /proc/PID/attr at all (without
  // one, reading it is EINVAL), asked apart from the code under test.
  char buf[256];
  const int fd = ::open("/proc/thread-self/attr/current", O_RDONLY | O_CLOEXEC);
  const bool lsm = fd >= 0 && ::read(fd, buf, sizeof buf) >= 0;
  if (fd >= 0)
    ::close(fd);
  if (lsm) {
    CHECK_NOTHROW(kernel().set_socket_create_label("")); // the default again, always allowed
    return;
  }
  // None: the kernel refuses the write (EINVAL), and the message names the
  // label.
  try {
    kernel().set_socket_create_label(kProcess);
    FAIL("the label was accepted without SELinux");
  } catch (const Error &e) {
    CHECK(e.message().find("cannot set the socket creation label \"" + kProcess + "\"") != std::string::npos);
  }
}

TEST_CASE("selinux: a name swapped for a symlink while being labelled: the link's target is never labelled",
          "[selinux][root]") {
  REQUIRE(::geteuid() == 0);
  TempDir t, outside;
  const std::string target = outside.write("host-file", "the host's");
  const auto target_before = xattr_label(target); // none here; the host's own label on an SELinux host
  UniqueFd dir(::open(t.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(dir);
  UniqueFd(::openat(dir.get(), "ours", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
  Labeler l(kernel(), Mode::on, labels());
  std::atomic<bool> stop{false};
  std::atomic<int> swaps{0};
  std::thread racer([&] {
    // Replaces "ours" (rename: it never goes missing) by a symlink to the
    // host file, then by a new regular file, again and again.
    while (!stop) {
      ::unlinkat(dir.get(), "tmp", 0);
      ::symlinkat(target.c_str(), dir.get(), "tmp");
      ::renameat(dir.get(), "tmp", dir.get(), "ours");
      UniqueFd f(::openat(dir.get(), "tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
      ::renameat(dir.get(), "tmp", dir.get(), "ours");
      swaps++;
    }
  });
  // Label until the racer has swapped many times (however slowly a loaded
  // machine runs it), at least 2000 times.
  int labelled = 0;
  for (int i = 0; i < 2000 || swaps < 200; i++) {
    l.label_in_dir(dir.get(), "ours", Share::private_file, "ours"); // never missing: never fails
    labelled++;
  }
  stop = true;
  racer.join();
  CHECK(labelled >= 2000);
  CHECK(xattr_label(target) == target_before); // the host's file: untouched
  // Deterministically: a symlink there is labelled itself, never its target.
  REQUIRE(::symlinkat(target.c_str(), dir.get(), "link") == 0);
  l.label_in_dir(dir.get(), "link", Share::private_file, "link");
  CHECK(xattr_label(t / "link") == kMount);
  CHECK(xattr_label(target) == target_before);
  UniqueFd f(::openat(dir.get(), "final", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
  l.label_in_dir(dir.get(), "final", Share::private_file, "final");
  CHECK(xattr_label(t / "final") == kMount);
}
