// The image's glibc, read from its libc.so.6 as hostile data: the version
// names it defines, the floor check at create, malformed files refused
// without a crash.
#include "gpuslice/common/error.hpp"
#include "gpuslice/create/image.hpp"

#include "tempdir.hpp"

#include <catch2/catch.hpp>

#include <elf.h>
#include <gnu/libc-version.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace gpuslice;
using namespace gpuslice::create;
using gpuslice::testing::TempDir;

namespace {

template <typename T> void put(std::string &out, std::size_t at, const T &value) {
  if (out.size() < at + sizeof(T))
    out.resize(at + sizeof(T), '\0');
  std::memcpy(out.data() + at, &value, sizeof(T));
}

// A minimal ELF64 with a string table and a version definition section
// naming `versions`: what a libc.so.6 looks like to the reader.
std::string elf_defining(const std::vector<std::string> &versions) {
  std::string strtab(1, '\0');
  std::vector<Elf64_Word> name_at;
  for (const auto &v : versions) {
    name_at.push_back(Elf64_Word(strtab.size()));
    strtab += v + '\0';
  }
  std::string out;
  const std::size_t strtab_at = sizeof(Elf64_Ehdr);
  out.resize(strtab_at);
  out += strtab;
  const std::size_t verdef_at = (out.size() + 7) & ~std::size_t(7);
  const std::size_t entry = sizeof(Elf64_Verdef) + sizeof(Elf64_Verdaux);
  for (std::size_t i = 0; i < versions.size(); ++i) {
    Elf64_Verdef vd{};
    vd.vd_version = VER_DEF_CURRENT;
    vd.vd_ndx = Elf64_Half(i + 2);
    vd.vd_cnt = 1;
    vd.vd_aux = sizeof(Elf64_Verdef);
    vd.vd_next = i + 1 < versions.size() ? Elf64_Word(entry) : 0;
    put(out, verdef_at + i * entry, vd);
    Elf64_Verdaux aux{};
    aux.vda_name = name_at[i];
    put(out, verdef_at + i * entry + sizeof(Elf64_Verdef), aux);
  }
  out.resize(verdef_at + versions.size() * entry);
  const std::size_t shoff = (out.size() + 7) & ~std::size_t(7);
  Elf64_Shdr sh[3]{};
  sh[1].sh_type = SHT_STRTAB;
  sh[1].sh_offset = strtab_at;
  sh[1].sh_size = strtab.size();
  sh[2].sh_type = SHT_GNU_verdef;
  sh[2].sh_offset = verdef_at;
  sh[2].sh_size = versions.size() * entry;
  sh[2].sh_link = 1;
  sh[2].sh_info = Elf64_Word(versions.size());
  for (int i = 0; i < 3; ++i)
    put(out, shoff + i * sizeof(Elf64_Shdr), sh[i]);
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_DYN;
  eh.e_version = EV_CURRENT;
  eh.e_shoff = shoff;
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = 3;
  put(out, 0, eh);
  return out;
}

std::string host_libc_bytes() {
  for (const char *p : {"/lib/x86_64-linux-gnu/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6", "/lib64/libc.so.6"}) {
    std::ifstream in(p, std::ios::binary);
    if (in) {
      std::ostringstream s;
      s << in.rdbuf();
      return s.str();
    }
  }
  FAIL("no libc.so.6 on this host");
  return {};
}

const std::vector<std::string> kOldGlibc = {"GLIBC_2.2.5", "GLIBC_2.3", "GLIBC_2.12"}; // CentOS 6
const std::vector<std::string> kGlibc231 = {"GLIBC_2.2.5", "GLIBC_2.17", "GLIBC_2.30"};

} // namespace

TEST_CASE("the host's own libc defines the floor and its release", "[image_glibc]") {
  const auto versions = glibc_versions_defined(host_libc_bytes(), "host libc");
  CHECK(std::find(versions.begin(), versions.end(), "GLIBC_2.17") != versions.end());
  CHECK(std::find(versions.begin(), versions.end(), "GLIBC_2.2.5") != versions.end());
  // glibc >= 2.34 on every machine that builds this
  const std::string newest = newest_glibc_version(versions);
  CHECK(newest >= std::string("GLIBC_2.34"));
  CHECK(newest.substr(0, 9) == "GLIBC_2.3");
  CHECK(std::string(gnu_get_libc_version()).substr(0, 3) == "2.3");
}

