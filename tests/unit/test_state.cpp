#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/state/container_dir.hpp"

#include "tempdir.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <csignal>
#include <functional>

using namespace gpuslice;
using namespace gpuslice::state;
using gpuslice::testing::TempDir;

namespace {

// Runs fn in a child process that then exits: what it records names a dead process.
void in_dead_process(const std::function<void()> &fn) {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    try {
      fn();
    } catch (...) {
      ::_exit(1);
    }
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
}

bool exists(const std::string &p) { return ::access(p.c_str(), F_OK) == 0; }

// A container dir as a create without anything but its creator makes it.
ContainerDir make(const std::string &state, const std::string &id, Record record = {}) {
  return create_container_dir(state, id, std::move(record));
}

// The init recorded in container dir `id`, as the recorder or a hook records it.
void init_of(const std::string &state, const std::string &id, int pid) {
  const auto dir = open_container_dir(state, id);
  if (!dir)
    throw Error("no container dir " + quote(id));
  record_init(*dir, id, pid);
}

Record record_of(const ContainerDir &dir) { return read_record(dir.fd.get(), dir.path); }

} // namespace

TEST_CASE("state dir: 0700 down from the state dir, records its creator, removed without following links",
          "[state]") {
  TempDir t;
  const std::string state = t / "run/gpuslice";
  auto dir = make(state, "c1");
  CHECK(dir.path == state + "/containers/c1");
  for (const std::string &p : {state, state + "/containers", dir.path}) {
    struct stat st {};
    REQUIRE(::stat(p.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0700);
  }
  auto me = process_id(static_cast<int>(::getpid()));
  REQUIRE(me);
  CHECK(record_of(dir).creator == me);
  CHECK(record_of(dir).format == kStateFormat);
  CHECK(process_alive(*me));

  t.write("outside/keep", "keep");
  t.write("run/gpuslice/containers/c1/sub/file", "y");
  REQUIRE(::symlink((t / "outside").c_str(), (dir.path + "/link").c_str()) == 0);
  remove_container_dir(state, "c1");
  CHECK_FALSE(exists(dir.path));
  CHECK(fs::read_file(t / "outside/keep") == "keep");
  remove_container_dir(state, "c1"); // again: fine
  remove_container_dir(t / "never", "c1");

  REQUIRE(::symlink((t / "outside").c_str(), (state + "/containers/c2").c_str()) == 0);
  CHECK_THROWS_AS(make(state, "c2"), Error);
  CHECK(fs::read_file(t / "outside/keep") == "keep");
  CHECK_THROWS_AS(make(state, "../x"), Error);
  CHECK_THROWS_AS(make(state, ".new-1-x"), Error); // the temporaries' names
  CHECK_THROWS_AS(make("relative", "x"), Error);
}

TEST_CASE("state dir: no symlink on the way is followed, whether all is there or is made; loose modes are tightened",
          "[state]") {
  TempDir t;
  const auto mode = [](const std::string &p) {
    struct stat st {};
    REQUIRE(::lstat(p.c_str(), &st) == 0);
    return st.st_mode & 07777;
  };
  make(t / "real/gpuslice", "c0");
  REQUIRE(::symlink((t / "real").c_str(), (t / "link").c_str()) == 0);
  // All there, through a link: refused (one call, or the walk).
  CHECK_THROWS_WITH(make(t / "link/gpuslice", "c1"), Catch::Contains("cannot open"));
  // To be made, through a link: refused, nothing made behind it.
  CHECK_THROWS_WITH(make(t / "link/new", "c1"), Catch::Contains("cannot open"));
  CHECK_FALSE(exists(t / "real/new"));
  // The containers dir a link: refused.
  REQUIRE(::mkdir((t / "other").c_str(), 0700) == 0);
  REQUIRE(::symlink((t / "real/gpuslice/containers").c_str(), (t / "other/containers").c_str()) == 0);
  CHECK_THROWS_WITH(make(t / "other", "c2"), Catch::Contains("cannot open"));
  CHECK_FALSE(exists(t / "real/gpuslice/containers/c2"));
  // All there but loosened: made root's 0700 again, and the container's dir made.
  REQUIRE(::chmod((t / "real/gpuslice").c_str(), 0755) == 0);
  REQUIRE(::chmod((t / "real/gpuslice/containers").c_str(), 0777) == 0);
  CHECK(make(t / "real/gpuslice", "c3").path == t / "real/gpuslice/containers/c3");
  CHECK(mode(t / "real/gpuslice") == 0700);
  CHECK(mode(t / "real/gpuslice/containers") == 0700);
  // The state dir there, its containers dir not yet: made.
  REQUIRE(::mkdir((t / "bare").c_str(), 0700) == 0);
  CHECK(make(t / "bare", "c4").path == t / "bare/containers/c4");
  CHECK(mode(t / "bare/containers") == 0700);
}

TEST_CASE("state dir: a state dir of / is used as it is, never made root's 0700", "[state][root]") {
  REQUIRE(::geteuid() == 0);
  TempDir t;
  REQUIRE(::chmod(t.path().c_str(), 0755) == 0);
  REQUIRE(::mkdir((t / "proc").c_str(), 0555) == 0);
  in_dead_process([&] { // the temp dir as the child's / (with a /proc: the creator's start time)
    if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("proc", (t / "proc").c_str(), "proc", 0, nullptr) != 0 || ::chroot(t.path().c_str()) != 0 ||
        ::chdir("/") != 0)
      throw Error("cannot make the temp dir the child's /");
    make("/", "c1");
  });
  struct stat root {}, containers {};
  REQUIRE(::stat(t.path().c_str(), &root) == 0);
  CHECK((root.st_mode & 07777) == 0755); // the child's /: left alone
  REQUIRE(::stat((t / "containers").c_str(), &containers) == 0);
  CHECK((containers.st_mode & 07777) == 0700);
  CHECK(exists(t / "containers/c1/state.json"));
}

