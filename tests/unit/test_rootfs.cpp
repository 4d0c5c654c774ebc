#include "gpuslice/common/error.hpp"
#include "gpuslice/common/rootfs.hpp"

#include "tempdir.hpp"

#include <catch2/catch.hpp>

#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <thread>

using namespace gpuslice;
using gpuslice::testing::TempDir;

TEST_CASE("rootfs: symlinks and .. stay inside the root, with openat2 and with the walk", "[common][rootfs]") {
  TempDir t;
  t.write("host-secret", "HOST");
  t.write("root/etc/ld.so.preload", "/lib/inside.so\n");
  t.write("root/etc/real", "REAL");
  t.write("root/host-secret", "INSIDE");
  ::mkdir((t / "root/dir").c_str(), 0755);
  const std::string root = t / "root";
  // Absolute, relative and ..-escaping links all land inside the root.
  REQUIRE(::symlink((t / "host-secret").c_str(), (root + "/etc/abs").c_str()) == 0);    // host path as absolute target
  REQUIRE(::symlink("../../../../host-secret", (root + "/etc/rel").c_str()) == 0);      // climbs out
  REQUIRE(::symlink("real", (root + "/etc/sibling").c_str()) == 0);
  REQUIRE(::symlink("/etc", (root + "/dir/etclink").c_str()) == 0);
  REQUIRE(::symlink("loop", (root + "/etc/loop").c_str()) == 0);
  for (auto resolver : {rootfs::Resolver::automatic, rootfs::Resolver::walk}) {
    CAPTURE(resolver == rootfs::Resolver::walk);
    CHECK(rootfs::read_file_in_root(root, "/etc/ld.so.preload", 4096, resolver) == "/lib/inside.so\n");
    CHECK(rootfs::read_file_in_root(root, "/etc/sibling", 4096, resolver) == "REAL");
    CHECK(rootfs::read_file_in_root(root, "/dir/etclink/real", 4096, resolver) == "REAL");
    CHECK(rootfs::read_file_in_root(root, "/../../etc/real", 4096, resolver) == "REAL");
    // The host file is never read: the link resolves to the root's own copy
    // (or to nothing), never to "HOST".
    CHECK(rootfs::read_file_in_root(root, "/etc/rel", 4096, resolver) == "INSIDE");
    auto abs = rootfs::read_file_in_root(root, "/etc/abs", 4096, resolver);
    CHECK(abs != std::optional<std::string>("HOST"));
    CHECK_FALSE(rootfs::read_file_in_root(root, "/etc/missing", 4096, resolver).has_value());
    CHECK_THROWS_AS(rootfs::read_file_in_root(root, "/etc/loop", 4096, resolver), Error);
    CHECK_THROWS_WITH(rootfs::read_file_in_root(root, "/dir", 4096, resolver), Catch::Contains("not a regular file"));
    CHECK_THROWS_WITH(rootfs::read_file_in_root(root, "/etc/real", 2, resolver), Catch::Contains("larger than"));
  }
}

TEST_CASE("rootfs: renames elsewhere on the node do not fail a lookup through ..", "[common][rootfs]") {
  // openat2 answers EAGAIN when any rename happens while it resolves "..":
  // on a busy node (containers starting, package updates) that is often.
  TempDir t;
  t.write("root/etc/real", "REAL");
  REQUIRE(::symlink("../../../../etc/real", (t / "root/etc/climbing").c_str()) == 0);
  t.write("elsewhere/a", "x");
  std::atomic<bool> stop{false};
  std::thread renamer([&] {
    const std::string a = t / "elsewhere/a", b = t / "elsewhere/b";
    while (!stop) {
      ::rename(a.c_str(), b.c_str());
      ::rename(b.c_str(), a.c_str());
    }
  });
  int failures = 0;
  for (int i = 0; i < 3000; ++i) {
    try {
      if (rootfs::read_file_in_root(t / "root", "/etc/climbing", 64) != std::optional<std::string>("REAL"))
        ++failures;
    } catch (const Error &) {
      ++failures;
    }
  }
  stop = true;
  renamer.join();
  CHECK(failures == 0);
}
