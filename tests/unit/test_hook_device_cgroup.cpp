// Opening the device cgroup of a running process to new nodes
// (hook/device_cgroup.hpp), on both hierarchies this machine has: cgroup v1's
// devices controller and the cgroup2 hierarchy (at /sys/fs/cgroup/unified on
// a hybrid host, /sys/fs/cgroup on a unified one). A process in a test
// cgroup whose rules allow /dev/null only is asked to open /dev/zero,
// /dev/full and /dev/null before and after: the new node becomes usable for
// the access granted, the rest stays as it was.
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/strings.hpp"
#include "gpuslice/hook/device_cgroup.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

using namespace gpuslice;
using namespace gpuslice::hook;

namespace {

std::string mount_of(const std::string &fstype, const std::string &option) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    const auto fields = split(line, ' ', EmptyParts::skip);
    for (std::size_t i = 0; i + 3 < fields.size(); ++i)
      if (fields[i] == "-" && fields[i + 1] == fstype) {
        if (option.empty())
          return fields[4];
        for (const auto &o : split(fields[i + 3], ',', EmptyParts::skip))
          if (o == option)
            return fields[4];
      }
  }
  return {};
}

void write_text(const std::string &path, const std::string &text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  REQUIRE(ok);
}

// A process in the cgroup `procs_file` names, answering "which opens work"
// on request: one letter per try (y/n), in the order of kTries.
class Prisoner {
public:
  explicit Prisoner(const std::string &procs_file) {
    int to[2], from[2];
    REQUIRE(::pipe(to) == 0);
    REQUIRE(::pipe(from) == 0);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::close(to[1]);
      ::close(from[0]);
      const int fd = ::open(procs_file.c_str(), O_WRONLY);
      if (fd < 0 || ::write(fd, "0", 1) != 1)
        ::_exit(3);
      ::close(fd);
      char c;
      while (::read(to[0], &c, 1) == 1) {
        std::string answer;
        for (const auto &[path, flags] : kTries) {
          const int f = ::open(path, flags | O_CLOEXEC);
          answer += f >= 0 ? 'y' : errno == EPERM ? 'n' : '?';
          if (f >= 0)
            ::close(f);
        }
        if (::write(from[1], answer.data(), answer.size()) != static_cast<ssize_t>(answer.size()))
          ::_exit(4);
      }
      ::_exit(0);
    }
    ::close(to[0]);
    ::close(from[1]);
    ask_ = to[1];
    answer_ = from[0];
  }
  ~Prisoner() {
    ::close(ask_);
    ::close(answer_);
    int status;
    ::waitpid(pid_, &status, 0);
  }
  // zero for reading, zero for writing, full for reading, null for reading
  std::string opens() {
    REQUIRE(::write(ask_, "?", 1) == 1);
    char buf[8] = {};
    REQUIRE(::read(answer_, buf, 4) == 4);
    return std::string(buf, 4);
  }
  pid_t pid() const { return pid_; }

private:
  static constexpr std::pair<const char *, int> kTries[] = {
      {"/dev/zero", O_RDONLY}, {"/dev/zero", O_WRONLY}, {"/dev/full", O_RDONLY}, {"/dev/null", O_RDONLY}};
  pid_t pid_ = -1;
  int ask_ = -1, answer_ = -1;
};

// The engine's program: /dev/null (c 1:3) only.
std::vector<bpf_insn> null_only_program() {
  auto insns = allow_prelude({DeviceRule{'c', 1, 3, "rwm"}});
  bpf_insn deny{};
  deny.code = BPF_ALU64 | BPF_MOV | BPF_K; // r0 = 0
  insns.push_back(deny);
  bpf_insn exit{};
  exit.code = BPF_JMP | BPF_EXIT;
  insns.push_back(exit);
  return insns;
}

const DeviceRule kZeroRead{'c', 1, 5, "r"};

// A test cgroup, removed whatever the test's outcome (its processes gone).
struct TestCgroup {
  explicit TestCgroup(std::string p) : path(std::move(p)) { REQUIRE(::mkdir(path.c_str(), 0755) == 0); }
  ~TestCgroup() { ::rmdir(path.c_str()); }
  std::string path;
};

} // namespace

TEST_CASE("device cgroup v2: the engine's program gets a prelude for the new node", "[hook][root]") {
  const std::string cg2 = mount_of("cgroup2", "");
  REQUIRE_FALSE(cg2.empty());
  const unsigned flags = GENERATE(0u, unsigned(BPF_F_ALLOW_MULTI));
  CAPTURE(flags);
  const TestCgroup cgroup(cg2 + "/gpuslice-unit-" + std::to_string(::getpid()));
  const std::string &dir = cgroup.path;
  {
    const int engine = load_device_program(null_only_program());
    attach_device_program(dir, engine, flags);
    ::close(engine);
    Prisoner p(dir + "/cgroup.procs");
    CHECK(p.opens() == "nnny");
    allow_devices(p.pid(), {kZeroRead}); // through /proc/PID/cgroup
    CHECK(p.opens() == "ynny");          // zero readable, not writable; full still denied
    allow_devices_v2(dir, {DeviceRule{'c', 1, 7, "rw"}});
    CHECK(p.opens() == "yn" "y" "y");
  }
}

TEST_CASE("device cgroup v2: a cgroup without programs needs nothing", "[hook][root]") {
  const std::string cg2 = mount_of("cgroup2", "");
  REQUIRE_FALSE(cg2.empty());
  const TestCgroup cgroup(cg2 + "/gpuslice-unit-free-" + std::to_string(::getpid()));
  CHECK_NOTHROW(allow_devices_v2(cgroup.path, {kZeroRead}));
}

TEST_CASE("device cgroup v1: devices.allow", "[hook][root]") {
  const std::string v1 = mount_of("cgroup", "devices");
  if (v1.empty()) { // a unified-only host: v2 above is what its engines use
    WARN("no cgroup v1 devices hierarchy on this host");
    return;
  }
  const TestCgroup cgroup(v1 + "/gpuslice-unit-" + std::to_string(::getpid()));
  const std::string &dir = cgroup.path;
  {
    write_text(dir + "/devices.deny", "a");
    write_text(dir + "/devices.allow", "c 1:3 rwm");
    Prisoner p(dir + "/cgroup.procs");
    CHECK(p.opens() == "nnny");
    allow_devices(p.pid(), {kZeroRead});
    CHECK(p.opens() == "ynny");
    CHECK(v1_rule_text(DeviceRule{'a', -1, -1, "rwm"}) == "a *:* rwm");
  }
}