TEST_CASE("state dir: a live container's id is refused, a stale one is taken over", "[state]") {
  TempDir t;
  const std::string state = t / "state";
  auto live = make(state, "live");
  t.write("state/containers/live/limits", "mine");
  CHECK_THROWS_WITH(make(state, "live"), Catch::Contains("\"live\" is already in use"));
  CHECK(fs::read_file(t / "state/containers/live/limits") == "mine"); // not reset

  in_dead_process([&] { make(state, "stale"); });
  t.write("state/containers/stale/limits", "old");
  auto again = make(state, "stale");
  CHECK_FALSE(exists(again.path + "/limits"));
}

TEST_CASE("state dir: init recorded by the hook decides liveness; remove only what we created", "[state]") {
  TempDir t;
  const std::string state = t / "state";
  // Created by a process that is gone, but its init (us) runs: live.
  in_dead_process([&] { make(state, "c"); });
  init_of(state, "c", static_cast<int>(::getpid()));
  CHECK(collect_stale(state).empty());
  CHECK_THROWS_WITH(make(state, "c"), Catch::Contains("already in use"));
  // A hook run again for the same init is fine; another live init is not.
  CHECK_NOTHROW(init_of(state, "c", static_cast<int>(::getpid())));
  CHECK_THROWS_WITH(init_of(state, "c", static_cast<int>(::getppid())), Catch::Contains("already in use"));
  CHECK(read_record(open_container_dir(state, "c")->fd.get(), "c").status == Status::running);
  CHECK_THROWS_WITH(init_of(state, "c", 0), Catch::Contains("not running"));

  // A monitor removes the directory only while it is still its container's.
  auto mine = make(state, "mine");
  auto me = process_id(static_cast<int>(::getpid()));
  remove_container_dir(state, "mine", ProcessId{me->pid, me->start_time + 1});
  CHECK(exists(mine.path));
  remove_container_dir(state, "mine", me);
  CHECK_FALSE(exists(mine.path));
}

TEST_CASE("state dir: creation handed over to another process, which then decides liveness", "[state]") {
  TempDir t;
  const std::string state = t / "state";
  const auto me = process_id(static_cast<int>(::getpid()));
  REQUIRE(me);
  // A process that was: its id read while it ran.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  const auto was = process_id(child);
  ::kill(child, SIGKILL);
  REQUIRE(::waitpid(child, nullptr, 0) == child);
  REQUIRE(was);
  const ProcessId dead = *was;

  // Handed to a process that is gone: stale, although its maker (us) runs.
  hand_over_creation(make(state, "c"), *me, dead);
  CHECK(collect_stale(state) == std::vector<std::string>{"c"});

  // Handed to us by a process that is gone: live while we run, ours to remove.
  in_dead_process([&] { make(state, "d"); });
  auto dirs = open_container_dirs(state);
  REQUIRE(dirs.size() == 1);
  const ContainerDir d{state + "/containers/d", std::move(dirs[0].fd)};
  const auto creator = record_of(d).creator;
  REQUIRE(creator);
  hand_over_creation(d, *creator, *me);
  CHECK(collect_stale(state).empty());
  CHECK(record_of(d).creator == me);

  // Only the creator hands it over, and only a dir still there (one a
  // delete removed meanwhile has no creator any more).
  CHECK_THROWS_WITH(hand_over_creation(d, dead, dead), Catch::Contains("was not created by process"));
  CHECK(record_of(d).creator == me);
  remove_container_dir(state, "d", me);
  CHECK_FALSE(exists(state + "/containers/d"));
  CHECK_THROWS_AS(hand_over_creation(d, *me, dead), Error);
}

