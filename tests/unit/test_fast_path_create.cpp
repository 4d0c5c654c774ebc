// A create with devices done by the entry from a plan (shim/fast_path/
// create_plan.h): the plan the full program writes is the plan the entry
// reads, and each of the entry's decisions around it is the full
// program's. tests/integration/test_fast_path.py runs such creates.
#include "gpuslice/cdi/apply.hpp"
#include "gpuslice/common/config.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/json_text.hpp"
#include "gpuslice/common/log.hpp"
#include "gpuslice/common/strings.hpp"
#include "gpuslice/shim/bundle.hpp"
#include "gpuslice/shim/create_plan.hpp"
#include "gpuslice/shim/exec_env.hpp"
#include "gpuslice/state/container_dir.hpp"
#include "gpuslice/shim/requests.hpp"

#include "../../shim/fast_path/create_plan.h"
#include "../../shim/fast_path/fast_path.h"
#include "tempdir.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <utime.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

using namespace gpuslice;
using cdi::OciSpec;

namespace {

const struct timespec kNow {2000000000, 0};

cdi::HostNode host_node(const std::string &path) {
  if (path == "/host/missing")
    throw Error("no such node");
  return {"c", 195, path == "/host/nvidia1" ? 1 : 0, 0660};
}

// A spec dir with one spec file, both made long before kNow.
struct SpecDir {
  testing::TempDir dir;
  std::string file = dir.path() + "/gpu.json";
  SpecDir() {
    fs::write_file_atomic(file, "{}", 0644);
    const struct utimbuf old{1000000000, 1000000000};
    ::utime(file.c_str(), &old);
    ::utime(dir.path().c_str(), &old);
  }
};

shim::CreatePlanFacts facts_for(const std::string &spec_dir) {
  shim::CreatePlanFacts f;
  f.devices = "nvidia.com/gpu=0,nvidia.com/gpu=1";
  f.prefixes = {"cdi.k8s.io/", "example.com/"};
  f.spec_dirs = {spec_dir, spec_dir + "/absent"};
  f.edits.env = {"NVIDIA_VISIBLE_DEVICES=0,1", "QUOTED=\"x\"\\y"};
  cdi::DeviceNode complete;
  complete.path = "/dev/nvidiactl";
  complete.type = "c";
  complete.major = 195;
  complete.minor = 255;
  complete.file_mode = 0666;
  cdi::DeviceNode from_host;
  from_host.path = "/dev/nvidia1";
  from_host.host_path = "/host/nvidia1";
  from_host.permissions = "rw";
  from_host.gid = 44;
  cdi::DeviceNode mode_from_host = complete;
  mode_from_host.path = "/dev/nvidia-uvm";
  mode_from_host.host_path = "/host/missing";
  mode_from_host.file_mode.reset();
  f.edits.device_nodes = {complete, from_host, mode_from_host};
  cdi::Mount m;
  m.container_path = "/usr/lib/libcuda.so.1";
  m.host_path = "/host/libcuda.so.1";
  m.options = {"ro", "bind"};
  f.edits.mounts = {m};
  cdi::Hook h;
  h.hook_name = "createContainer";
  h.path = "/usr/bin/nvidia-cdi-hook";
  h.args = {"nvidia-cdi-hook", "update-ldcache"};
  h.timeout = 5;
  f.edits.hooks = {h};
  f.cdi_env = "[\"NVIDIA_VISIBLE_DEVICES=0,1\"]";
  return f;
}

const shim::CreatePlanContext kContext{"0123456789abcdef", "/etc/gpuslice/config.toml", std::string("[cdi]\n"),
                                       "/var/log/gpuslice/gpuslice-runtime.log"};

} // namespace

