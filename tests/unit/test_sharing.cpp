// Host side of GPU sharing: sizes, limit lists, the limits file, the usage
// region (creation, validation of what a tenant may have written, reclaim of
// dead processes' slots).
#include "gpuslice/common/error.hpp"
#include "gpuslice/sharing/limits.hpp"
#include "gpuslice/sharing/region.hpp"

extern "C" {
#include "gpuslice/region.h"
}

#include <catch2/catch.hpp>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace gpuslice::sharing;
using gpuslice::Error;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/gpuslice-sharing-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

void poke(int fd, off_t off, const void *data, size_t len) {
  REQUIRE(::pwrite(fd, data, len, off) == static_cast<ssize_t>(len));
}

off_t used_offset(unsigned slot, unsigned dev) {
  return static_cast<off_t>(offsetof(gs_region, used) + (dev * GS_MAX_SLOTS + slot) * sizeof(uint64_t));
}

// A descriptor of its own (own open file description, own locks), as the
// monitor hands each process.
int reopen(int fd) { return ::open(("/proc/self/fd/" + std::to_string(fd)).c_str(), O_RDWR | O_CLOEXEC); }

} // namespace

TEST_CASE("sizes parse with binary and decimal suffixes", "[sharing]") {
  CHECK(parse_size("4Gi") == 4ull << 30);
  CHECK(parse_size("512Mi") == 512ull << 20);
  CHECK(parse_size("1Ki") == 1024);
  CHECK(parse_size("2Ti") == 2ull << 40);
  CHECK(parse_size("1G") == 1000000000ull);
  CHECK(parse_size("1.5Gi") == 3ull << 29);
  CHECK(parse_size("1073741824") == 1073741824ull);
  CHECK(parse_size(" 8Gi ") == 8ull << 30);
  // Kubernetes' quantities, as a claim's consumedCapacity holds them
  CHECK(parse_size("8k") == 8000);
  CHECK(parse_size("1Pi") == 1ull << 50);
  CHECK(parse_size("2Ei") == 2ull << 60);
  CHECK(parse_size("3P") == 3000000000000000ull);
  CHECK(parse_size("1E") == 1000000000000000000ull);
  CHECK(parse_size("8e9") == 8000000000ull);
  CHECK(parse_size("8E9") == 8000000000ull);
  CHECK(parse_size("1.5e3") == 1500);
  for (const char *bad : {"", "Gi", "-1Gi", "4Gx", "abc", "1e400Gi", "+4Gi", "4 Gi", "500m", "16Ei", "1e20", "e3"})
    CHECK_THROWS_AS(parse_size(bad), Error);
  CHECK_THROWS_WITH(parse_size("4Gx"), Catch::Contains("\"4Gx\""));
}

TEST_CASE("memory limit lists name devices by ordinal or UUID", "[sharing]") {
  auto all = parse_memory_limits("4Gi");
  REQUIRE(all.size() == 1);
  CHECK(all[0].key == "*");
  CHECK(all[0].memory == 4ull << 30);

  auto some = parse_memory_limits("0:1Gi, GPU-fb0e6c7c-1a2b-3c4d-5e6f-0123456789ab:2Gi,*:512Mi");
  REQUIRE(some.size() == 3);
  CHECK(some[0].key == "0");
  CHECK(some[0].memory == 1ull << 30);
  CHECK(some[1].key == "GPU-fb0e6c7c-1a2b-3c4d-5e6f-0123456789ab");
  CHECK(some[1].memory == 2ull << 30);
  CHECK(some[2].key == "*");

  CHECK_THROWS_WITH(parse_memory_limits("x:1Gi"), Catch::Contains("\"x\""));
  CHECK_THROWS_WITH(parse_memory_limits("0:1Gi,0:2Gi"), Catch::Contains("twice"));
  CHECK_THROWS_AS(parse_memory_limits("0:"), Error);
  CHECK_THROWS_AS(parse_memory_limits(""), Error);
  CHECK_THROWS_AS(parse_memory_limits("GPU-zz:1Gi"), Error);
}

