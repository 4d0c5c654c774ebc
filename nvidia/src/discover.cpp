#include "gpuslice/nvidia/discover.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/strings.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>

namespace gpuslice::nvidia {

namespace {

constexpr std::size_t kMaxProcFile = 64 * 1024;

// `path` under `root` ("/" adds nothing).
std::string under(const std::string &root, const std::string &path) {
  const std::string r = fs::clean_path(root);
  return r == "/" ? path : r + path;
}

HostFile host_file(const std::string &root, const std::string &container_path) {
  return HostFile{under(root, container_path), container_path};
}

std::vector<std::string> entries(const std::string &dir) {
  std::vector<std::string> out;
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    return out;
  while (const dirent *e = ::readdir(d))
    if (std::string_view(e->d_name) != "." && std::string_view(e->d_name) != "..")
      out.emplace_back(e->d_name);
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<DeviceNode> char_device(const DiscoverOptions &o, const std::string &container_path) {
  const std::string host = under(o.dev_root, container_path);
  struct stat st {};
  if (::lstat(o.readable(host).c_str(), &st) != 0)
    return std::nullopt;
  if (!S_ISCHR(st.st_mode))
    throw Error("device node " + quote(o.readable(host)) + " is not a character device");
  return DeviceNode{HostFile{host, container_path}, static_cast<int64_t>(major(st.st_rdev)),
                    static_cast<int64_t>(minor(st.st_rdev))};
}

bool is_regular(const std::string &path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool is_socket(const std::string &path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

bool is_directory(const std::string &path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The driver's user-space libraries: built for this very kernel module, so
// named lib<name>.so.<version>. The driver's own only (libcuda, libnvidia-*,
// libcudadebugger, libnvoptix, libnvcuvid, libGLX_nvidia...), not a CUDA
// toolkit's libraries of a coincident version.
bool is_driver_library(const std::string &name, const std::string &version) {
  const std::string suffix = ".so." + version;
  if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return false;
  for (const char *prefix : {"libcuda.", "libcudadebugger.", "libnvidia-", "libnvcuvid.", "libnvoptix.",
                             "libGLX_nvidia.", "libEGL_nvidia.", "libGLESv1_CM_nvidia.", "libGLESv2_nvidia."})
    if (name.starts_with(prefix))
      return true;
  return false;
}

} // namespace

std::string DiscoverOptions::readable(const std::string &host_path) const { return under(host_root, host_path); }

std::string parse_driver_version(const std::string &text) {
  // The first token shaped like a driver version after "Kernel Module".
  const auto at = text.find("Kernel Module");
  if (at == std::string::npos)
    throw Error("no \"Kernel Module\" line in the NVIDIA kernel module's version text");
  const std::string line = text.substr(at, text.find('\n', at) - at);
  for (const auto &token : split(line, ' ', EmptyParts::skip)) {
    const std::string t = trim_space(token);
    const auto parts = split(t, '.', EmptyParts::keep);
    if (parts.size() >= 2 && parts.size() <= 3 &&
        std::all_of(parts.begin(), parts.end(), [](const std::string &p) {
          return !p.empty() && p.size() <= 6 && std::all_of(p.begin(), p.end(), ::isdigit);
        }))
      return t;
  }
  throw Error("no driver version in the NVIDIA kernel module's version text");
}

GpuInformation parse_gpu_information(const std::string &text) {
  GpuInformation info;
  for (const auto &line : split(text, '\n', EmptyParts::skip)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos)
      continue;
    const std::string key = trim_space(line.substr(0, colon)), value = trim_space(line.substr(colon + 1));
    if (key == "Model")
      info.model = value;
    else if (key == "GPU UUID")
      info.uuid = value;
    else if (key == "Bus Location")
      info.bus_location = value;
    else if (key == "Device Minor" && !value.empty() && value.size() < 6 &&
             std::all_of(value.begin(), value.end(), ::isdigit))
      info.minor = std::stoi(value);
  }
  return info;
}

Driver discover(const DiscoverOptions &o) {
  Driver d;
  const std::string proc = o.readable(under(o.dev_root, "/proc/driver/nvidia"));
  d.version = with_context(quote(proc + "/version"), [&] {
    return parse_driver_version(fs::read_file(proc + "/version", kMaxProcFile));
  });

  for (const char *name : {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"})
    if (auto node = char_device(o, name))
      d.control.push_back(*node);
  if (d.control.empty() || d.control.front().file.container_path != "/dev/nvidiactl")
    throw Error("no " + quote(o.readable(under(o.dev_root, "/dev/nvidiactl"))) + ": is the NVIDIA driver loaded?");
  for (const auto &name : entries(o.readable(under(o.dev_root, "/dev/nvidia-caps"))))
    if (auto node = char_device(o, "/dev/nvidia-caps/" + name))
      d.control.push_back(*node);

  // GPUs in PCI bus order, which is nvidia-smi's index order.
  const std::string gpus_dir = proc + "/gpus";
  for (const auto &bus : entries(gpus_dir)) {
    const std::string info_path = gpus_dir + "/" + bus + "/information";
    const GpuInformation info =
        with_context(quote(info_path), [&] { return parse_gpu_information(fs::read_file(info_path, kMaxProcFile)); });
    if (info.minor < 0)
      throw Error(quote(info_path) + " names no device minor");
    const std::string node_path = "/dev/nvidia" + std::to_string(info.minor);
    auto node = char_device(o, node_path);
    if (!node)
      throw Error("GPU " + bus + " has no device node " + quote(o.readable(under(o.dev_root, node_path))));
    Gpu g;
    g.index = static_cast<int>(d.gpus.size());
    g.bus_id = bus;
    g.uuid = info.uuid;
    g.model = info.model;
    g.node = *node;
    d.gpus.push_back(std::move(g));
  }
  if (d.gpus.empty())
    throw Error("no GPU in " + quote(gpus_dir));

  std::set<std::string> seen; // a library found by two dirs (a /lib link to /usr/lib) once
  for (const auto &dir : o.library_dirs.empty() ? kDefaultLibraryDirs : o.library_dirs)
    for (const auto &name : entries(o.readable(under(o.driver_root, dir)))) {
      const HostFile f = host_file(o.driver_root, fs::clean_path(dir + "/" + name));
      if (!is_driver_library(name, d.version) || !is_regular(o.readable(f.host_path)) || !seen.insert(name).second)
        continue;
      d.libraries.push_back(f);
    }
  for (const char *dir : {"/usr/bin", "/usr/sbin", "/bin", "/sbin"})
    for (const char *name : {"nvidia-smi", "nvidia-debugdump", "nvidia-persistenced", "nvidia-cuda-mps-control",
                             "nvidia-cuda-mps-server"}) {
      const HostFile f = host_file(o.driver_root, std::string(dir) + "/" + name);
      if (is_regular(o.readable(f.host_path)) && seen.insert(name).second)
        d.binaries.push_back(f);
    }
  for (const char *dir : {"/lib/firmware/nvidia/", "/usr/lib/firmware/nvidia/"}) {
    const HostFile f = host_file(o.driver_root, dir + d.version);
    if (is_directory(o.readable(f.host_path)) && seen.insert("firmware").second)
      d.directories.push_back(f);
  }
  const HostFile socket = host_file(o.dev_root, "/run/nvidia-persistenced/socket");
  if (is_socket(o.readable(socket.host_path)))
    d.sockets.push_back(socket);
  return d;
}

} // namespace gpuslice::nvidia
