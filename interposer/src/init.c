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
#include <errno.h>
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

/* ---- the dynamic linker's lookups: the real ones, and the wrappers ---- */

/* The C library's definitions (libc_syms.c: no lookup by name can reach
 * them past the wrappers below). The loader's other functions are found the
 * same way rather than linked: before glibc 2.34 they live in libdl.so.2,
 * which a process that never loads libcuda may not have, and naming it as
 * needed would stop every program of an image that lacks it. A process that
 * calls the driver has it (libcuda needs it, or the program dlopens). */
typedef void *(*dlsym_fn)(void *, const char *);
typedef void *(*dlvsym_fn)(void *, const char *, const char *);
typedef void *(*dlmopen_fn)(Lmid_t, const char *, int);
typedef void *(*dlopen_fn)(const char *, int);
typedef int (*dlclose_fn)(void *);
typedef char *(*dlerror_fn)(void);
typedef int (*dladdr_fn)(const void *, Dl_info *);
typedef int (*dlinfo_fn)(void *, int, void *);
enum { LIBC_DLSYM, LIBC_DLVSYM, LIBC_DLMOPEN, LIBC_DLOPEN, LIBC_DLCLOSE, LIBC_DLERROR, LIBC_DLADDR, LIBC_DLINFO, LIBC_N };
static _Atomic(void *) libc_fns[LIBC_N];
static const char *const libc_names[LIBC_N] = {"dlsym",   "dlvsym",  "dlmopen", "dlopen",
                                               "dlclose", "dlerror", "dladdr",  "dlinfo"};

static void *libc_fn(int i) {
  void *f = atomic_load_explicit(&libc_fns[i], memory_order_acquire);
  if (GS_UNLIKELY(!f)) {
    f = gs_libc_function(libc_names[i]);
    atomic_store_explicit(&libc_fns[i], f, memory_order_release);
  }
  return f;
}

static void *gs_libc_dlsym(void *handle, const char *name) {
  dlsym_fn f = (dlsym_fn)libc_fn(LIBC_DLSYM);
  return f ? f(handle, name) : NULL;
}
static void *gs_libc_dlvsym(void *handle, const char *name, const char *version) {
  dlvsym_fn f = (dlvsym_fn)libc_fn(LIBC_DLVSYM);
  return f ? f(handle, name, version) : NULL;
}
static void *gs_libc_dlmopen(Lmid_t lmid, const char *file, int mode) {
  dlmopen_fn f = (dlmopen_fn)libc_fn(LIBC_DLMOPEN);
  return f ? f(lmid, file, mode) : NULL;
}
void *gs_dlopen(const char *file, int mode) {
  dlopen_fn f = (dlopen_fn)libc_fn(LIBC_DLOPEN);
  return f ? f(file, mode) : NULL;
}
int gs_dlclose(void *handle) {
  dlclose_fn f = (dlclose_fn)libc_fn(LIBC_DLCLOSE);
  return f ? f(handle) : -1;
}
const char *gs_dlerror(void) {
  dlerror_fn f = (dlerror_fn)libc_fn(LIBC_DLERROR);
  const char *e = f ? f() : "the dynamic loader's functions are not loaded (libdl.so.2)";
  return e ? e : "unknown error";
}
static int gs_dladdr(const void *addr, Dl_info *info) {
  dladdr_fn f = (dladdr_fn)libc_fn(LIBC_DLADDR);
  return f ? f(addr, info) : 0;
}
static int gs_dlinfo(void *handle, int request, void *arg) {
  dlinfo_fn f = (dlinfo_fn)libc_fn(LIBC_DLINFO);
  return f ? f(handle, request, arg) : -1;
}

void *gs_real_dlsym(void *handle, const char *name) { return gs_libc_dlsym(handle, name); }

/* What a lookup of `name` must give instead of the definition found: the
 * wrapper of a driver or NVML function, and the wrappers of the lookups
 * themselves (asking libc's handle for "dlsym", or dlvsym for the versioned
 * "dlsym", would hand out an unwrapped lookup). NULL: the definition found. */
static void *substitute(const char *name) {
  if ((name[0] == 'c' && name[1] == 'u') || strncmp(name, "nvml", 4) == 0) return gs_export_lookup(name);
  if (name[0] != 'd' || name[1] != 'l') return NULL;
  if (strcmp(name, "dlsym") == 0) return (void *)&dlsym;
  if (strcmp(name, "dlvsym") == 0) return (void *)&dlvsym;
  if (strcmp(name, "dlmopen") == 0) return (void *)&dlmopen;
  return NULL;
}

/* RTLD_NEXT means "after the caller", and the loader finds the caller from
 * its return address. A call from here would make that this library: another
 * preloaded library's dlsym(RTLD_NEXT, "malloc") would find its own malloc
 * again (itself, after us) and recurse. So a name with no wrapper is passed
 * on by a tail call, which leaves the caller's return address in place.
 * musttail where the compiler has it; gcc makes this sibling call at -O2
 * (the test "RTLD_NEXT from another preloaded library" checks the built
 * library). A wrapped name (a driver function) is looked up from here, where
 * it is found, and its wrapper returned. */
