/* Devices as this process sees them: ordinal -> physical GPU (UUID) -> its
 * limits and its entry in the region. Set up on first use of each ordinal,
 * after the program's cuInit; CUDA_VISIBLE_DEVICES renumbers ordinals, the
 * UUID keeps the budget on the physical GPU.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <pthread.h>
#include <string.h>

struct gs_dev gs_devs[GS_MAX_ORDINALS];
static pthread_mutex_t dev_mu = PTHREAD_MUTEX_INITIALIZER;

void gs_dev_setup(int ordinal) {
  struct gs_dev *d = &gs_devs[ordinal];
  pthread_mutex_lock(&dev_mu);
  if (atomic_load(&d->ready)) {
    pthread_mutex_unlock(&dev_mu);
    return;
  }
  CUdevice dev;
  CUuuid uuid;
  memset(&uuid, 0, sizeof uuid);
  if (gs_real.cuDeviceGet(&dev, ordinal) != CUDA_SUCCESS ||
      (gs_real.cuDeviceGetUuid_v2(&uuid, dev) != CUDA_SUCCESS && gs_real.cuDeviceGetUuid(&uuid, dev) != CUDA_SUCCESS)) {
    /* not initialised yet, or no such device: try again on the next call */
    d->ridx = -1;
    d->mem_limit = GS_NO_LIMIT;
    d->compute = 100;
    d->policy = GS_POLICY_NATIVE;
    pthread_mutex_unlock(&dev_mu);
    return;
  }
  struct gs_limit l;
  gs_limits_for(ordinal, &uuid, &l);
  d->uuid = uuid;
  d->ridx = gs_region_device(&uuid);
  d->mem_limit = l.memory;
  d->policy = l.policy < 0 ? (l.compute >= 0 && l.compute < 100 ? GS_POLICY_FIXED : GS_POLICY_NATIVE) : l.policy;
  d->compute = l.compute < 0 || d->policy == GS_POLICY_NATIVE ? 100 : (l.compute == 0 ? 1 : l.compute);
  if (d->ridx < 0 && (d->mem_limit != GS_NO_LIMIT || d->compute < 100)) {
    /* The tenant can fill the 16 entries with made-up UUIDs: a limited GPU
     * without an entry is refused (memory) or gated alone (compute), never
     * let through uncounted. */
    d->ridx = -2;
    GS_LOG("device %d (%s): region has no free device entry: charges refused", ordinal, l.key);
  }
  GS_LOG("device %d (%s): memory limit %llu, compute %d%%, policy %d", ordinal, l.key,
         (unsigned long long)d->mem_limit, d->compute, d->policy);
  atomic_store_explicit(&d->ready, 1, memory_order_release);
  pthread_mutex_unlock(&dev_mu);
}

void gs_devs_reset(void) {
  pthread_mutex_init(&dev_mu, NULL);
  for (int i = 0; i < GS_MAX_ORDINALS; i++) atomic_store(&gs_devs[i].ready, 0);
}

struct gs_dev *gs_current_dev(void) {
  CUdevice dev;
  if (gs_real.cuCtxGetDevice(&dev) != CUDA_SUCCESS) return NULL;
  struct gs_dev *d = gs_dev_get(dev);
  return d && atomic_load_explicit(&d->ready, memory_order_relaxed) ? d : NULL;
}

static int any_device(int memory_limited) {
  int n = 0;
  if (gs_real.cuDeviceGetCount(&n) != CUDA_SUCCESS) return 0; /* no driver yet: its call fails anyway */
  for (int i = 0; i < n && i < GS_MAX_ORDINALS; i++) {
    const struct gs_dev *d = gs_ordinal_dev(i);
    if (d && (!memory_limited || d->mem_limit != GS_NO_LIMIT)) return 1;
  }
  return 0;
}
int gs_any_accounted(void) { return any_device(0); }
int gs_any_memory_limit(void) { return any_device(1); }
