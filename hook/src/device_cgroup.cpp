#include "gpuslice/hook/device_cgroup.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fd.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/strings.hpp"
#include "gpuslice/shim/cgroup.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <optional>

namespace gpuslice::hook {

namespace {

long bpf(int cmd, bpf_attr &attr) { return ::syscall(SYS_bpf, cmd, &attr, sizeof attr); }

bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
  bpf_insn i{};
  i.code = code;
  i.dst_reg = dst & 0xf;
  i.src_reg = src & 0xf;
  i.off = off;
  i.imm = imm;
  return i;
}

// Byte-for-byte the kernel's own access bits.
uint32_t access_mask(const std::string &access) {
  uint32_t mask = 0;
  for (char c : access)
    mask |= c == 'm' ? BPF_DEVCG_ACC_MKNOD : c == 'r' ? BPF_DEVCG_ACC_READ : c == 'w' ? BPF_DEVCG_ACC_WRITE : 0;
  return mask;
}

UniqueFd open_dir(const std::string &path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd)
    throw system_error("cannot open cgroup " + quote(path));
  return fd;
}

// Where this process sees a hierarchy: cgroup2, or the v1 one holding the
// devices controller.
std::optional<std::string> mount_point(bool v2) {
  const std::string text = fs::read_fd(UniqueFd(::open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC)).get(),
                                       "/proc/self/mountinfo", 16 << 20);
  for (const auto &line : split(text, '\n', EmptyParts::skip)) {
    const auto fields = split(line, ' ', EmptyParts::skip);
    std::size_t dash = 0;
    while (dash < fields.size() && fields[dash] != "-")
      ++dash;
    if (dash < 5 || dash + 3 > fields.size())
      continue;
    const std::string &type = fields[dash + 1];
    if (v2 ? type == "cgroup2"
           : type == "cgroup" && [&] {
               for (const auto &o : split(fields[dash + 3], ',', EmptyParts::skip))
                 if (o == "devices")
                   return true;
               return false;
             }())
      return unescape_mount_field(fields[4]);
  }
  return std::nullopt;
}

std::string joined(const std::string &mount, const std::string &path) {
  for (const auto &c : split(path, '/', EmptyParts::skip))
    if (c == "..")
      throw Error("cgroup path " + quote(path) + " is not clean");
  return fs::clean_path(mount + "/" + path);
}

struct Attached {
  std::vector<uint32_t> ids;
  uint32_t flags = 0;
};

Attached query(int cgroup_fd, bool effective, const std::string &shown) {
  Attached out;
  out.ids.resize(64);
  bpf_attr attr{};
  attr.query.target_fd = static_cast<uint32_t>(cgroup_fd);
  attr.query.attach_type = BPF_CGROUP_DEVICE;
  attr.query.query_flags = effective ? BPF_F_QUERY_EFFECTIVE : 0;
  attr.query.prog_ids = reinterpret_cast<uint64_t>(out.ids.data());
  attr.query.prog_cnt = static_cast<uint32_t>(out.ids.size());
  if (bpf(BPF_PROG_QUERY, attr) != 0)
    throw system_error("cannot list the device programs of cgroup " + quote(shown));
  out.ids.resize(attr.query.prog_cnt);
  out.flags = attr.query.attach_flags;
  return out;
}

std::vector<bpf_insn> instructions_of(int prog_fd, uint32_t id) {
  bpf_prog_info info{};
  bpf_attr attr{};
  attr.info.bpf_fd = static_cast<uint32_t>(prog_fd);
  attr.info.info_len = sizeof info;
  attr.info.info = reinterpret_cast<uint64_t>(&info);
  if (bpf(BPF_OBJ_GET_INFO_BY_FD, attr) != 0)
    throw system_error("cannot read device program " + std::to_string(id));
  std::vector<bpf_insn> insns(info.xlated_prog_len / sizeof(bpf_insn));
  if (insns.empty())
    throw Error("device program " + std::to_string(id) + " shows no instructions (kernel.kptr_restrict?)");
  const uint32_t len = info.xlated_prog_len;
  info = bpf_prog_info{};
  info.xlated_prog_len = len;
  info.xlated_prog_insns = reinterpret_cast<uint64_t>(insns.data());
  attr.info.info_len = sizeof info;
  if (bpf(BPF_OBJ_GET_INFO_BY_FD, attr) != 0)
    throw system_error("cannot read device program " + std::to_string(id));
  return insns;
}

} // namespace