#if defined(__has_attribute)
#if __has_attribute(musttail)
#define GS_TAIL_CALL __attribute__((musttail))
#endif
#endif
#ifndef GS_TAIL_CALL
#define GS_TAIL_CALL
#endif

/* A program that dlopens libcuda.so.1 and looks up "cuMemAlloc_v2" in that
 * handle would miss a preloaded definition: hand it the wrapper instead. */
GS_EXPORT void *dlsym(void *handle, const char *name) {
  if (handle == RTLD_NEXT && !substitute(name)) {
    dlsym_fn next = (dlsym_fn)libc_fn(LIBC_DLSYM);
    if (!next) return NULL;
    GS_TAIL_CALL return next(handle, name);
  }
  void *p = gs_libc_dlsym(handle, name);
  if (p) {
    void *w = substitute(name);
    if (w) return w;
  }
  return p;
}

GS_EXPORT void *dlvsym(void *handle, const char *name, const char *version) {
  if (handle == RTLD_NEXT && !substitute(name)) {
    dlvsym_fn next = (dlvsym_fn)libc_fn(LIBC_DLVSYM);
    if (!next) return NULL;
    GS_TAIL_CALL return next(handle, name, version);
  }
  void *p = gs_libc_dlvsym(handle, name, version);
  if (p) {
    void *w = substitute(name);
    if (w) return w;
  }
  return p;
}

/* A new link-map namespace gets its own copy of every library it loads,
 * libcuda included, and LD_PRELOAD does not reach it: a library dlmopen()ed
 * there would call the driver directly. So a new namespace starts with this
 * library, which then comes first in that namespace's lookup scope; its copy
 * charges the same region (its own slot). Where no limits apply, nothing
 * changes. */
static int limits_apply(void) {
  if (access(GS_DEFAULT_LIMITS_PATH, F_OK) == 0) return 1;
  const char *p = secure_getenv(GS_ENV_LIMITS);
  return p && *p;
}

GS_EXPORT void *dlmopen(Lmid_t lmid, const char *file, int mode) {
  if (lmid != LM_ID_NEWLM || !limits_apply()) return gs_libc_dlmopen(lmid, file, mode);
  Dl_info self;
  if (!gs_dladdr((void *)&dlmopen, &self) || !self.dli_fname) return NULL;
  void *first = gs_libc_dlmopen(LM_ID_NEWLM, self.dli_fname, RTLD_NOW | RTLD_LOCAL);
  Lmid_t ns;
  if (!first || gs_dlinfo(first, RTLD_DI_LMID, &ns) != 0) {
    GS_LOG("dlmopen(%s): cannot start the new namespace with the interposer: refused", file ? file : "NULL");
    if (first) gs_dlclose(first);
    return NULL; /* fail closed: dlerror() says why */
  }
  void *h = gs_libc_dlmopen(ns, file, mode);
  if (!h) gs_dlclose(first);
  return h;
}

/* ---- init ---- */

/* Stands in for a driver function the loaded driver does not have; the ABI
 * lets a function ignore arguments it does not declare. */
static CUresult missing_function(void) { return CUDA_ERROR_NOT_FOUND; }

static void resolve_real(void) {
  void *h = gs_dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) GS_LOG("cannot load \"libcuda.so.1\": %s", gs_dlerror());
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
  gs_vmm_reset_after_fork();
  gs_pools_reset_after_fork();
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
  const int load_errno = n < 0 ? errno : 0;
  if (n < 0 && load_errno == ENOENT) {
    GS_LOG("no usable limits file \"%s\": not enforcing", lp);
  } else if (gs_track_init() != 0) {
    /* The container has limits (or a limits file this process cannot read):
     * without the table no free could be credited. Fail closed, as below
     * (an RLIMIT_AS set low on purpose must not turn the limit off). */
    gs_region_refuse("cannot map the allocation table");
    state = gs_reg ? GS_ENFORCE : GS_PASSTHROUGH;
    GS_LOG("cannot map the allocation table: every GPU memory allocation is refused");
  } else if (n < 0) {
    /* There but unreadable (an SELinux denial, a directory) or malformed:
     * the container has limits this process cannot see. Fail closed. */
    char why[160]; /* what region.c keeps of it */
    snprintf(why, sizeof why, "limits file \"%s\": %s", lp,
             load_errno == EINVAL ? "malformed" : strerror(load_errno));
    gs_region_refuse(why);
    state = gs_reg ? GS_ENFORCE : GS_PASSTHROUGH;
    GS_LOG("%s: every GPU memory allocation is refused", why);
  } else {
    const char *rp = pick_path(GS_ENV_REGION, GS_DEFAULT_REGION_SOCKET);
    gs_region_open(rp); /* a region that cannot be had refuses charges: still enforcing */
    state = gs_reg ? GS_ENFORCE : GS_PASSTHROUGH;
    GS_LOG("limits \"%s\" (%d entries), region \"%s\": %s", lp, n, rp,
           state == GS_ENFORCE ? "enforcing" : "not enforcing");
  }
  atomic_store_explicit(&gs_state, state, memory_order_release);
  pthread_mutex_unlock(&init_mu);
}