TEST_CASE("fast path create: the plan the full program writes is the plan the entry reads", "[fast-path]") {
  SpecDir specs;
  const auto f = facts_for(specs.dir.path());
  const auto text = shim::create_plan_text(f, kContext, host_node, kNow);
  REQUIRE(text);
  std::string buf = *text + '\0';
  gpuslice_fp_plan plan{};
  REQUIRE(gpuslice_fp_parse_plan(buf.data(), text->size(), &plan) == 0);
  CHECK(std::string(plan.writer) == kContext.writer);
  CHECK(std::string(plan.config_path) == kContext.config_path);
  char digest[17];
  gpuslice_fp_digest("[cdi]\n", 6, digest);
  CHECK(std::string(plan.config_digest) == digest);
  CHECK(std::string(plan.devices) == f.devices);
  REQUIRE(plan.prefixes == 2);
  CHECK(std::string(plan.prefix[1]) == "example.com/");
  REQUIRE(plan.spec_dirs == 2);
  struct stat st {};
  REQUIRE(::stat(specs.file.c_str(), &st) == 0);
  CHECK((plan.spec_dir[0].absent == 0 && plan.spec_dir[0].mtime_sec == 1000000000 && plan.spec_dir[1].absent == 1));
  REQUIRE(plan.spec_files == 1);
  CHECK((std::string(plan.spec_file[0].path) == specs.file && plan.spec_file[0].ino == st.st_ino &&
         plan.spec_file[0].size == 2 && plan.spec_file[0].ctime_sec == static_cast<unsigned long long>(st.st_ctim.tv_sec)));
  // The host nodes looked at: nvidia1's for all it lacked, the missing one for a mode.
  REQUIRE(plan.host_nodes == 2);
  CHECK((std::string(plan.host_node[0].path) == "/host/missing" && plan.host_node[0].type == 0));
  CHECK((std::string(plan.host_node[1].path) == "/host/nvidia1" && plan.host_node[1].type == 'c' &&
         plan.host_node[1].minor == 1 && plan.host_node[1].mode == 0660));
  CHECK(std::string(plan.log_file) == kContext.log_file);
  CHECK(std::string(plan.cdi_env) == f.cdi_env);
  REQUIRE(plan.edits.device_count == 3);
  const auto &d = plan.edits.devices[1];
  CHECK((std::string(d.path) == "/dev/nvidia1" && d.type == 'c' && d.major == 195 && d.minor == 1 &&
         d.file_mode == 0660 && d.uid == -1 && d.gid == 44 && std::string(d.access) == "rw"));
  CHECK((plan.edits.devices[2].file_mode == -1 && std::string(plan.edits.devices[2].access) == "rwm"));
  REQUIRE(plan.edits.env_count == 2);
  CHECK((std::string(plan.edits.env[1].key) == "QUOTED" && OciSpec::parse(plan.edits.env[1].json) == f.edits.env[1]));
  REQUIRE((plan.edits.mount_count == 1 && plan.edits.hook_count == 1));
  CHECK(OciSpec::parse(plan.edits.mounts[0].json) == cdi::mount_object(f.edits.mounts[0]));
  CHECK((std::string(plan.edits.hooks[0].key) == "createContainer" &&
         OciSpec::parse(plan.edits.hooks[0].json) == cdi::hook_object(f.edits.hooks[0])));
  // The entry's edits from the plan are apply_edits' own.
  const std::string runc = fs::read_file(GPUSLICE_SOURCE_DIR "/tests/data/runc-spec/config.json");
  OciSpec expected = parse_json<OciSpec>(runc);
  cdi::apply_edits(expected, f.edits, host_node);
  std::vector<gpuslice_fp_json_node> nodes(4096);
  const int count = gpuslice_fp_json_parse(runc.data(), runc.size(), nodes.data(), 4096, 32);
  std::string out(runc.size() + 8192, '\0');
  std::vector<int> work(4096);
  const long n = gpuslice_fp_apply_edits(runc.data(), nodes.data(), count, &plan.edits, out.data(), out.size(),
                                         work.data(), work.size());
  REQUIRE(n > 0);
  out.resize(static_cast<std::size_t>(n));
  CHECK(parse_json<OciSpec>(out) == expected);
  // And the name: FNV-1a of the config path, a newline and the devices.
  CHECK(shim::create_plan_name("/c", "a=b") == std::string("create-") + [] {
          char name[17];
          gpuslice_fp_record_name("/c\na=b", name);
          return std::string(name);
        }());
}

TEST_CASE("fast path create: no plan where the entry could not do the create", "[fast-path]") {
  SpecDir specs;
  const auto base = facts_for(specs.dir.path());
  CHECK(shim::create_plan_text(base, kContext, host_node, kNow));
  auto with = [&](auto change) {
    auto f = base;
    change(f);
    return shim::create_plan_text(f, kContext, host_node, kNow).has_value();
  };
  CHECK(!with([](auto &f) { f.edits.net_devices.push_back({"eth1", "net0"}); }));
  CHECK(!with([](auto &f) { f.edits.additional_gids.push_back(5); }));
  CHECK(!with([](auto &f) { f.edits.device_nodes[0].path = "/dev/\"q\""; }));    // needs an escape
  CHECK(!with([](auto &f) { f.edits.device_nodes[0].major = -1; }));
  CHECK(!with([](auto &f) { f.edits.mounts[0].container_path = "/a\tb"; }));
  CHECK(!with([](auto &f) { f.edits.env.push_back("BAD\"KEY=1"); }));
  CHECK(!with([](auto &f) { f.edits.env.push_back("NOT_UTF8=\xff"); }));
  CHECK(!with([](auto &f) { f.edits.device_nodes[1].host_path = "/host/missing"; })); // the create fails on it
  CHECK(!with([](auto &f) { f.spec_dirs = {"/proc/self/fd/0/x"}; }));                // not to be stat'd
  // A spec file changed in the last two seconds.
  CHECK(!shim::create_plan_text(base, kContext, host_node, {1000000001, 0}));
  ::utime(specs.file.c_str(), nullptr); // its ctime is now, whatever its mtime
  const struct utimbuf old{1000000000, 1000000000};
  ::utime(specs.file.c_str(), &old);
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  CHECK(!shim::create_plan_text(base, kContext, host_node, now));
}

