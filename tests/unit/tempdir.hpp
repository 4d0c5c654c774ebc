// A temporary directory removed with everything in it at scope exit.
#pragma once

#include "gpuslice/common/fs.hpp"

#include <cstdlib>
#include <filesystem>
#include <string>

namespace gpuslice::testing {

class TempDir {
public:
  TempDir() {
    char tmpl[] = "/tmp/gpuslice-unit-XXXXXX";
    if (!::mkdtemp(tmpl))
      throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  const std::string &path() const { return path_; }
  std::string operator/(const std::string &name) const { return path_ + "/" + name; }

  // Writes `content` to name (creating parent dirs) and returns the path.
  std::string write(const std::string &name, const std::string &content) const {
    const std::string p = path_ + "/" + name;
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    fs::write_file_atomic(p, content, 0644);
    return p;
  }

private:
  std::string path_;
};

} // namespace gpuslice::testing
