// The per-GPU admission cap (create/admission.hpp): counted from the live
// containers' limits files, the next create on a full GPU refused naming
// the GPU and the setting, places freed when a container's state goes
// (ended, or stale: its runtime died), concurrent creates never both taking
// the last place.
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/create/admission.hpp"
#include "gpuslice/state/container_dir.hpp"

#include "create_for_tests.hpp"
#include "tempdir.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <ctime>

using namespace gpuslice;
using namespace gpuslice::create;
using gpuslice::testing::TempDir;

namespace {

const std::string kGpuA = "GPU-aaaaaaaa-0000-0000-0000-000000000000";
const std::string kGpuB = "GPU-bbbbbbbb-0000-0000-0000-000000000000";

struct Node {
  TempDir t;
  Config config;
  Node() {
    t.write("cdi/gpu.yaml", "cdiVersion: 0.6.0\nkind: v.com/gpu\ndevices:\n"
                            "  - name: a\n    containerEdits:\n      env: [GPUSLICE_GPU_UUID=" + kGpuA +
                                ", GPUSLICE_MEMORY_LIMIT=1Gi]\n"
                                "  - name: b\n    containerEdits:\n      env: [GPUSLICE_GPU_UUID=" + kGpuB +
                                ", GPUSLICE_MEMORY_LIMIT=1Gi]\n"
                                "  - name: unnamed\n    containerEdits:\n      env: [GPUSLICE_MEMORY_LIMIT=1Gi]\n"
                                "  - name: whole\n    containerEdits:\n      env: [A=1]\n");
    t.write("interposer.so", "x");
    config.spec_dirs = {t / "cdi"};
    config.state_dir = t / "state";
    config.interposer_path = t / "interposer.so";
    config.shim_path = GPUSLICE_SHIM; // not beside unit_tests
    config.max_containers_per_gpu = 2;
  }
  // gpuslice-runtime create for `id` claiming `devices`; the monitor it
  // starts watches this process, so the state stays until removed.
  void create(const std::string &id, const std::string &devices) {
    t.write(id + "/config.json", R"({"root": {"path": "rootfs"}, "process": {"env": []}, "mounts": [],
        "annotations": {"cdi.k8s.io/x": ")" + devices + R"("}})");
    ::mkdir((t / (id + "/rootfs")).c_str(), 0755);
    const auto prepared = gpuslice::testing::prepare(t / id, id, config);
    warnings = prepared.warnings;
    notes = prepared.notes;
  }
  std::map<std::string, int> count() const {
    std::map<std::string, int> n;
    for (const auto &[gpu, load] : load_per_gpu(config.state_dir))
      n[gpu] = load.containers;
    return n;
  }
  // A container with limits on `device_key` whose runtime died before any
  // cleanup: its creator is gone.
  void dead_container(const std::string &id, const std::string &device_key) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      try {
        const std::string limits = "gpuslice-limits 1\ndevice " + device_key + " memory 1024\n";
        state::Record record;
        record.limits_digest = state::limits_digest(limits);
        state::ContainerDir d = state::create_container_dir(config.state_dir, id, record);
        fs::write_file_atomic(d.path + "/limits", limits, 0444);
        ::_exit(0);
      } catch (...) {
        ::_exit(1);
      }
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
  }
  bool has_state(const std::string &id) const { return ::access((t / ("state/containers/" + id)).c_str(), F_OK) == 0; }
  std::vector<std::string> warnings, notes; // of the last create
};

} // namespace

TEST_CASE("admission: a limits file's GPUs are its UUIDs, anything else one unnamed GPU", "[create][admission]") {
  sharing::Limits l{{{kGpuA, 1, std::nullopt, std::nullopt}, {"*", 1, std::nullopt, std::nullopt},
                     {"0", 1, std::nullopt, std::nullopt}},
                    ""};
  CHECK(gpus_of(l) == std::set<std::string>{kGpuA, kUnnamedGpu});
}

TEST_CASE("admission: the next container on a full GPU is refused naming it; other GPUs and whole GPUs are not",
          "[create][admission]") {
  Node n;
  n.create("c1", "v.com/gpu=a");
  n.create("c2", "v.com/gpu=a,v.com/gpu=b");
  n.create("w1", "v.com/gpu=whole"); // no limits: takes no place
  CHECK(n.count() == std::map<std::string, int>{{kGpuA, 2}, {kGpuB, 1}});
  CHECK_THROWS_WITH(n.create("c3", "v.com/gpu=a"),
                    "GPU " + kGpuA + " already hosts 2 containers with GPU limits (admission.max-containers-per-gpu = 2)");
  CHECK_THROWS_WITH(n.create("c4", "v.com/gpu=b,v.com/gpu=a"), Catch::Contains("GPU " + kGpuA + " already hosts"));
  CHECK(::access((n.t / "state/containers/c3").c_str(), F_OK) != 0); // nothing left of a refused one
  CHECK(fs::read_file(n.t / "c3/config.json").find("gpuslice") == std::string::npos);
  n.create("c5", "v.com/gpu=b");
  n.create("w2", "v.com/gpu=whole");
  CHECK_THROWS_WITH(n.create("c6", "v.com/gpu=b"), Catch::Contains("GPU " + kGpuB + " already hosts 2"));

  SECTION("a container that ends frees its place") {
    state::remove_container_dir(n.config.state_dir, "c1");
    n.create("c3", "v.com/gpu=a");
    CHECK(n.count()[kGpuA] == 2);
  }
  SECTION("0: no cap") {
    n.config.max_containers_per_gpu = 0;
    n.create("c3", "v.com/gpu=a");
    CHECK(n.count()[kGpuA] == 3);
  }
}

