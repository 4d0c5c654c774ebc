#include "gpuslice/create/image.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/rootfs.hpp"
#include "gpuslice/common/strings.hpp"

#include <elf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace gpuslice::create {

namespace {

// Where the dynamic loader looks by default, 64-bit first.
#if defined(__x86_64__)
constexpr const char *kLibcPaths[] = {"/lib64/libc.so.6", "/usr/lib64/libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6",
                                      "/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib/libc.so.6", "/usr/lib/libc.so.6"};
#elif defined(__aarch64__)
constexpr const char *kLibcPaths[] = {"/lib64/libc.so.6", "/usr/lib64/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6",
                                      "/usr/lib/aarch64-linux-gnu/libc.so.6", "/lib/libc.so.6", "/usr/lib/libc.so.6"};
#else
#error "image.cpp: the loader's default paths of this architecture are not known"
#endif

// The bytes of an ELF file, read where asked: from memory (tests) or with
// pread (an image's libc: only its headers and version section are read).
struct MemoryBytes {
  std::string_view data;
  std::uint64_t size() const { return data.size(); }
  void read(std::uint64_t offset, void *out, std::size_t len, const std::string &) const {
    std::memcpy(out, data.data() + offset, len);
  }
};

struct FileBytes {
  int fd;
  std::uint64_t file_size;
  std::uint64_t size() const { return file_size; }
  void read(std::uint64_t offset, void *out, std::size_t len, const std::string &shown) const {
    std::size_t got = 0;
    while (got < len) {
      const ssize_t n = ::pread(fd, static_cast<char *>(out) + got, len - got, off_t(offset + got));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        throw system_error("cannot read " + shown, n == 0 ? EIO : errno);
      got += std::size_t(n);
    }
  }
};

template <typename Bytes> void check_range(const Bytes &bytes, std::uint64_t offset, std::uint64_t len, const std::string &shown) {
  if (offset > bytes.size() || bytes.size() - offset < len)
    throw Error(shown + ": truncated ELF (offset " + std::to_string(offset) + ")");
}

template <typename T, typename Bytes> T read_at(const Bytes &bytes, std::uint64_t offset, const std::string &shown) {
  check_range(bytes, offset, sizeof(T), shown);
  T value;
  bytes.read(offset, &value, sizeof(T), shown);
  return value;
}

// A section's bytes; version sections and string tables are small.
template <typename Bytes> std::string section_bytes(const Bytes &bytes, const Elf64_Shdr &s, const std::string &shown) {
  check_range(bytes, s.sh_offset, s.sh_size, shown);
  if (s.sh_size > (1u << 20))
    throw Error(shown + ": ELF version section or string table larger than 1 MiB");
  std::string out(s.sh_size, '\0');
  bytes.read(s.sh_offset, out.data(), out.size(), shown);
  return out;
}

std::vector<unsigned> version_numbers(const std::string &v) {
  std::vector<unsigned> out;
  std::size_t i = 0;
  while (i < v.size()) {
    unsigned n = 0;
    while (i < v.size() && v[i] >= '0' && v[i] <= '9' && n < 100000)
      n = n * 10 + unsigned(v[i++] - '0');
    out.push_back(n);
    if (i < v.size())
      ++i; // the dot
  }
  return out;
}

bool is_glibc_version(std::string_view name) {
  constexpr std::string_view prefix = "GLIBC_";
  if (name.substr(0, prefix.size()) != prefix || name.size() == prefix.size() || name.size() > 16)
    return false;
  return std::all_of(name.begin() + prefix.size(), name.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
}

template <typename Bytes> std::vector<std::string> versions_defined(const Bytes &data, const std::string &shown) {
  const auto eh = read_at<Elf64_Ehdr>(data, 0, shown);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB)
    throw Error(shown + " is not a 64-bit little-endian ELF file");
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 || eh.e_shnum > 4096)
    throw Error(shown + ": unexpected ELF section header table");
  auto section = [&](unsigned index) {
    if (index >= eh.e_shnum)
      throw Error(shown + ": ELF section index out of range");
    return read_at<Elf64_Shdr>(data, eh.e_shoff + std::uint64_t(index) * sizeof(Elf64_Shdr), shown);
  };
  std::vector<std::string> names;
  for (unsigned i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr verdef = section(i);
    if (verdef.sh_type != SHT_GNU_verdef)
      continue;
    const std::string defs_bytes = section_bytes(data, verdef, shown);
    const std::string strings_bytes = section_bytes(data, section(verdef.sh_link), shown);
    const MemoryBytes defs{defs_bytes};
    const std::string_view strings = strings_bytes;
    std::uint64_t at = 0;
    // sh_info is the number of entries; vd_next == 0 ends the chain too.
    for (std::uint64_t n = 0; n < verdef.sh_info && n < 1024; ++n) {
      const auto vd = read_at<Elf64_Verdef>(defs, at, shown);
      if (vd.vd_version != VER_DEF_CURRENT)
        throw Error(shown + ": unknown ELF version definition format");
      if (vd.vd_cnt > 0) {
        const auto aux = read_at<Elf64_Verdaux>(defs, at + vd.vd_aux, shown);
        if (aux.vda_name >= strings.size())
          throw Error(shown + ": ELF version name out of its string table");
        const std::string_view rest = strings.substr(aux.vda_name);
        const std::string_view name = rest.substr(0, rest.find('\0'));
        if (is_glibc_version(name))
          names.emplace_back(name);
      }
      if (vd.vd_next == 0)
        break;
      at += vd.vd_next;
    }
  }
  return names;
}

} // namespace

