#include "gpuslice/hook/state_dir.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fd.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/hook/state.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gpuslice::hook {

namespace {

// Opens (creating when missing) directory `name` under `parent` without
// following a symlink at any step.
int open_or_make_dir(int parent, const std::string &name, mode_t mode, const std::string &shown) {
  if (::mkdirat(parent, name.c_str(), mode) != 0 && errno != EEXIST)
    throw system_error("cannot create " + quote(shown));
  int fd = ::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    throw system_error("cannot open " + quote(shown));
  return fd;
}

void check_id(const std::string &id) {
  if (!is_safe_container_id(id))
    throw Error("container id " + quote(id) + " is not a safe path component");
}

// Removes everything inside the directory `dirfd`.
void remove_contents(int dirfd, const std::string &shown) {
  int dup = ::dup(dirfd);
  if (dup < 0)
    throw system_error("cannot read " + quote(shown));
  DIR *d = ::fdopendir(dup);
  if (!d) {
    ::close(dup);
    throw system_error("cannot read " + quote(shown));
  }
  while (const dirent *e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..")
      continue;
    if (::unlinkat(dirfd, name.c_str(), 0) == 0)
      continue;
    if (errno != EISDIR) {
      ::closedir(d);
      throw system_error("cannot remove " + quote(shown + "/" + name));
    }
    UniqueFd sub(::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (sub.fd < 0) {
      ::closedir(d);
      throw system_error("cannot open " + quote(shown + "/" + name));
    }
    remove_contents(sub.fd, shown + "/" + name);
    if (::unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) != 0) {
      ::closedir(d);
      throw system_error("cannot remove " + quote(shown + "/" + name));
    }
  }
  ::closedir(d);
}

} // namespace

std::string create_container_dir(const std::string &state_dir, const std::string &id) {
  check_id(id);
  if (!fs::is_absolute(state_dir))
    throw Error("state dir " + quote(state_dir) + " is not absolute");
  // The state dir itself is root's configuration; create it and its parents.
  std::string prefix;
  UniqueFd cur(::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  const std::string cleaned = fs::clean_path(state_dir);
  std::size_t i = 1;
  while (i < cleaned.size()) {
    std::size_t j = cleaned.find('/', i);
    if (j == std::string::npos)
      j = cleaned.size();
    const std::string part = cleaned.substr(i, j - i);
    prefix += "/" + part;
    UniqueFd next(open_or_make_dir(cur.fd, part, 0711, prefix));
    std::swap(cur.fd, next.fd);
    i = j + 1;
  }
  UniqueFd containers(open_or_make_dir(cur.fd, "containers", 0711, prefix + "/containers"));
  const std::string path = prefix + "/containers/" + id;
  UniqueFd dir(open_or_make_dir(containers.fd, id, 0700, path));
  struct stat st {};
  if (::fstat(dir.fd, &st) != 0)
    throw system_error("cannot stat " + quote(path));
  if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    if (::fchown(dir.fd, ::geteuid(), ::getegid()) != 0 || ::fchmod(dir.fd, 0700) != 0)
      throw system_error("cannot secure " + quote(path));
  }
  return path;
}

void remove_container_dir(const std::string &state_dir, const std::string &id) {
  check_id(id);
  const std::string containers = fs::clean_path(state_dir) + "/containers";
  UniqueFd parent(::open(containers.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (parent.fd < 0) {
    if (errno == ENOENT)
      return;
    throw system_error("cannot open " + quote(containers));
  }
  const std::string path = containers + "/" + id;
  UniqueFd dir(::openat(parent.fd, id.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (dir.fd < 0) {
    if (errno == ENOENT)
      return;
    throw system_error("cannot open " + quote(path));
  }
  remove_contents(dir.fd, path);
  if (::unlinkat(parent.fd, id.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT)
    throw system_error("cannot remove " + quote(path));
}

} // namespace gpuslice::hook