TEST_CASE("version names come back as the file defines them, compared as numbers", "[image_glibc]") {
  CHECK(glibc_versions_defined(elf_defining(kGlibc231), "x") == kGlibc231);
  CHECK(newest_glibc_version({"GLIBC_2.2.5", "GLIBC_2.17", "GLIBC_2.9"}) == "GLIBC_2.17");
  CHECK(newest_glibc_version({"GLIBC_2.3.4", "GLIBC_2.3"}) == "GLIBC_2.3.4");
  CHECK(newest_glibc_version({}).empty());
  // other names (GLIBC_PRIVATE, the soname's own node) are not versions
  CHECK(glibc_versions_defined(elf_defining({"libc.so.6", "GLIBC_PRIVATE", "GLIBC_2.17"}), "x") ==
        std::vector<std::string>{"GLIBC_2.17"});
}

TEST_CASE("an image older than the floor fails at create, naming its glibc and the floor", "[image_glibc]") {
  TempDir root;
  root.write("lib64/libc-2.12.so", elf_defining(kOldGlibc));
  std::filesystem::create_directories(root / "lib64");
  // an absolute link, as images have it: resolved inside the rootfs
  std::filesystem::create_symlink("/lib64/libc-2.12.so", root / "lib64/libc.so.6");
  try {
    require_glibc(read_image(root.path()), "2.17");
    FAIL("accepted");
  } catch (const Error &e) {
    const std::string what = e.what();
    CHECK(what.find("/lib64/libc.so.6") != std::string::npos);
    CHECK(what.find("GLIBC_2.12") != std::string::npos);
    CHECK(what.find("older than glibc 2.17") != std::string::npos);
  }
}

TEST_CASE("images at or above the floor, and images without glibc, pass", "[image_glibc]") {
  TempDir at_floor;
  at_floor.write("lib/x86_64-linux-gnu/libc.so.6", elf_defining(kGlibc231));
  at_floor.write("lib/aarch64-linux-gnu/libc.so.6", elf_defining(kGlibc231));
  CHECK_NOTHROW(require_glibc(read_image(at_floor.path()), "2.17"));
  TempDir static_only;
  static_only.write("bin/busybox", "not a libc");
  CHECK_NOTHROW(require_glibc(read_image(static_only.path()), "2.17"));
}

TEST_CASE("a libc link that climbs out of the image is resolved inside it", "[image_glibc][hostile]") {
  // Followed on the host, the link would reach the host's (new) libc and
  // pass; inside the image it reaches the image's old one.
  TempDir root;
  root.write("lib/x86_64-linux-gnu/libc.so.6", elf_defining(kOldGlibc));
  root.write("lib/aarch64-linux-gnu/libc.so.6", elf_defining(kOldGlibc));
  std::filesystem::create_directories(root / "lib64");
  std::filesystem::create_symlink("../../../../../../../lib/" + std::string(
#if defined(__aarch64__)
                                      "aarch64"
#else
                                      "x86_64"
#endif
                                      ) + "-linux-gnu/libc.so.6",
                                  root / "lib64/libc.so.6");
  CHECK_THROWS_WITH(require_glibc(read_image(root.path()), "2.17"), Catch::Contains("GLIBC_2.12"));
}

TEST_CASE("a hostile libc.so.6 is refused with an Error, never read out of bounds", "[image_glibc][hostile]") {
  const std::string good = elf_defining(kGlibc231);
  // every truncation
  for (std::size_t n = 0; n < good.size(); ++n) {
    INFO("truncated to " << n);
    CHECK_THROWS_AS(glibc_versions_defined(good.substr(0, n), "x"), Error);
  }
  // every single byte changed to 0xff: an Error or a (possibly different) answer
  for (std::size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = char(0xff);
    try {
      (void)glibc_versions_defined(bad, "x");
    } catch (const Error &) {
    }
  }
  TempDir root;
  std::filesystem::create_directories(root / "lib64");
  REQUIRE(::mkfifo((root / "lib64/libc.so.6").c_str(), 0644) == 0);
  CHECK_THROWS_WITH(require_glibc(read_image(root.path()), "2.17"), Catch::Contains("not a regular file"));
  TempDir not_elf;
  not_elf.write("lib64/libc.so.6", "#!/bin/sh\n");
  CHECK_THROWS_WITH(require_glibc(read_image(not_elf.path()), "2.17"), Catch::Contains("/lib64/libc.so.6"));
}