TEST_CASE("policies and compute shares", "[sharing]") {
  CHECK(parse_policy("burst") == Policy::burst);
  CHECK(policy_name(Policy::fixed) == "fixed");
  CHECK_THROWS_WITH(parse_policy("greedy"), Catch::Contains("\"greedy\""));
  Limits l;
  apply_compute(l, 30, Policy::fixed);
  REQUIRE(l.devices.size() == 1);
  CHECK(l.devices[0].key == "*");
  CHECK(l.devices[0].compute == 30);
  CHECK_THROWS_AS(apply_compute(l, 101, Policy::fixed), Error);
}

TEST_CASE("the limits file round-trips and is read-only", "[sharing]") {
  Limits l;
  l.devices = parse_memory_limits("*:4Gi,1:2Gi");
  apply_compute(l, 30, Policy::burst);
  l.devices.push_back({"GPU-00112233-4455-6677-8899-aabbccddeeff", 1024, {}, Policy::native});
  l.activity = "/run/gpuslice/activity";
  std::string text = render_limits(l);
  CHECK(text.rfind(GS_LIMITS_HEADER "\n", 0) == 0);
  CHECK(text.find("device 1 memory 2147483648 compute 30 policy burst\n") != std::string::npos);
  CHECK(parse_limits(text) == l);

  TempDir dir;
  std::string path = dir.path + "/limits";
  write_limits_file(path, l);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0444);
  std::ifstream in(path);
  std::string back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(back == text);

  CHECK_THROWS_WITH(parse_limits("gpuslice-limits 1\ndevice 0 memory lots\n"), Catch::Contains("line 2"));
  CHECK_THROWS_AS(parse_limits("something else\n"), Error);
  CHECK_THROWS_AS(parse_limits("gpuslice-limits 1\ndevice 0 compute 120\n"), Error);
  Limits bad;
  bad.activity = "relative/path";
  CHECK_THROWS_AS(render_limits(bad), Error);
}

// docs/region.md gives these offsets: a layout change must change the doc
// (and GS_REGION_VERSION).
static_assert(offsetof(gs_region, devices) == 128 && offsetof(gs_region, slots) == 1152 &&
              offsetof(gs_region, used) == 3200 && sizeof(gs_region) == 35968 && GS_REGION_VERSION == 2);

TEST_CASE("a new region is a sealed memfd, valid and empty", "[sharing]") {
  gpuslice::UniqueFd r = create_region();
  struct stat st {};
  REQUIRE(::fstat(r.get(), &st) == 0);
  CHECK(static_cast<uint64_t>(st.st_size) == GS_REGION_SIZE);
  const int seals = ::fcntl(r.get(), F_GET_SEALS);
  CHECK((seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) == (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL));
  CHECK((seals & F_SEAL_WRITE) == 0); // the container's processes write it
  // Whoever holds it cannot resize it: no SIGBUS under a mapping, no growth.
  CHECK(::ftruncate(r.get(), 100) != 0);
  CHECK(::ftruncate(r.get(), static_cast<off_t>(GS_REGION_SIZE) * 2) != 0);
  char byte = 1;
  CHECK(::pwrite(r.get(), &byte, 1, static_cast<off_t>(GS_REGION_SIZE)) != 1);
  CHECK(::fcntl(r.get(), F_ADD_SEALS, F_SEAL_WRITE) != 0); // nor seal it against the others
  RegionUsage u = read_region(r.get());
  CHECK(u.devices.empty());
  CHECK(u.slots_in_use == 0);
  CHECK(container_id(r.get()) != 0);
}

TEST_CASE("recover_region takes back only the mapping whose inode is the region's", "[sharing][root]") {
  // A process of the container maps other memfds too (here a decoy of the
  // same size and name, mapped first): only the recorded inode is taken.
  gpuslice::UniqueFd decoy = create_region();
  gpuslice::UniqueFd region = create_region();
  void *decoy_map = ::mmap(nullptr, GS_REGION_SIZE, PROT_READ, MAP_SHARED, decoy.get(), 0);
  void *region_map = ::mmap(nullptr, GS_REGION_SIZE, PROT_READ, MAP_SHARED, region.get(), 0);
  REQUIRE(decoy_map != MAP_FAILED);
  REQUIRE(region_map != MAP_FAILED);
  const RegionId id = region_id(region.get());
  REQUIRE_FALSE(id == region_id(decoy.get()));
  const std::vector<int> self{static_cast<int>(::getpid())};

  gpuslice::UniqueFd back = recover_region(self, id);
  REQUIRE(back); // /proc/self/map_files: root only
  CHECK(region_id(back.get()) == id);
  CHECK_FALSE(recover_region(self, RegionId{id.dev, id.ino + 1000000}));
  CHECK_FALSE(recover_region({}, id));
  CHECK_FALSE(recover_region({999999999}, id)); // no such process
  CHECK(processes_mapping({999999999, self[0]}, id) == self);
  CHECK(processes_mapping(self, RegionId{id.dev, id.ino + 1000000}).empty());

  ::munmap(region_map, GS_REGION_SIZE);
  CHECK_FALSE(recover_region(self, id)); // held only as a descriptor: not mapped, not found
  CHECK(processes_mapping(self, id).empty());
  ::munmap(decoy_map, GS_REGION_SIZE);
}