TEST_CASE("state dir: without an init record, the init its runtime's pid file names keeps it live", "[state]") {
  TempDir t;
  const std::string state = t / "state";
  // Each created by a process that is gone (runc, exec'd by the create),
  // each naming a pid file.
  auto created_naming = [&](const std::string &id, const std::string &pid_file) {
    Record r;
    r.init_pid_file = pid_file;
    in_dead_process([&] { make(state, id, r); });
  };
  auto pid_file = [&](const std::string &id) { return t / (id + ".pid"); };
  created_naming("running", pid_file("running"));
  created_naming("running-nl", pid_file("running-nl"));
  created_naming("failed", pid_file("never-written")); // the runtime failed before writing it
  created_naming("older", pid_file("older"));          // names a process started before the creator (pid 1)
  created_naming("ended", pid_file("ended"));          // the container has ended
  created_naming("garbage", pid_file("garbage"));
  created_naming("zero", pid_file("zero"));
  created_naming("linked", pid_file("linked")); // a link to a pid file naming the running init: not followed
  in_dead_process([&] { make(state, "no-record"); }); // the creator alone, gone
  // A creator that runs (the create is deciding) keeps it, whatever the
  // pid file says.
  Record deciding_record;
  deciding_record.init_pid_file = pid_file("never-written");
  auto deciding = make(state, "deciding", deciding_record);

  // The inits, started after every creator.
  const pid_t init = ::fork();
  REQUIRE(init >= 0);
  if (init == 0) {
    ::pause();
    ::_exit(0);
  }
  const pid_t ended = ::fork();
  REQUIRE(ended >= 0);
  if (ended == 0)
    ::_exit(0);
  REQUIRE(::waitpid(ended, nullptr, 0) == ended);
  t.write("running.pid", std::to_string(init));
  t.write("running-nl.pid", std::to_string(init) + "\n");
  REQUIRE(::symlink((t / "running.pid").c_str(), (t / "linked.pid").c_str()) == 0);
  t.write("older.pid", "1");
  t.write("ended.pid", std::to_string(ended));
  t.write("garbage.pid", "12ab");
  t.write("zero.pid", "0");

  std::vector<std::string> removed = collect_stale(state);
  std::sort(removed.begin(), removed.end());
  CHECK(removed == std::vector<std::string>{"ended", "failed", "garbage", "linked", "no-record", "older", "zero"});
  CHECK(exists(state + "/containers/running"));
  CHECK(exists(state + "/containers/running-nl"));
  CHECK(exists(state + "/containers/deciding"));
  CHECK_THROWS_WITH(make(state, "running"), Catch::Contains("\"running\" is already in use"));
  CHECK_FALSE(remove_if_stale(state, "running"));

  // The init ends: stale, and a create of the id takes it over.
  ::kill(init, SIGKILL);
  REQUIRE(::waitpid(init, nullptr, 0) == init);
  CHECK(remove_if_stale(state, "running"));
  CHECK_NOTHROW(make(state, "running-nl"));
}

TEST_CASE("state dir: a create waits for one still deciding (no init, dir locked) instead of refusing", "[state]") {
  TempDir t;
  const std::string state = t / "state";
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) { // a create whose runtime then fails: its dir, locked, removed under the lock
    try {
      const ContainerDir dir = make(state, "c");
      lock(dir); // as the init recorder takes it
      (void)!::write(ready[1], "x", 1);
      ::usleep(200 * 1000);
      remove_container_dir(state, "c");
    } catch (...) {
      ::_exit(1);
    }
    ::_exit(0);
  }
  ::close(ready[1]);
  char x;
  REQUIRE(::read(ready[0], &x, 1) == 1);
  ::close(ready[0]);
  // Its creator still runs: refused before; now taken once the lock is released.
  CHECK_NOTHROW(make(state, "c"));
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(status == 0);
  auto dirs = open_container_dirs(state);
  REQUIRE(dirs.size() == 1);
  CHECK(read_record(dirs[0].fd.get(), "c").creator == process_id(static_cast<int>(::getpid())));

  // A dir whose init runs is refused without waiting for its lock.
  init_of(state, "c", static_cast<int>(::getpid()));
  const auto held = open_container_dir(state, "c");
  REQUIRE(held);
  lock(*held);
  CHECK_THROWS_WITH(make(state, "c"), Catch::Contains("already in use"));
}

