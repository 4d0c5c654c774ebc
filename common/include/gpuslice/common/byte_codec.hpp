// Structs as bytes, and back, for what a binary keeps for its own later
// runs on one node (the CDI spec cache): the
// encoding is native-endian and private to one build (whoever stores it
// also stores the build id, own_build_id()), so it needs no versioning. What
// it must be is exact: the reader takes any byte it does not expect as a
// failure, never as a default.
//
// A struct takes part by a `fields(io, s)` function, found by ADL, that
// names each field once: `io(s.a), io(s.b)`. Both directions walk that one
// list, so a field cannot be written and then forgotten on the way back.
#pragma once

#include <concepts>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuslice::bytes {

template <class T>
concept Number = std::integral<T> && !std::same_as<T, bool>;
// What fields() describes (not a number, a bool or a string).
template <class T>
concept Record = !std::integral<T> && !std::same_as<T, std::string>;

class Writer {
public:
  std::string out;

  void operator()(const std::string &s) {
    size(s.size());
    out += s;
  }
  void operator()(std::string &s) { (*this)(std::as_const(s)); }
  template <Number T> void operator()(T v) { out.append(reinterpret_cast<const char *>(&v), sizeof v); }
  void operator()(bool b) { out += b ? '\1' : '\0'; }
  template <class T> void operator()(std::optional<T> &o) {
    (*this)(o.has_value());
    if (o)
      (*this)(*o);
  }
  template <class T> void operator()(std::vector<T> &v) {
    size(v.size());
    for (auto &e : v)
      (*this)(e);
  }
  void operator()(std::map<std::string, std::string> &m) {
    size(m.size());
    for (auto &[key, value] : m)
      (*this)(key), (*this)(value);
  }
  void operator()(std::set<std::string> &s) {
    size(s.size());
    for (const auto &e : s)
      (*this)(e);
  }
  template <Record S> void operator()(S &s) { fields(*this, s); }

  // The writer never writes through its argument; fields() is one list for
  // both directions, so it takes it as mutable.
  template <class S> void encode(const S &s) { (*this)(const_cast<S &>(s)); }

private:
  void size(std::size_t n) { (*this)(static_cast<uint32_t>(n)); }
};

class Reader {
public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool ok() const { return ok_; }
  bool at_end() const { return ok_ && in_.empty(); }
  // What is left to read.
  std::string_view rest() const { return in_; }

  // The next string, not copied (empty once anything failed).
  std::string_view view() {
    const uint32_t n = count();
    const std::string_view s = ok_ ? in_.substr(0, n) : std::string_view();
    in_.remove_prefix(s.size());
    return s;
  }
  void operator()(std::string &s) { s = view(); }
  template <Number T> void operator()(T &v) { raw(&v, sizeof v); }
  void operator()(bool &b) {
    uint8_t c = 0;
    raw(&c, 1);
    ok_ = ok_ && c <= 1;
    b = c == 1;
  }
  template <class T> void operator()(std::optional<T> &o) {
    bool present = false;
    (*this)(present);
    o.reset();
    if (present && ok_)
      (*this)(o.emplace());
  }
  template <class T> void operator()(std::vector<T> &v) {
    const uint32_t n = count();
    v.clear();
    v.reserve(n);
    for (uint32_t i = 0; i < n && ok_; ++i)
      (*this)(v.emplace_back());
  }
  // A key twice is a failure: the writer, walking a map, never wrote one.
  void operator()(std::map<std::string, std::string> &m) {
    const uint32_t n = count();
    m.clear();
    for (uint32_t i = 0; i < n && ok_; ++i) {
      std::string key(view());
      std::string value(view());
      ok_ = ok_ && m.emplace(std::move(key), std::move(value)).second;
    }
  }
  void operator()(std::set<std::string> &s) {
    const uint32_t n = count();
    s.clear();
    for (uint32_t i = 0; i < n && ok_; ++i)
      ok_ = s.emplace(view()).second && ok_;
  }
  template <Record S> void operator()(S &s) { fields(*this, s); }

  // One whole `S` and nothing after it; nullopt otherwise.
  template <class S> std::optional<S> decode_rest() {
    S s;
    (*this)(s);
    if (!at_end())
      return std::nullopt;
    return s;
  }

private:
  void raw(void *p, std::size_t n) {
    if (!ok_ || in_.size() < n) {
      ok_ = false;
      return;
    }
    std::memcpy(p, in_.data(), n);
    in_.remove_prefix(n);
  }
  // A length or element count: every byte or element takes at least one
  // byte, so a count beyond what is left is a lie, not an allocation.
  uint32_t count() {
    uint32_t n = 0;
    raw(&n, sizeof n);
    if (n > in_.size())
      ok_ = false;
    return ok_ ? n : 0;
  }

  std::string_view in_;
  bool ok_ = true;
};

} // namespace gpuslice::bytes