TEST_CASE("what a tenant writes into the region is validated", "[sharing]") {
  gpuslice::UniqueFd r = create_region();
  SECTION("usages are summed over every slot, masked so they cannot wrap") {
    uint64_t lo = 7, hi = 9, big = UINT64_MAX - 5;
    poke(r.get(), offsetof(gs_region, devices), &lo, 8);
    poke(r.get(), offsetof(gs_region, devices) + 8, &hi, 8);
    poke(r.get(), used_offset(3, 0), &big, 8);
    poke(r.get(), used_offset(GS_MAX_SLOTS - 1, 0), &big, 8);
    RegionUsage u = read_region(r.get());
    REQUIRE(u.devices.size() == 1);
    const uint64_t masked = big & ((uint64_t(1) << GS_USED_BITS) - 1);
    CHECK(u.devices[0].used == 2 * masked);
    CHECK(u.slots_in_use == 2);
  }
  SECTION("a broken header is refused") {
    uint32_t version = 99;
    poke(r.get(), offsetof(gs_region, version), &version, sizeof version);
    CHECK_THROWS_WITH(read_region(r.get()), Catch::Contains("no valid header"));
  }
  SECTION("a zeroed magic is refused") {
    uint64_t magic = 0;
    poke(r.get(), 0, &magic, 8);
    CHECK_THROWS_WITH(read_region(r.get()), Catch::Contains("no valid header"));
  }
}

// A process that claims slot `slot` the way the interposer does (on a
// descriptor of its own), charges 1 GiB to it and waits; returns its pid
// once it holds the slot.
static pid_t holder(int region, unsigned slot) {
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int fd = reopen(region);
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = GS_SLOT_LOCK_BASE + slot;
    fl.l_len = 1;
    if (fd < 0 || ::fcntl(fd, F_OFD_SETLK, &fl) != 0)
      ::_exit(1);
    uint64_t gib = 1ull << 30;
    if (::pwrite(fd, &gib, 8, used_offset(slot, 0)) != 8 || ::write(ready[1], "x", 1) != 1)
      ::_exit(1);
    for (;;)
      ::pause();
  }
  ::close(ready[1]);
  char c;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  ::close(ready[0]);
  return pid;
}

TEST_CASE("a SIGKILLed process's usage is reclaimed, a live one's is not", "[sharing]") {
  gpuslice::UniqueFd r = create_region();
  uint64_t lo = 1, hi = 2;
  poke(r.get(), offsetof(gs_region, devices), &lo, 8);
  poke(r.get(), offsetof(gs_region, devices) + 8, &hi, 8);

  pid_t alive = holder(r.get(), 0);
  pid_t doomed = holder(r.get(), GS_MAX_SLOTS - 1);
  CHECK(read_region(r.get()).devices.at(0).used == 2ull << 30);
  CHECK(reclaim_dead_slots(r.get()) == 0);

  ::kill(doomed, SIGKILL);
  ::waitpid(doomed, nullptr, 0);
  CHECK(reclaim_dead_slots(r.get()) == 1);
  RegionUsage u = read_region(r.get());
  CHECK(u.devices.at(0).used == 1ull << 30);
  CHECK(u.slots_in_use == 1);

  ::kill(alive, SIGKILL);
  ::waitpid(alive, nullptr, 0);
  CHECK(reclaim_dead_slots(r.get()) == 1);
  CHECK(read_region(r.get()).devices.at(0).used == 0);
}