TEST_CASE("state dir: one record, state.json, written whole; a newer format refused, either removed", "[state]") {
  TempDir t;
  const std::string state = t / "state";
  Record r;
  r.cdi_env = {"A=1"};
  r.monitor_args = {"--id", "c"};
  r.region = "1 2";
  r.limits_digest = limits_digest("0=1Gi\n");
  r.selinux = Labels{"system_u:object_r:container_file_t:s0:c1,c2", ""};
  auto dir = make(state, "c", r);
  std::vector<std::string> names;
  for (const auto &e : std::filesystem::directory_iterator(dir.path))
    names.push_back(e.path().filename());
  CHECK(names == std::vector<std::string>{"state.json"}); // the record, and nothing else of gpuslice's own
  Record back = record_of(dir);
  r.creator = process_id(static_cast<int>(::getpid()));
  CHECK(back == r);
  CHECK(parse_record(record_text(back), "x") == back);

  // Changed whole, under the lock, a reader sees one or the other.
  init_of(state, "c", static_cast<int>(::getpid()));
  back = record_of(dir);
  CHECK(back.status == Status::running);
  CHECK(back.init == process_id(static_cast<int>(::getpid())));
  CHECK(back.cdi_env == r.cdi_env);

  // Written by a newer gpuslice (a downgrade under a running container): refused, naming both formats.
  std::string text = fs::read_file(dir.path + "/state.json");
  text.replace(text.find("\"format\":3"), 10, "\"format\":99");
  t.write("state/containers/c/state.json", text);
  CHECK_THROWS_WITH(record_of(dir), Catch::Contains("format 99") && Catch::Contains("up to " + std::to_string(kStateFormat)));
  CHECK_THROWS_WITH(init_of(state, "c", static_cast<int>(::getpid())), Catch::Contains("format 99"));
  for (const char *bad : {"", "{}", "[]", R"({"format":3})", R"({"format":3,"status":"gone"})",
                          R"({"format":3,"status":"created","creator":{"pid":0,"start_time":1}})",
                          R"({"format":3,"status":"created","init_pid_file":"relative"})",
                          R"({"format":3,"status":"created","cdi_env":[1]})", R"({"format":2,"status":"created"})"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_record(bad, "state.json"), Error);
  }
  remove_container_dir(state, "c"); // whatever its format
  CHECK_FALSE(exists(dir.path));
}

