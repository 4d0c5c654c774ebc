// gpuslice-hook update-ldcache and its sandbox (hook/sandbox.hpp,
// hook/ldcache.hpp): a static probe shows what a program inside may do;
// the host's ldconfig adds a folder to a root's cache; an image whose /etc
// or ld.so.cache links to the host gets nothing written outside its root.
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/hook/ldcache.hpp"
#include "gpuslice/hook/sandbox.hpp"

#include "namespace_holder.hpp"
#include "tempdir.hpp"

#include <catch2/catch.hpp>

#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>

#include <filesystem>

using namespace gpuslice;
using namespace gpuslice::hook;
using gpuslice::testing::NamespaceHolder;
using gpuslice::testing::TempDir;

namespace {

// A root holding only the probe, at /probe (the sandbox reads it by
// descriptor; the copy shows nothing of the container is needed).
std::string probe_root(const TempDir &t) {
  std::filesystem::create_directories(t / "root");
  return t / "root";
}

std::string host_command(const std::string &command) {
  std::string out;
  FILE *p = ::popen(command.c_str(), "r");
  REQUIRE(p);
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
    out.append(buf, n);
  ::pclose(p);
  return out;
}

// A root with /etc and the test library in /opt/gpu/lib, and a bundle
// naming it.
struct LibRoot {
  explicit LibRoot(const TempDir &t) : rootfs(t / "rootfs"), bundle(t / "bundle") {
    std::filesystem::create_directories(rootfs + "/etc");
    std::filesystem::create_directories(rootfs + "/opt/gpu/lib");
    std::filesystem::copy_file(GPUSLICE_LDTEST_LIB, rootfs + "/opt/gpu/lib/libgpuslice-ldtest.so.1");
    std::filesystem::create_directories(bundle);
    t.write("bundle/config.json", R"({"ociVersion": "1.0.2", "root": {"path": ")" + rootfs + R"("}})");
  }
  ContainerState state(int pid) const {
    ContainerState s;
    s.id = "ldcache-test";
    s.pid = pid;
    s.bundle = bundle;
    return s;
  }
  std::string rootfs, bundle;
};

} // namespace

TEST_CASE("sandbox: what a program inside may do", "[hook][root]") {
  TempDir t;
  const UniqueFd probe = open_static_executable(GPUSLICE_SANDBOX_PROBE);
  SandboxedRun how;
  how.root = probe_root(t);
  how.keep_caps = {CAP_DAC_OVERRIDE};
  // the sandbox's stdout is /dev/null: the probe answers on stderr
  SECTION("its answers") {
    const SandboxResult r = run_sandboxed(how, probe.get(), {"probe", "--to-stderr"});
    CAPTURE(r.stderr_text);
    CHECK(r.exit_code == 0);
    CHECK(r.stderr_text.find("pid=1\n") != std::string::npos);
    CHECK(r.stderr_text.find("cap_eff=2\n") != std::string::npos); // CAP_DAC_OVERRIDE alone
    CHECK(r.stderr_text.find("socket=Operation not permitted\n") != std::string::npos);
    CHECK(r.stderr_text.find("proc=absent\n") != std::string::npos);
    CHECK(r.stderr_text.find("survived\n") != std::string::npos);
  }
  SECTION("mount and exec kill it") {
    for (const char *what : {"mount", "exec"}) {
      CAPTURE(what);
      const SandboxResult r = run_sandboxed(how, probe.get(), {"probe", "--to-stderr", what});
      CHECK(r.signal == SIGSYS);
      CHECK(r.stderr_text.find("survived") == std::string::npos);
    }
  }
}

TEST_CASE("sandbox: only a static program is run", "[hook]") {
  TempDir t;
  CHECK_THROWS_WITH(open_static_executable("/bin/ls"), Catch::Contains("dynamically linked"));
  const std::string script = t.write("script", "#!/bin/sh\necho hi\n");
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  CHECK_THROWS_WITH(open_static_executable(script), Catch::Contains("not a 64-bit ELF"));
  CHECK_THROWS_AS(open_static_executable(t / "missing"), Error);
  CHECK_NOTHROW(open_static_executable(GPUSLICE_SANDBOX_PROBE));
}

TEST_CASE("update-ldcache: the folder goes into the container's cache", "[hook][root]") {
  TempDir t;
  LibRoot root(t);
  NamespaceHolder container;
  update_ldcache(root.state(container.pid()), {"/opt/gpu/lib"});
  const std::string cache = host_command("/sbin/ldconfig -p -C " + root.rootfs + "/etc/ld.so.cache");
  CAPTURE(cache);
  CHECK(cache.find("libgpuslice-ldtest.so.1") != std::string::npos);
  CHECK(cache.find("/opt/gpu/lib/libgpuslice-ldtest.so.1") != std::string::npos);
  CHECK_THROWS_WITH(update_ldcache(root.state(container.pid()), {"opt/gpu"}), Catch::Contains("not an absolute"));
  CHECK_THROWS_WITH(update_ldcache(root.state(container.pid()), {}), Catch::Contains("no --folder"));
  CHECK_THROWS_WITH(update_ldcache(root.state(container.pid()), {"/opt/gpu/lib"}, {"/bin/ls"}),
                    Catch::Contains("no static ldconfig"));
}

TEST_CASE("update-ldcache: links in the image do not lead ldconfig out of the root", "[hook][root]") {
  TempDir t;
  NamespaceHolder container;
  const std::string host_etc = t / "host-etc";
  std::filesystem::create_directories(host_etc);
  const std::string host_cache = t.write("host-ld.so.cache", "the host's cache\n");

  SECTION("/etc/ld.so.cache links to a host file") {
    LibRoot root(t);
    std::filesystem::create_symlink(host_cache, root.rootfs + "/etc/ld.so.cache");
    update_ldcache(root.state(container.pid()), {"/opt/gpu/lib"});
    CHECK(fs::read_file(host_cache) == "the host's cache\n");
    CHECK(std::filesystem::is_regular_file(std::filesystem::symlink_status(root.rootfs + "/etc/ld.so.cache")));
  }
  SECTION("/etc links to a host directory, absolute or climbing") {
    for (const std::string &target : {host_etc, "../../../../../../../.." + host_etc}) {
      LibRoot root(t);
      std::filesystem::remove_all(root.rootfs + "/etc");
      std::filesystem::create_directory_symlink(target, root.rootfs + "/etc");
      try {
        update_ldcache(root.state(container.pid()), {"/opt/gpu/lib"});
      } catch (const Error &) {
        // ldconfig may fail to write where the link leads inside the root
      }
      CHECK(std::filesystem::is_empty(host_etc));
      std::filesystem::remove_all(t / "rootfs");
      std::filesystem::remove_all(t / "bundle");
    }
  }
}