std::vector<std::string> glibc_versions_defined(std::string_view data, const std::string &shown) {
  return versions_defined(MemoryBytes{data}, shown);
}

std::string newest_glibc_version(const std::vector<std::string> &versions) {
  std::string newest;
  for (const std::string &v : versions)
    if (newest.empty() || version_numbers(v.substr(6)) > version_numbers(newest.substr(6)))
      newest = v;
  return newest;
}

ImageFacts read_image(const std::string &rootfs) {
  ImageFacts image;
  image.etc = rootfs::kind_in_root(rootfs, "/etc");
  image.run = rootfs::kind_in_root(rootfs, "/run");
  image.run_gpuslice = rootfs::kind_in_root(rootfs, "/run/gpuslice");
  image.preload = rootfs::kind_in_root(rootfs, "/etc/ld.so.preload");
  if (image.preload == rootfs::PathKind::regular)
    image.preload_text = with_context("image file /etc/ld.so.preload", [&] {
      return rootfs::read_file_in_root(rootfs, "/etc/ld.so.preload", kMaxImagePreloadSize, rootfs::Resolver::walk);
    });
  for (const char *path : kLibcPaths) {
    std::optional<UniqueFd> fd = rootfs::open_regular_in_root(rootfs, path);
    if (!fd)
      continue;
    const std::string shown = "the image's " + quote(path);
    struct stat st {};
    if (::fstat(fd->fd, &st) != 0)
      throw system_error("cannot stat " + shown);
    image.libc_path = path;
    image.glibc_versions = versions_defined(FileBytes{fd->fd, std::uint64_t(st.st_size)}, shown);
    break;
  }
  return image;
}

void require_glibc(const ImageFacts &image, const std::string &floor) {
  if (image.libc_path.empty() ||
      std::find(image.glibc_versions.begin(), image.glibc_versions.end(), "GLIBC_" + floor) != image.glibc_versions.end())
    return;
  const std::string newest = newest_glibc_version(image.glibc_versions);
  throw Error("the image's glibc (" + image.libc_path + ", newest symbol version " +
              (newest.empty() ? std::string("none") : newest) + ") is older than glibc " + floor +
              ", the oldest that gpuslice's interposer loads in: every program of this container would fail "
              "to start. Use an image with glibc " + floor + " or later, or a device without limits");
}

} // namespace gpuslice::create