TEST_CASE("state dir: the files of formats 2 and 1 are read, and the first write replaces them", "[state]") {
  TempDir t;
  const std::string state = t / "state";
  const auto me = process_id(static_cast<int>(::getpid()));
  REQUIRE(me);
  // As the last gpuslice before state.json wrote a container with limits.
  const std::string d = "state/containers/c/";
  ::mkdir((t / "state").c_str(), 0700);
  ::mkdir((t / "state/containers").c_str(), 0700);
  ::mkdir((t / "state/containers/c").c_str(), 0700);
  t.write(d + "format", "gpuslice-state 2\n");
  t.write(d + "creator", to_text(*me) + "\n");
  t.write(d + "init", to_text(*me) + "\n");
  t.write(d + "monitor", "1 1\n");
  t.write(d + "cdi-env", "[\"A=1\",\"B=2\"]\n");
  using namespace std::string_literals;
  t.write(d + "monitor-args", "--id\0c\0--creator\0"s + to_text(*me) + "\0"s);
  t.write(d + "region-id", "12 34");
  t.write(d + "selinux", "system_u:object_r:container_file_t:s0:c1,c2\nsystem_u:system_r:container_t:s0:c1,c2\n");
  t.write(d + "limits", "0=1Gi\n");
  t.write(d + "status", "{\"used\": 1}\n");
  const auto dir = open_container_dir(state, "c");
  REQUIRE(dir);
  Record r = record_of(*dir);
  CHECK(r.format == 2);
  CHECK(r.status == Status::running);
  CHECK(r.creator == me);
  CHECK(r.init == me);
  CHECK(r.monitor == ProcessId{1, 1});
  CHECK(r.cdi_env == std::vector<std::string>{"A=1", "B=2"});
  CHECK(r.monitor_args == std::vector<std::string>{"--id", "c", "--creator", to_text(*me)});
  CHECK(r.region == "12 34");
  REQUIRE(r.selinux);
  CHECK(r.selinux->socket == "system_u:system_r:container_t:s0:c1,c2");
  CHECK(r.limits_digest == limits_digest("0=1Gi\n"));
  CHECK(is_live(r));
  // The first write (a monitor started again, say) makes it state.json,
  // the old records gone, the bind-mounted files kept.
  update_record(*dir, [](Record &x) { x.monitor = ProcessId{2, 2}; });
  std::vector<std::string> names;
  for (const auto &e : std::filesystem::directory_iterator(dir->path))
    names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"limits", "state.json"});
  const Record migrated = record_of(*dir);
  CHECK(migrated.format == kStateFormat);
  CHECK(migrated.monitor == ProcessId{2, 2});
  CHECK(migrated.cdi_env == r.cdi_env);
  CHECK(migrated.usage == "{\"used\":1}");

  // Format 1 (no format file), a container without limits: its init is the
  // pid file's, its failure the create's reason.
  ::mkdir((t / "state/containers/old").c_str(), 0700);
  t.write("state/containers/old/creator", "1 1\n");
  t.write("state/containers/old/init-pid-file", t / "init.pid" + "\n");
  t.write("state/containers/old/create-failed", "it failed");
  r = record_of(*open_container_dir(state, "old"));
  CHECK(r.format == 1);
  CHECK(r.init_pid_file == t / "init.pid");
  CHECK(r.status == Status::failed);
  CHECK(r.failure == "it failed");
  // A format file that is not one, or says state.json's format: refused.
  for (const char *bad : {"", "gpuslice-state\n", "gpuslice-state 1", "gpuslice-state x\n", "gpuslice-state 0\n",
                          "gpuslice-state -1\n", "gpuslice-state 1 \n", "gpuslice-state 99999999999\n",
                          "gpuslice-state 3\n"}) {
    INFO(bad);
    t.write("state/containers/old/format", bad);
    CHECK_THROWS_AS(record_of(*open_container_dir(state, "old")), Error);
  }
}

TEST_CASE("state dir: collect_stale removes what no runtime knows, temporaries included", "[state]") {
  TempDir t;
  const std::string state = t / "state";
  auto live = make(state, "live");
  in_dead_process([&] { make(state, "gone1"); });
  in_dead_process([&] {
    auto d = make(state, "gone2");
    ::mkdir((d.path + "/nested").c_str(), 0700);
  });
  // A create killed between mkdir and rename leaves a temporary.
  pid_t dead = 0;
  in_dead_process([&] {});
  {
    pid_t p = ::fork();
    if (p == 0)
      ::_exit(0);
    ::waitpid(p, nullptr, 0);
    dead = p;
  }
  ::mkdir((state + "/containers/.new-" + std::to_string(dead) + "-x").c_str(), 0700);
  t.write("state/containers/not-ours/file", "x"); // no record: some other program's, left alone
  auto removed = collect_stale(state);
  std::sort(removed.begin(), removed.end());
  CHECK(removed == std::vector<std::string>{"gone1", "gone2"});
  CHECK(exists(live.path));
  CHECK(exists(state + "/containers/not-ours/file"));
  CHECK_FALSE(exists(state + "/containers/.new-" + std::to_string(dead) + "-x"));
  CHECK(collect_stale(t / "nothing-here").empty());
}