TEST_CASE("fast path create: a plan not exactly the format is refused", "[fast-path]") {
  SpecDir specs;
  const std::string good = *shim::create_plan_text(facts_for(specs.dir.path()), kContext, host_node, kNow);
  auto parses = [](std::string text) {
    static gpuslice_fp_plan plan;
    const std::size_t size = text.size();
    text += '\0';
    return gpuslice_fp_parse_plan(text.data(), size, &plan) == 0;
  };
  CHECK(parses(good));
  CHECK(!parses(good.substr(0, good.size() - 4)));                     // no "end"
  CHECK(!parses(good + "x\n"));                                          // after it
  CHECK(!parses("gpuslice-runtime create plan 2\n" + good.substr(31))); // another format
  std::string extra = good;
  extra.insert(extra.find("log\t"), "unknown\tx\n");
  CHECK(!parses(extra));
  std::string field = good; // one more field on the log's line
  field.insert(field.find('\n', field.find("\nlog\t") + 1), "\tx");
  CHECK(!parses(field));
  std::string bad_number = good;
  bad_number.replace(bad_number.find("\t195\t"), 5, "\t1x5\t");
  CHECK(!parses(bad_number));
  std::string many = good;
  for (int i = 0; i <= GPUSLICE_FP_PLAN_MAX_PREFIXES; ++i)
    many.insert(many.find("prefix\t"), "prefix\tp/\n");
  CHECK(!parses(many));
  std::string no_devices = good;
  no_devices.erase(no_devices.find("devices\t"), no_devices.find('\n', no_devices.find("devices\t")) + 1 - no_devices.find("devices\t"));
  CHECK(!parses(no_devices));
}