TEST_CASE("admission: devices that name no GPU count as one; a stale container frees its place",
          "[create][admission]") {
  Node n;
  n.create("u1", "v.com/gpu=unnamed");
  n.dead_container("dead", "*");
  CHECK(n.count()[kUnnamedGpu] == 2); // before collection, both dirs are there
  n.create("u2", "v.com/gpu=unnamed"); // the dead one is collected before a refusal
  CHECK_FALSE(n.has_state("dead"));
  CHECK_THROWS_WITH(n.create("u3", "v.com/gpu=unnamed"),
                    Catch::StartsWith("the GPU of CDI devices that name none (no GPUSLICE_GPU_UUID) already hosts 2"));
}

TEST_CASE("admission: stale containers are looked for once a minute, or when a GPU looks full", "[create][admission]") {
  Node n;
  n.create("a1", "v.com/gpu=a"); // the first create looks
  n.dead_container("dead-b", kGpuB);
  n.create("b1", "v.com/gpu=b");  // room on GPU B: no look
  n.create("w1", "v.com/gpu=whole");
  CHECK(n.has_state("dead-b"));
  CHECK(n.count()[kGpuB] == 2);

  SECTION("a GPU that looks full") {
    n.create("b2", "v.com/gpu=b");
    CHECK_FALSE(n.has_state("dead-b"));
    CHECK(n.count()[kGpuB] == 2);
  }
  SECTION("a minute later") {
    const std::string marker = n.config.state_dir + "/" + state::kStaleCollected;
    const timespec times[2] = {{0, UTIME_OMIT}, {::time(nullptr) - 61, 0}};
    REQUIRE(::utimensat(AT_FDCWD, marker.c_str(), times, 0) == 0);
    n.create("w2", "v.com/gpu=whole");
    CHECK_FALSE(n.has_state("dead-b"));
  }
}

TEST_CASE("admission: a live container's unreadable limits file still takes a place", "[create][admission]") {
  Node n;
  n.create("c1", "v.com/gpu=a");
  const std::string limits = n.t / "state/containers/c1/limits";
  ::chmod(limits.c_str(), 0644);
  fs::write_file_atomic(limits, "not a limits file", 0444);
  CHECK(n.count() == std::map<std::string, int>{{kUnnamedGpu, 1}});
}

TEST_CASE("admission: concurrent creates against the last place: exactly one gets it", "[create][admission]") {
  Node n;
  n.config.max_containers_per_gpu = 1;
  constexpr int kCreates = 6;
  // Each create in its own process, all released at once: the lock decides.
  // The winner stays alive (its state live) until every loser is done.
  int go[2], hold[2];
  REQUIRE(::pipe(go) == 0);
  REQUIRE(::pipe(hold) == 0);
  std::map<pid_t, int> status_of;
  for (int i = 0; i < kCreates; i++) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(go[1]);
      ::close(hold[1]);
      char c;
      (void)!::read(go[0], &c, 1);
      try {
        n.create("r" + std::to_string(i), "v.com/gpu=a");
      } catch (const Error &) {
        ::_exit(3);
      }
      (void)!::read(hold[0], &c, 1); // until the parent closes it
      ::_exit(0);
    }
    status_of[pid] = -1;
  }
  ::close(go[0]);
  ::close(hold[0]);
  REQUIRE(::write(go[1], "gggggg", kCreates) == kCreates);
  // Collect the losers, for as long as a loaded machine may need. Each of
  // these children by its pid: waitpid(-1) would also reap what an earlier
  // test of this process left, count it as a loser, and let the winner go
  // (and its place with it) before every loser had tried.
  int done = 0;
  for (int waited_ms = 0; done < kCreates - 1 && waited_ms < 120000; waited_ms += 10) {
    for (auto &[pid, status_now] : status_of) {
      int status = 0;
      if (status_now < 0 && ::waitpid(pid, &status, WNOHANG) == pid) {
        status_now = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
        done++;
      }
    }
    if (done < kCreates - 1)
      ::usleep(10000);
  }
  ::close(hold[1]);
  ::close(go[1]);
  int refused = 0, admitted = 0;
  for (auto &[pid, status] : status_of) {
    if (status < 0) {
      int st = 0;
      REQUIRE(::waitpid(pid, &st, 0) == pid);
      status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    }
    refused += status == 3;
    admitted += status == 0;
  }
  CHECK(refused == kCreates - 1);
  CHECK(admitted == 1);
}