std::string v1_rule_text(const DeviceRule &r) {
  auto number = [](int64_t n) { return n < 0 ? std::string("*") : std::to_string(n); };
  return std::string(1, r.type) + " " + number(r.major) + ":" + number(r.minor) + " " + r.access;
}

std::vector<bpf_insn> allow_prelude(const std::vector<DeviceRule> &rules) {
  std::vector<bpf_insn> p;
  if (rules.empty())
    return p;
  p.reserve(6 + 8 * rules.size());
  // r2 = access bits, r3 = type, r4 = major, r5 = minor (ctx in r1, kept).
  p.push_back(insn(BPF_LDX | BPF_MEM | BPF_W, 2, 1, 0, 0));
  p.push_back(insn(BPF_ALU64 | BPF_MOV | BPF_X, 3, 2, 0, 0));
  p.push_back(insn(BPF_ALU64 | BPF_AND | BPF_K, 3, 0, 0, 0xffff));
  p.push_back(insn(BPF_ALU64 | BPF_RSH | BPF_K, 2, 0, 0, 16));
  p.push_back(insn(BPF_LDX | BPF_MEM | BPF_W, 4, 1, 4, 0));
  p.push_back(insn(BPF_LDX | BPF_MEM | BPF_W, 5, 1, 8, 0));
  for (const auto &r : rules) {
    std::vector<bpf_insn> block;
    block.reserve(8); // the most a rule takes (and it keeps gcc 12's -Wstringop-overflow quiet)
    std::vector<std::size_t> to_next; // jumps to patch to the end of the block
    if (r.type != 'a') {
      to_next.push_back(block.size());
      block.push_back(insn(BPF_JMP | BPF_JNE | BPF_K, 3, 0, 0, r.type == 'b' ? BPF_DEVCG_DEV_BLOCK : BPF_DEVCG_DEV_CHAR));
    }
    if (r.major >= 0) {
      to_next.push_back(block.size());
      block.push_back(insn(BPF_JMP | BPF_JNE | BPF_K, 4, 0, 0, static_cast<int32_t>(r.major)));
    }
    if (r.minor >= 0) {
      to_next.push_back(block.size());
      block.push_back(insn(BPF_JMP | BPF_JNE | BPF_K, 5, 0, 0, static_cast<int32_t>(r.minor)));
    }
    // Any access bit the rule does not grant: not this rule.
    block.push_back(insn(BPF_ALU64 | BPF_MOV | BPF_X, 0, 2, 0, 0));
    block.push_back(insn(BPF_ALU64 | BPF_AND | BPF_K, 0, 0, 0, static_cast<int32_t>(~access_mask(r.access) & 0x7)));
    to_next.push_back(block.size());
    block.push_back(insn(BPF_JMP | BPF_JNE | BPF_K, 0, 0, 0, 0));
    block.push_back(insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 1));
    block.push_back(insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
    for (auto at : to_next)
      block[at].off = static_cast<int16_t>(block.size() - at - 1);
    p.insert(p.end(), block.begin(), block.end());
  }
  return p;
}

int load_device_program(const std::vector<bpf_insn> &insns) {
  static char license[] = "Apache-2.0";
  std::vector<char> log(64 * 1024);
  bpf_attr attr{};
  attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
  attr.insns = reinterpret_cast<uint64_t>(insns.data());
  attr.insn_cnt = static_cast<uint32_t>(insns.size());
  attr.license = reinterpret_cast<uint64_t>(license);
  attr.log_buf = reinterpret_cast<uint64_t>(log.data());
  attr.log_size = static_cast<uint32_t>(log.size());
  attr.log_level = 1;
  const long fd = bpf(BPF_PROG_LOAD, attr);
  if (fd < 0) {
    const int err = errno;
    const std::string verifier(log.data(), ::strnlen(log.data(), log.size()));
    throw system_error("cannot load a device program" +
                           (verifier.empty() ? std::string() : " (verifier: " + verifier.substr(0, 400) + ")"),
                       err);
  }
  return static_cast<int>(fd);
}

