/* Lifecycle of the interposer. Loading it does nothing: no constructor, no
 * file, no thread. The first wrapped call (or dlsym of a wrapped name) runs
 * gs_init_slow once: resolve the real driver, read the read-only limits file,
 * map the usage region and claim a slot. A process without a limits file runs
 * every call straight through. After fork the child starts over at its next
 * CUDA call (new slot; the parent's slot lock is not the child's).
 */
#define _GNU_SOURCE
#include "internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct gs_real gs_real;
_Atomic int gs_state;
int gs_debug;
static pthread_mutex_t init_mu = PTHREAD_MUTEX_INITIALIZER;
static int atfork_registered;

void gs_log(const char *fmt, ...) {
  char buf[512];
  int n = snprintf(buf, sizeof buf, "gpuslice-cuda[%d]: ", (int)getpid());
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
  va_end(ap);
  if (m < 0) return;
  size_t len = (size_t)n + ((size_t)m < sizeof buf - (size_t)n - 1 ? (size_t)m : sizeof buf - (size_t)n - 2);
  buf[len++] = '\n';
  ssize_t w = write(2, buf, len);
  (void)w;
}

uint64_t gs_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts); /* vDSO: no system call */
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- dlsym: the real one, and the wrapper every program gets ---- */

typedef void *(*dlsym_fn)(void *, const char *);
static _Atomic(dlsym_fn) real_dlsym_fn;

void *gs_real_dlsym(void *handle, const char *name) {
  dlsym_fn f = atomic_load_explicit(&real_dlsym_fn, memory_order_acquire);
  if (GS_UNLIKELY(!f)) {
    f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!f) f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    if (!f) return NULL;
    atomic_store_explicit(&real_dlsym_fn, f, memory_order_release);
  }
  return f(handle, name);
}

/* A program that dlopens libcuda.so.1 and looks up "cuMemAlloc_v2" in that
 * handle would miss a preloaded definition: hand it the wrapper instead.
 * (RTLD_NEXT lookups by the program are resolved relative to this library,
 * which sits right after the program in preload order.) */
GS_EXPORT void *dlsym(void *handle, const char *name) {
  void *p = gs_real_dlsym(handle, name);
  if (p && ((name[0] == 'c' && name[1] == 'u') || strncmp(name, "nvml", 4) == 0)) {
    void *w = gs_export_lookup(name);
    if (w) return w;
  }
  return p;
}

/* ---- init ---- */

/* Stands in for a driver function the loaded driver does not have; the ABI
 * lets a function ignore arguments it does not declare. */
static CUresult missing_function(void) { return CUDA_ERROR_NOT_FOUND; }

static void resolve_real(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) GS_LOG("cannot load \"libcuda.so.1\": %s", dlerror());
#define GS_RESOLVE(name, params)                                                                   \
  gs_real.name = h ? (PFN_gs_##name)gs_real_dlsym(h, #name) : NULL;                                \
  if (!gs_real.name) gs_real.name = (PFN_gs_##name)(void (*)(void))missing_function;
  GS_CUDA_FUNCTIONS(GS_RESOLVE)
  GS_RESOLVE(cuGetProcAddress, ())
#undef GS_RESOLVE
  gs_real.cuEventRecord_ptsz = h ? (CUresult(*)(CUevent, CUstream))gs_real_dlsym(h, "cuEventRecord_ptsz") : NULL;
  if (!gs_real.cuEventRecord_ptsz) gs_real.cuEventRecord_ptsz = gs_real.cuEventRecord;
}

static void atfork_child(void) {
  pthread_mutex_init(&init_mu, NULL);
  gs_region_close_after_fork();
  gs_devs_reset();
  gs_throttle_reset();
  atomic_store(&gs_state, GS_UNINIT);
}

/* In a container, gpuslice-runtime mounts the limits file (read-only) and
 * the region at the default paths. The environment is the tenant's: it may
 * name other files only where those are absent (`gpuslice exec`), or a
 * tenant could escape its limit with GPUSLICE_LIMITS=/nonexistent. */
static const char *pick_path(const char *env_name, const char *default_path) {
  if (access(default_path, F_OK) == 0) return default_path;
  const char *p = secure_getenv(env_name);
  return p && *p ? p : default_path;
}

void gs_init_slow(void) {
  pthread_mutex_lock(&init_mu);
  if (atomic_load(&gs_state) != GS_UNINIT) {
    pthread_mutex_unlock(&init_mu);
    return;
  }
  const char *dbg = secure_getenv(GS_ENV_DEBUG);
  gs_debug = dbg && *dbg && strcmp(dbg, "0") != 0;
  resolve_real();
  if (!atfork_registered) {
    pthread_atfork(NULL, NULL, atfork_child);
    atfork_registered = 1;
  }
  const char *lp = pick_path(GS_ENV_LIMITS, GS_DEFAULT_LIMITS_PATH);
  int state = GS_PASSTHROUGH;
  int n = gs_limits_load(lp);
  if (n < 0) {
    GS_LOG("no usable limits file \"%s\": not enforcing", lp);
  } else if (gs_track_init() != 0) {
    GS_LOG("cannot map the allocation table: not enforcing");
  } else {
    const char *rp = pick_path(GS_ENV_REGION, GS_DEFAULT_REGION_PATH);
    gs_region_open(rp);
    state = gs_reg ? GS_ENFORCE : GS_PASSTHROUGH;
    GS_LOG("limits \"%s\" (%d entries), region \"%s\": %s", lp, n, rp,
           state == GS_ENFORCE ? "enforcing" : "not enforcing");
  }
  atomic_store_explicit(&gs_state, state, memory_order_release);
  pthread_mutex_unlock(&init_mu);
}