TEST_CASE("admission: the memory limits of a GPU's containers may not add up to more than it has",
          "[create][admission]") {
  Node n;
  n.config.max_containers_per_gpu = 0;
  // What gpuslice-shim --query-gpus wrote at the first create since boot.
  n.t.write("state/gpu-memory", kGpuA + " 3221225472\n" + kGpuB + " 1610612736\n"); // 3 GiB, 1.5 GiB
  n.create("c1", "v.com/gpu=a");
  n.create("c2", "v.com/gpu=a,v.com/gpu=b");
  n.create("c3", "v.com/gpu=a");
  CHECK(load_per_gpu(n.config.state_dir).at(kGpuA) == GpuLoad{3, 3ull << 30});
  CHECK(n.warnings.empty());
  CHECK_THROWS_WITH(n.create("c4", "v.com/gpu=a"),
                    "GPU " + kGpuA + " has 3 GiB of memory, and with this container's 1 GiB the memory limits of its "
                    "containers would add up to 4 GiB (admission.allow-memory-overcommit = false)");
  CHECK_THROWS_WITH(n.create("c5", "v.com/gpu=b"), Catch::Contains("add up to 2 GiB"));
  CHECK(::access((n.t / "state/containers/c4").c_str(), F_OK) != 0);

  SECTION("allowed: admitted") {
    n.config.allow_memory_overcommit = true;
    n.create("c4", "v.com/gpu=a");
  }
  SECTION("an ended container gives its memory back") {
    state::remove_container_dir(n.config.state_dir, "c1");
    n.create("c4", "v.com/gpu=a");
  }
  SECTION("devices that name no GPU: on a node with several, not checked, and said") {
    n.create("u1", "v.com/gpu=unnamed");
    n.create("u2", "v.com/gpu=unnamed");
    n.create("u3", "v.com/gpu=unnamed");
    n.create("u4", "v.com/gpu=unnamed");
    REQUIRE(n.warnings.size() == 1);
    CHECK_THAT(n.warnings[0], Catch::Contains("cannot tell which of the node's 2 GPUs"));
  }
}

TEST_CASE("admission: on a node with one GPU, devices that name none are on it", "[create][admission]") {
  Node n;
  n.t.write("state/gpu-memory", kGpuA + " 2147483648\n");
  n.create("u1", "v.com/gpu=unnamed");
  n.create("c1", "v.com/gpu=a");
  CHECK_THROWS_WITH(n.create("u2", "v.com/gpu=unnamed"), Catch::Contains("GPU " + kGpuA + " has 2 GiB of memory"));
}

TEST_CASE("admission: the GPUs' memory comes from NVML through gpuslice-shim, once", "[create][admission]") {
  Node n;
  n.config.max_containers_per_gpu = 0;
  SECTION("no NVML: admitted, the reason said once at info, asked again later") {
    n.config.monitor_nvml_path = n.t / "no-such-libnvidia-ml.so.1";
    n.create("c1", "v.com/gpu=a");
    CHECK(n.warnings.empty());
    REQUIRE(n.notes.size() == 1);
    CHECK_THAT(n.notes[0], Catch::StartsWith("cannot tell whether the memory limits of a GPU's containers fit in "
                                             "its memory (admission.allow-memory-overcommit = false): gpuslice-shim: cannot load"));
    CHECK(::access((n.t / "state/gpu-memory").c_str(), F_OK) != 0);
    CHECK_THAT(fs::read_file(n.t / "state/gpu-memory-unknown"), Catch::Contains("cannot load"));
    // the creates that follow say nothing, and do not ask NVML again
    n.config.monitor_nvml_path = GPUSLICE_FAKE_NVML;
    n.create("c2", "v.com/gpu=a");
    CHECK((n.warnings.empty() && n.notes.empty()));
    CHECK(::access((n.t / "state/gpu-memory").c_str(), F_OK) != 0);
    // kAskAgainAfter later, NVML is asked again: now there, its answer kept
    const auto old = ::time(nullptr) - std::chrono::duration_cast<std::chrono::seconds>(kAskAgainAfter).count() - 1;
    const struct timeval times[2] = {{old, 0}, {old, 0}};
    REQUIRE(::utimes((n.t / "state/gpu-memory-unknown").c_str(), times) == 0);
    n.create("c3", "v.com/gpu=unnamed");
    CHECK((n.warnings.empty() && n.notes.empty()));
    CHECK(::access((n.t / "state/gpu-memory").c_str(), F_OK) == 0);
    CHECK(::access((n.t / "state/gpu-memory-unknown").c_str(), F_OK) != 0);
  }
  SECTION("the fake NVML: one GPU of 16 GiB, kept for the next creates") {
    n.config.monitor_nvml_path = GPUSLICE_FAKE_NVML;
    n.create("u1", "v.com/gpu=unnamed");
    CHECK(n.warnings.empty());
    const std::string cached = fs::read_file(n.t / "state/gpu-memory", 4096);
    CHECK(cached == "GPU-facea2a3-a4a5-a6a7-a8a9-aaabacadae00 17179869184\n");
    n.config.monitor_nvml_path = n.t / "gone"; // not asked again
    n.create("u2", "v.com/gpu=unnamed");
    CHECK(n.warnings.empty());
  }
}
