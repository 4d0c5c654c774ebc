/* NVML memory info, as the CUDA calls report it: total = the container's
 * limit on that GPU, free = limit - the container's usage (clamped), used =
 * total - free. The GPU is matched by UUID (NVML indexes are not CUDA
 * ordinals); limits keyed by ordinal do not apply here, "*" and UUID ones do.
 * The real NVML is found in the library the program loaded.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <dlfcn.h>

typedef nvmlReturn_t (*mem_fn)(nvmlDevice_t, void *);
typedef nvmlReturn_t (*uuid_fn)(nvmlDevice_t, char *, unsigned int);

static void *real_nvml(const char *name) {
  void *h = gs_dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD);
  void *p = h ? gs_real_dlsym(h, name) : NULL;
  if (h) gs_dlclose(h);
  return p ? p : gs_real_dlsym(RTLD_NEXT, name);
}

/* The container's limit and usage on an NVML device; 0 when not limited. */
static int container_view(nvmlDevice_t dev, uint64_t *limit, uint64_t *used) {
  if (gs_mode() != GS_ENFORCE) return 0;
  uuid_fn get_uuid = (uuid_fn)real_nvml("nvmlDeviceGetUUID");
  char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  CUuuid uuid;
  if (!get_uuid || get_uuid(dev, buf, sizeof buf) != NVML_SUCCESS || gs_uuid_parse(buf, &uuid) != 0) return 0;
  struct gs_limit l;
  gs_limits_for(-1, &uuid, &l);
  int ridx = gs_region_device(&uuid);
  if (l.memory == GS_NO_LIMIT) return 0;
  *limit = l.memory;
  *used = gs_usage(ridx); /* everything used when the region has no entry for it */
  return 1;
}

static void clamp(unsigned long long *total, unsigned long long *free_b, unsigned long long *used_b, uint64_t limit,
                  uint64_t usage) {
  uint64_t lim = limit < *total ? limit : *total;
  uint64_t left = usage < lim ? lim - usage : 0;
  *total = lim;
  if (left < *free_b) *free_b = left;
  *used_b = lim - *free_b;
}

/* Both versions: the real call, then the container's view over it. */
#define MEMORY_INFO_WRAPPER(name, type)                                                            \
  GS_EXPORT nvmlReturn_t name(nvmlDevice_t dev, type *m) {                                         \
    mem_fn real = (mem_fn)real_nvml(#name);                                                        \
    if (!real) return NVML_ERROR_FUNCTION_NOT_FOUND;                                               \
    nvmlReturn_t r = real(dev, m);                                                                 \
    uint64_t limit, used;                                                                          \
    if (r == NVML_SUCCESS && container_view(dev, &limit, &used))                                   \
      clamp(&m->total, &m->free, &m->used, limit, used);                                           \
    return r;                                                                                      \
  }

MEMORY_INFO_WRAPPER(nvmlDeviceGetMemoryInfo, nvmlMemory_t)
MEMORY_INFO_WRAPPER(nvmlDeviceGetMemoryInfo_v2, nvmlMemory_v2_t)