void attach_device_program(const std::string &cgroup_dir, int prog_fd, unsigned flags) {
  const UniqueFd cgroup = open_dir(cgroup_dir);
  bpf_attr attr{};
  attr.target_fd = static_cast<uint32_t>(cgroup.get());
  attr.attach_bpf_fd = static_cast<uint32_t>(prog_fd);
  attr.attach_type = BPF_CGROUP_DEVICE;
  attr.attach_flags = flags;
  if (bpf(BPF_PROG_ATTACH, attr) != 0)
    throw system_error("cannot attach a device program to cgroup " + quote(cgroup_dir));
}

void allow_devices_v1(const std::string &cgroup_dir, const std::vector<DeviceRule> &rules) {
  const UniqueFd dir = open_dir(cgroup_dir);
  for (const auto &r : rules) {
    // One write per rule: the kernel takes one rule per write.
    UniqueFd allow(::openat(dir.get(), "devices.allow", O_WRONLY | O_NOFOLLOW | O_CLOEXEC));
    const std::string line = v1_rule_text(r);
    if (!allow || ::write(allow.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()))
      throw system_error("cannot allow " + quote(line) + " in " + quote(cgroup_dir + "/devices.allow"));
  }
}

void allow_devices_v2(const std::string &cgroup_dir, const std::vector<DeviceRule> &rules) {
  const UniqueFd cgroup = open_dir(cgroup_dir);
  const Attached own = query(cgroup.get(), false, cgroup_dir);
  if (own.ids.empty()) {
    // Nothing decides here; a parent's program would, and changing it would
    // change every container under it.
    if (!query(cgroup.get(), true, cgroup_dir).ids.empty())
      throw Error("device access of cgroup " + quote(cgroup_dir) +
                  " is decided by a device program of a parent cgroup, which gpuslice-hook does not change");
    return;
  }
  const std::vector<bpf_insn> prelude = allow_prelude(rules);
  for (uint32_t id : own.ids) {
    bpf_attr get{};
    get.prog_id = id;
    const UniqueFd old(static_cast<int>(bpf(BPF_PROG_GET_FD_BY_ID, get)));
    if (!old)
      throw system_error("cannot open device program " + std::to_string(id) + " of cgroup " + quote(cgroup_dir));
    std::vector<bpf_insn> insns = prelude;
    const auto rest = instructions_of(old.get(), id);
    insns.insert(insns.end(), rest.begin(), rest.end());
    const UniqueFd replacement(with_context("cgroup " + quote(cgroup_dir), [&] { return load_device_program(insns); }));
    bpf_attr attr{};
    attr.target_fd = static_cast<uint32_t>(cgroup.get());
    attr.attach_bpf_fd = static_cast<uint32_t>(replacement.get());
    attr.attach_type = BPF_CGROUP_DEVICE;
    if (own.flags & BPF_F_ALLOW_MULTI) {
      attr.attach_flags = BPF_F_ALLOW_MULTI | BPF_F_REPLACE;
      attr.replace_bpf_fd = static_cast<uint32_t>(old.get());
    } else {
      attr.attach_flags = own.flags; // one program: attaching replaces it
    }
    if (bpf(BPF_PROG_ATTACH, attr) != 0)
      throw system_error("cannot replace device program " + std::to_string(id) + " of cgroup " + quote(cgroup_dir));
  }
}

void allow_devices(int pid, const std::vector<DeviceRule> &rules) {
  if (rules.empty())
    return;
  const std::string proc = "/proc/" + std::to_string(pid) + "/cgroup";
  const std::string text = fs::read_file(proc, 1 << 20);
  if (const auto v1 = shim::cgroup_path_in(text, false, "devices")) {
    const auto mount = mount_point(false);
    if (!mount)
      throw Error("the devices cgroup of pid " + std::to_string(pid) + " is not mounted here");
    allow_devices_v1(joined(*mount, *v1), rules);
  }
  if (const auto v2 = shim::cgroup_path_in(text, true, nullptr))
    if (auto mount = mount_point(true))
      allow_devices_v2(joined(*mount, *v2), rules);
}

} // namespace gpuslice::hook