TEST_CASE("state dir: a stale dir goes through the fd it was judged by; a create's that took its name stays",
          "[state]") {
  TempDir t;
  const std::string state = t / "state";
  in_dead_process([&] { make(state, "c"); });
  in_dead_process([&] {
    auto d = make(state, "d");
    ::mkdir((d.path + "/run").c_str(), 0700);
  });
  const UniqueFd containers(::open((state + "/containers").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(containers);
  auto judged = [&](const char *id) {
    UniqueFd fd(::openat(containers.get(), id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    REQUIRE(fd);
    return fd; // stale: its creator is gone
  };
  // A collection judged "c" stale; before it removes it, a create of "c"
  // removes the stale dir itself and renames its own into place.
  const UniqueFd stale_c = judged("c");
  auto retried = make(state, "c");
  remove_judged_dir(containers.get(), "c", stale_c.get(), state + "/containers/c");
  CHECK(exists(state + "/containers/c/state.json"));
  CHECK(record_of(retried).creator == process_id(static_cast<int>(::getpid())));
  CHECK_THROWS_WITH(make(state, "c"), Catch::Contains("already in use"));
  // Nothing took "d"'s name: it goes, what is nested in it too.
  const UniqueFd stale_d = judged("d");
  remove_judged_dir(containers.get(), "d", stale_d.get(), state + "/containers/d");
  CHECK_FALSE(exists(state + "/containers/d"));
}

TEST_CASE("state: a process id as text, and back, exactly", "[state]") {
  const ProcessId p{4242, 123456789012ull};
  CHECK(to_text(p) == "4242 123456789012");
  CHECK(parse_process_id(to_text(p)) == p);
  for (const char *bad : {"", "4242", "4242 ", " 4242 1", "0 1", "-1 1", "4242 1 2", "4242 x", "4242 1\n", "x 1"})
    CHECK_FALSE(parse_process_id(bad));
}

TEST_CASE("state: read_state_file reads a plain file only, bounded; a FIFO does not hang it", "[state]") {
  TempDir t;
  t.write("d/limits", "0=1Gi\n");
  t.write("d/big", std::string(64 * 1024 + 1, 'x'));
  t.write("outside", "host secret\n");
  REQUIRE(::symlink((t / "outside").c_str(), (t / "d/link").c_str()) == 0);
  REQUIRE(::mkfifo((t / "d/fifo").c_str(), 0600) == 0);
  UniqueFd dir(::open((t / "d").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(dir);
  CHECK(read_state_file(dir.get(), "limits") == std::optional<std::string>("0=1Gi\n"));
  CHECK(read_state_file(dir.get(), "missing") == std::nullopt);
  CHECK(read_state_file(dir.get(), "link") == std::nullopt);
  CHECK(read_state_file(dir.get(), "fifo") == std::optional<std::string>(""));
  CHECK_THROWS_AS(read_state_file(dir.get(), "big"), Error);
}

TEST_CASE("state dir: collect_stale_now_and_then looks once per interval", "[state]") {
  TempDir t;
  const std::string state = t / "state";
  const std::string marker = state + "/" + kStaleCollected;
  const std::chrono::seconds minute{60};
  in_dead_process([&] { make(state, "gone1"); });
  CHECK(collect_stale_now_and_then(state, minute) == std::vector<std::string>{"gone1"}); // never looked
  REQUIRE(exists(marker));

  in_dead_process([&] { make(state, "gone2"); });
  CHECK(collect_stale_now_and_then(state, minute).empty()); // looked a moment ago
  CHECK(exists(state + "/containers/gone2"));

  // A minute later (the marker made older), or after the clock was set back
  // (a marker in the future), it looks again.
  timespec times[2] = {{0, UTIME_OMIT}, {::time(nullptr) - 61, 0}};
  REQUIRE(::utimensat(AT_FDCWD, marker.c_str(), times, 0) == 0);
  CHECK(collect_stale_now_and_then(state, minute) == std::vector<std::string>{"gone2"});
  in_dead_process([&] { make(state, "gone3"); });
  times[1] = {::time(nullptr) + 3600, 0};
  REQUIRE(::utimensat(AT_FDCWD, marker.c_str(), times, 0) == 0);
  CHECK(collect_stale_now_and_then(state, minute) == std::vector<std::string>{"gone3"});

  // A marker that is another name of some other file is not touched (that
  // file's mtime stays); the look happens all the same.
  REQUIRE(::unlink(marker.c_str()) == 0);
  const std::string other = t / "other-file";
  t.write("other-file", "x");
  times[1] = {::time(nullptr) - 3600, 0};
  REQUIRE(::utimensat(AT_FDCWD, other.c_str(), times, 0) == 0);
  REQUIRE(::link(other.c_str(), marker.c_str()) == 0);
  in_dead_process([&] { make(state, "gone4"); });
  CHECK(collect_stale_now_and_then(state, minute) == std::vector<std::string>{"gone4"});
  struct stat st {};
  REQUIRE(::stat(other.c_str(), &st) == 0);
  CHECK(st.st_mtim.tv_sec == times[1].tv_sec);

  // No state dir yet: nothing to look at, and nothing made.
  CHECK(collect_stale_now_and_then(t / "nothing-here", minute).empty());
  CHECK_FALSE(exists(t / "nothing-here"));
}
