// Input: bytes the front reads before the C library starts (front.h): a
// record, as a config.json to scan, and split at NULs, as a command line.
// The front runs as root on every container's calls: none of this may read
// out of bounds or loop, and a config.json it takes for one without a
// request must parse to none (checked where it parses).
#include "gpuslice/cdi/apply.hpp"
#include "gpuslice/common/config.hpp"
#include "gpuslice/common/json_text.hpp"
#include "gpuslice/runtime/front_record.hpp"
#include "gpuslice/create/bundle_spec.hpp"
#include "gpuslice/create/requests.hpp"

#include "../../runtime/front/command_line.h"
#include "../../runtime/front/front.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, std::size_t size) {
  using namespace gpuslice;
  const std::string bytes(reinterpret_cast<const char *>(data), size);

  std::vector<char> copy(bytes.begin(), bytes.end()); // exactly its size: any read past it is ASan's
  gs_front_record parsed{};
  (void)gs_front_parse_record(copy.data(), copy.size(), &parsed);

  static const std::string record = *runtime::front_record("0123", "/etc/gpuslice/config.toml", std::nullopt, Config{});
  static std::string record_buf = record;
  static gs_front_record r{};
  static const int ok = gs_front_parse_record(record_buf.data(), record_buf.size(), &r);
  if (ok != 0)
    std::abort();
  std::vector<char> spec(bytes.begin(), bytes.end());
  if (!gs_front_spec_may_request(spec.data(), spec.size(), &r)) {
    try {
      const auto spec = create::BundleSpec::parse(bytes, "config.json");
      if (!create::collect_requests(spec, Config{}).empty())
        std::abort(); // the front would have run a create with a request as a plain one
    } catch (const std::exception &) {
      // not a spec the full program takes either
    }
  }

  std::vector<std::string> args{"gpuslice-runtime"};
  for (std::size_t at = 0; at <= bytes.size() && args.size() < 64;) {
    const std::size_t end = std::min(bytes.find('\0', at), bytes.size());
    args.push_back(bytes.substr(at, end - at));
    at = end + 1;
  }
  std::vector<char *> argv;
  for (auto &a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  gs_call call;
  gs_read_call(static_cast<int>(args.size()), argv.data(), &call);
  return 0;
}
