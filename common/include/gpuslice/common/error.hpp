// One error type for every host-side component. It carries an errno (0 when
// the failure is not a system call) and a message to which each layer
// prepends its context, so that the line a user finally reads says what was
// being done at every level:
//   cannot inject nvidia.com/gpu=0: device node "/dev/nvidia0": no such file
// Library code throws it; only front ends (main) catch and print it.
#pragma once

#include <cerrno>
#include <exception>
#include <string>
#include <string_view>
#include <utility>

namespace gpuslice {

class Error : public std::exception {
public:
  explicit Error(std::string message, int err = 0)
      : message_(std::move(message)), errno_(err) {}

  const char *what() const noexcept override { return message_.c_str(); }
  const std::string &message() const noexcept { return message_; }
  int error_number() const noexcept { return errno_; }

  // Prepends "context: " and returns *this, for `throw e.context(...)`.
  Error &context(std::string_view ctx) {
    message_.insert(0, std::string(ctx) + ": ");
    return *this;
  }

private:
  std::string message_;
  int errno_;
};

// An Error for a failed system call: "<what>: <strerror(errno)>".
Error system_error(std::string_view what, int err = errno);

// Quotes a path or name for messages: "/dev/nvidia0". Control bytes are
// escaped, and what comes from outside can be of any size, so a message
// stays bounded: past kMaxQuoted bytes the rest is cut and counted
// ("aaaa..." (+1048000 bytes)).
inline constexpr std::size_t kMaxQuoted = 1024;
std::string quote(std::string_view s);

// Runs fn(); an Error escaping it gets ctx prepended.
template <typename Fn> decltype(auto) with_context(std::string_view ctx, Fn &&fn) {
  try {
    return std::forward<Fn>(fn)();
  } catch (Error &e) {
    e.context(ctx);
    throw;
  }
}

} // namespace gpuslice
