#include "gpuslice/shim/cgroup.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/strings.hpp"

#include <dirent.h>
#include <cstdio>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>

namespace gpuslice::shim {

std::optional<std::string> cgroup_path_in(const std::string &proc_cgroup, bool v2, const char *controller) {
  for (const auto &line : split(proc_cgroup, '\n', EmptyParts::skip)) {
    const auto first = line.find(':');
    const auto second = first == std::string::npos ? std::string::npos : line.find(':', first + 1);
    if (second == std::string::npos)
      continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (v2 ? (line.compare(0, first, "0") == 0 && controllers.empty())
           : !controllers.empty() && [&] {
               for (const auto &c : split(controllers, ',', EmptyParts::skip))
                 if (c == controller)
                   return true;
               return false;
             }())
      return path;
  }
  return std::nullopt;
}

namespace {

std::string read_small(const std::string &path) {
  try {
    return fs::read_file(path, 64 * 1024);
  } catch (const Error &) {
    return {};
  }
}

void collect(const std::string &dir, std::vector<int> &pids, int depth) {
  for (const auto &line : split(read_small(dir + "/cgroup.procs"), '\n', EmptyParts::skip)) {
    int pid = 0;
    auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), pid);
    if (ec == std::errc() && p == line.data() + line.size() && pid > 0)
      pids.push_back(pid);
  }
  if (depth > 16)
    return;
  if (DIR *d = ::opendir(dir.c_str())) {
    while (const dirent *e = ::readdir(d))
      if (e->d_type == DT_DIR && e->d_name[0] != '.')
        collect(dir + "/" + e->d_name, pids, depth + 1);
    ::closedir(d);
  }
}

} // namespace

std::optional<ContainerCgroup> cgroup_of(int pid, const std::string &root) {
  const std::string theirs = read_small("/proc/" + std::to_string(pid) + "/cgroup");
  const std::string mine = read_small("/proc/self/cgroup");
  struct stat st {};
  const bool v2 = ::stat((root + "/cgroup.controllers").c_str(), &st) == 0;
  const auto path = cgroup_path_in(theirs, v2, "freezer");
  if (!path || *path == "/" || path == cgroup_path_in(mine, v2, "freezer") || path->find("..") != std::string::npos)
    return std::nullopt;
  return ContainerCgroup{(v2 ? root : root + "/freezer") + *path, v2};
}

std::vector<int> cgroup_processes(const ContainerCgroup &cgroup) {
  std::vector<int> pids;
  collect(cgroup.dir, pids, 0);
  return pids;
}

void freeze(const ContainerCgroup &cgroup) {
  const std::string file = cgroup.dir + (cgroup.v2 ? "/cgroup.freeze" : "/freezer.state");
  const std::string value = cgroup.v2 ? "1" : "FROZEN";
  FILE *f = std::fopen(file.c_str(), "we");
  if (!f)
    throw system_error("cannot freeze the container (" + quote(file) + ")");
  const bool ok = std::fputs(value.c_str(), f) >= 0;
  if (std::fclose(f) != 0 || !ok)
    throw system_error("cannot freeze the container (" + quote(file) + ")");
}

} // namespace gpuslice::shim