TEST_CASE("fast path create: the devices asked for by annotation are collect_requests'", "[fast-path]") {
  std::mt19937 random(15);
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(random() % n); };
  const std::vector<std::string> keys = {"cdi.k8s.io/a", "cdi.k8s.io/b", "cdi.k8s.io/", "cdi.k8s.io/\xc3\xa9",
                                         "example.com/x", "other/y", "cdi.k8s.iox", "CDI.k8s.io/z"};
  const std::vector<std::string> names = {"nvidia.com/gpu=0", "nvidia.com/gpu=1", "vendor.com/class=dev-2"};
  Config config;
  config.annotation_prefixes = {"cdi.k8s.io/", "", "example.com/"};
  const char *prefixes[] = {"cdi.k8s.io/", "", "example.com/"};
  int compared = 0;
  for (int round = 0; round < 500; ++round) {
    OciSpec spec = {{"process", {{"env", OciSpec::array()}}}};
    if (pick(8)) {
      spec["annotations"] = OciSpec::object();
      for (std::size_t i = pick(5); i > 0; --i) {
        std::string value;
        for (std::size_t j = 1 + pick(3); j > 0; --j)
          value += (value.empty() ? "" : ",") + names[pick(names.size())];
        spec["annotations"][keys[pick(keys.size())]] = pick(6) ? OciSpec(value) : OciSpec(7);
      }
    }
    const std::string text = spec.dump();
    std::vector<gpuslice_fp_json_node> nodes(256);
    REQUIRE(gpuslice_fp_json_parse(text.data(), text.size(), nodes.data(), 256, 32) > 0);
    char out[1024];
    const long n = gpuslice_fp_requested_devices(text.data(), nodes.data(), prefixes, 3, out, sizeof out);
    REQUIRE(n >= 0);
    shim::Requests r = shim::collect_requests(spec, config);
    INFO(text);
    CHECK(std::string(out, static_cast<std::size_t>(n)) == join(r.devices, ","));
    CHECK(r.from_annotations == r.devices.size());
    compared += n > 0;
  }
  CHECK(compared > 200); // the rest ask for nothing
  // An escape in a value: the full program's to read; too small a buffer: the same.
  const std::string escaped = R"({"annotations":{"cdi.k8s.io/a":"nvidia.com\/gpu=0"}})";
  std::vector<gpuslice_fp_json_node> nodes(16);
  REQUIRE(gpuslice_fp_json_parse(escaped.data(), escaped.size(), nodes.data(), 16, 8) > 0);
  char out[64];
  CHECK(gpuslice_fp_requested_devices(escaped.data(), nodes.data(), prefixes, 3, out, sizeof out) == -1);
  const std::string plain = R"({"annotations":{"cdi.k8s.io/a":"nvidia.com/gpu=0"}})";
  REQUIRE(gpuslice_fp_json_parse(plain.data(), plain.size(), nodes.data(), 16, 8) > 0);
  CHECK(gpuslice_fp_requested_devices(plain.data(), nodes.data(), prefixes, 3, out, 8) == -1);
  CHECK(gpuslice_fp_requested_devices(plain.data(), nodes.data(), prefixes, 3, out, sizeof out) == 16);
  // Bounded work: more annotations of a prefix, or more devices named, than a request has.
  auto devices_of = [&](const OciSpec &spec) {
    const std::string text = spec.dump();
    std::vector<gpuslice_fp_json_node> many(2048);
    REQUIRE(gpuslice_fp_json_parse(text.data(), text.size(), many.data(), 2048, 8) > 0);
    char list[8192];
    return gpuslice_fp_requested_devices(text.data(), many.data(), prefixes, 3, list, sizeof list);
  };
  OciSpec spec = {{"annotations", OciSpec::object()}};
  for (int i = 0; i < GPUSLICE_FP_MAX_REQUEST_ANNOTATIONS; ++i)
    spec["annotations"]["cdi.k8s.io/a" + std::to_string(i)] = "nvidia.com/gpu=0";
  CHECK(devices_of(spec) == 16);
  spec["annotations"]["cdi.k8s.io/last"] = "nvidia.com/gpu=0";
  CHECK(devices_of(spec) == -1);
  std::string repeated = "nvidia.com/gpu=0";
  for (int i = 1; i < GPUSLICE_FP_MAX_REQUESTED_DEVICES; ++i)
    repeated += ",nvidia.com/gpu=0";
  CHECK(devices_of(OciSpec{{"annotations", {{"cdi.k8s.io/a", repeated}}}}) == 16);
  CHECK(devices_of(OciSpec{{"annotations", {{"cdi.k8s.io/a", repeated + ",x"}}}}) == -1);
}

TEST_CASE("fast path create: what else in a config.json leaves the create to the full program", "[fast-path]") {
  const char *triggers[] = {"GPUSLICE_MEMORY_LIMIT", "NVIDIA_VISIBLE_DEVICES"};
  auto doubts = [&](const std::string &text) {
    std::vector<gpuslice_fp_json_node> nodes(256);
    REQUIRE(gpuslice_fp_json_parse(text.data(), text.size(), nodes.data(), 256, 32) > 0);
    return gpuslice_fp_create_doubts(text.data(), text.size(), nodes.data(), triggers, 2) == 1;
  };
  CHECK(!doubts(R"({"process":{"env":["A=1"]},"linux":{"devices":[{"path":"/dev/x"},{"path":null},{}]}})"));
  CHECK(doubts(R"([])"));
  CHECK(doubts(R"({"process":{"env":["GPUSLICE_MEMORY_LIMIT=1Gi"]}})"));
  CHECK(doubts(R"({"annotations":{"x":"NVIDIA_VISIBLE_DEVICES"}})")); // anywhere: on doubt
  CHECK(doubts(R"({"process":{"env":["A=\u0031"]}})"));
  CHECK(doubts(R"({"process":{"selinuxLabel":"x"}})"));
  CHECK(doubts(R"({"linux":{"mountLabel":"x"}})"));
  CHECK(doubts(R"({"linux":{"devices":[{"path":"nvidia.com/gpu=0"}]}})"));
  CHECK(doubts(R"({"linux":{"devices":[{"path":"\/dev\/x"}]}})"));
  CHECK(doubts(R"({"linux":{"devices":[{"path":7}]}})"));
}

