#include "gpuslice/dra/pool.hpp"

#include "gpuslice/common/error.hpp"

namespace gpuslice::dra {

std::vector<PoolDevice> pool_devices(const nvidia::Driver &driver, const std::vector<uint64_t> &memory, int slices) {
  if (slices < 0 || slices > kMaxSlices)
    throw Error("--slices " + std::to_string(slices) + " is not between 0 and " + std::to_string(kMaxSlices));
  if (memory.size() != driver.gpus.size())
    throw Error("the memory of " + std::to_string(memory.size()) + " GPUs for " +
                std::to_string(driver.gpus.size()) + " GPUs");
  std::vector<PoolDevice> pool;
  for (std::size_t i = 0; i < driver.gpus.size(); ++i) {
    const auto &gpu = driver.gpus[i];
    if (gpu.uuid.empty())
      throw Error("GPU " + gpu.bus_id + " has no UUID in /proc/driver/nvidia: its claims' limits could not be kept to it");
    const std::string name = "gpu-" + std::to_string(gpu.node.minor);
    if (slices == 0) {
      pool.push_back({name, i, memory[i], std::nullopt, std::nullopt});
      continue;
    }
    const uint64_t share = memory[i] / static_cast<uint64_t>(slices);
    for (int k = 0; k < slices; ++k)
      pool.push_back({name + "-slice-" + std::to_string(k), i, share, share, 100 / slices});
  }
  return pool;
}

const PoolDevice *find_device(const std::vector<PoolDevice> &pool, const std::string &name) {
  for (const auto &d : pool)
    if (d.name == name)
      return &d;
  return nullptr;
}

} // namespace gpuslice::dra