TEST_CASE("fast path create: the id and pid file of a create, as the full program reads them", "[fast-path]") {
  auto args = [](std::vector<const char *> line, const char **id, const char **pid_file) {
    return gpuslice_fp_create_args(static_cast<int>(line.size()), const_cast<char *const *>(line.data()), 1, id,
                                   pid_file);
  };
  const char *id, *pid_file;
  REQUIRE(args({"rt", "create", "--bundle", "/b", "--pid-file", "/p1", "--pid-file=/p2", "-d", "c1"}, &id, &pid_file) == 0);
  CHECK((std::string(id) == "c1" && std::string(pid_file) == "/p2"));
  REQUIRE(args({"rt", "create", "c2", "--console-socket", "/s"}, &id, &pid_file) == 0);
  CHECK((std::string(id) == "c2" && pid_file == nullptr));
  CHECK(args({"rt", "create", "--no-such-flag", "c3"}, &id, &pid_file) == -1);
  CHECK(args({"rt", "create", "c4", "c5"}, &id, &pid_file) == -1);
  CHECK(args({"rt", "create", "--pid-file"}, &id, &pid_file) == -1);
}

TEST_CASE("fast path create: clean absolute paths and the log's time, as fs and log write them", "[fast-path]") {
  for (const char *p : {"/", "/a", "/a/b.pid", "/a/b/", "//a", "/a//b", "/./a", "/a/..", "/a/../b", "a/b", "", "/..a", "/a."}) {
    INFO(p);
    CHECK(gpuslice_fp_clean_absolute_path(p) == (p[0] == '/' && fs::clean_path(p) == p));
  }
  std::mt19937_64 random(15);
  for (int i = 0; i < 2000; ++i) {
    const struct timespec t{static_cast<time_t>(random() % 8000000000ll), static_cast<long>(random() % 1000000000)};
    char out[25];
    gpuslice_fp_utc_timestamp(t.tv_sec, t.tv_nsec, out);
    REQUIRE(std::string(out) == log::utc_timestamp(t));
  }
}

TEST_CASE("fast path create: the state dir's names and texts are the state library's", "[fast-path]") {
  // What the entry writes without the state library, held to it: a dir the
  // library made, and its constants.
  testing::TempDir root;
  const state::ContainerDir dir = state::create_container_dir(root.path(), "c1");
  CHECK(fs::read_file(dir.path + "/" GPUSLICE_FP_STATE_FORMAT_FILE, 64) == GPUSLICE_FP_STATE_FORMAT_TEXT);
  CHECK(std::string(state::kStaleCollectedRecord) == GPUSLICE_FP_STALE_COLLECTED);
  CHECK(shim::kStaleCollectionInterval == std::chrono::seconds(GPUSLICE_FP_STALE_INTERVAL));
  CHECK(std::string(shim::kCdiEnvFile) == GPUSLICE_FP_CDI_ENV_FILE);
  CHECK(std::string(shim::kCreatePlanDir) == GPUSLICE_FP_PLAN_DIR);
  CHECK(gpuslice_fp_plain_state_file(GPUSLICE_FP_STATE_FORMAT_FILE) == 1);
  CHECK(gpuslice_fp_plain_state_file(GPUSLICE_FP_CDI_ENV_FILE) == 1);
  // A temporary of create_container_dir's, of a create killed half-way, is
  // collected as such: the entry's are named the same.
  const std::string temp = root.path() + "/containers/" GPUSLICE_FP_STATE_TEMP_PREFIX "999999-c2";
  ::mkdir(temp.c_str(), 0700);
  state::collect_stale(root.path());
  CHECK(!std::filesystem::exists(temp));
  // And a config.json's temporary is tidied as write_file_atomic's are.
  const std::string bundle = root.path() + "/bundle";
  ::mkdir(bundle.c_str(), 0700);
  fs::write_file_atomic(bundle + "/config.json", "{}", 0644);
  const std::string leftover = bundle + "/config.json" GPUSLICE_FP_TEMP_MARKER "999999.7";
  fs::write_file_atomic(leftover, "{}", 0644);
  fs::remove_stale_temporaries(bundle + "/config.json");
  CHECK(!std::filesystem::exists(leftover));
}

TEST_CASE("fast path create: a limit of gpushare's in the env is a trigger where the config reads it", "[fast-path]") {
  // The entry hands a create over when a trigger that is no annotation
  // prefix is in config.json: container_limits reads this one.
  Config config;
  const auto has = [](const std::vector<std::string> &v, const char *s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  CHECK(!has(shim::create_triggers(config), "ALIYUN_COM_GPU_MEM_CONTAINER"));
  config.accept_gpushare_env = true;
  CHECK(has(shim::create_triggers(config), "ALIYUN_COM_GPU_MEM_CONTAINER"));
}
