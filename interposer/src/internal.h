/* What the interposer's files share. The library is C11 on glibc only: it is
 * loaded into every process of a container and must not bring a C++ runtime.
 * Everything is hidden (-fvisibility=hidden) except the wrappers marked
 * GS_EXPORT, and the version script keeps it that way.
 */
#ifndef GPUSLICE_INTERPOSER_INTERNAL_H
#define GPUSLICE_INTERPOSER_INTERNAL_H

#include "gpuslice/cuda_api.h"
#include "gpuslice/region.h"

#include <stdatomic.h>
#include <stdint.h>

#define GS_EXPORT __attribute__((visibility("default")))
#define GS_LIKELY(x) __builtin_expect(!!(x), 1)
#define GS_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define GS_TLS __thread __attribute__((tls_model("initial-exec")))
#define GS_NO_LIMIT UINT64_MAX

/* ---- the real driver ---- */
#define GS_REAL_FIELD(name, params) PFN_gs_##name name;
struct gs_real {
  GS_CUDA_FUNCTIONS(GS_REAL_FIELD)
  PFN_gs_cuGetProcAddress cuGetProcAddress;
  CUresult (*cuEventRecord_ptsz)(CUevent, CUstream);
};
extern struct gs_real gs_real;
void *gs_real_dlsym(void *handle, const char *name);
/* The loader's functions, found in the loaded libc (or libdl) at run time,
 * never linked (init.c says why); NULL / -1 where they are not loaded. */
void *gs_dlopen(const char *file, int mode);
int gs_dlclose(void *handle);
const char *gs_dlerror(void);
void *gs_libc_function(const char *name); /* libc_syms.c */
/* fstat(2) without fstat@GLIBC_2.33 (cmake/glibc_floor/glibc_floor.h). */
struct stat;
int gs_fstat(int fd, struct stat *st); /* region.c */

/* ---- lifecycle ---- */
enum { GS_UNINIT = 0, GS_PASSTHROUGH = 1, GS_ENFORCE = 2 };
extern _Atomic int gs_state;
void gs_init_slow(void);
static inline int gs_mode(void) {
  int s = atomic_load_explicit(&gs_state, memory_order_acquire);
  if (GS_UNLIKELY(s == GS_UNINIT)) {
    gs_init_slow();
    s = atomic_load_explicit(&gs_state, memory_order_acquire);
  }
  return s;
}
extern int gs_debug;
void gs_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define GS_LOG(...)                                                                                \
  do {                                                                                             \
    if (GS_UNLIKELY(gs_debug)) gs_log(__VA_ARGS__);                                                \
  } while (0)
uint64_t gs_now_ns(void);

/* ---- limits (limits.c) ---- */
enum { GS_POLICY_NATIVE = 0, GS_POLICY_FIXED = 1, GS_POLICY_BURST = 2 };
struct gs_limit {
  char key[48]; /* "*", an ordinal, or "GPU-<uuid>" */
  uint64_t memory;  /* GS_NO_LIMIT when unset */
  int compute;      /* percent, -1 when unset */
  int policy;       /* -1 when unset */
};
/* Parses the limits file; returns the number of entries, -1 when it cannot be
 * read or is malformed (then nothing is enforced). */
int gs_limits_load(const char *path);
/* The merged limit for a device (its ordinal as this process sees it, and its UUID). */
void gs_limits_for(int ordinal, const CUuuid *uuid, struct gs_limit *out);
const char *gs_limits_activity_path(void);
int gs_uuid_format(const CUuuid *u, char *out, size_t len); /* "GPU-xxxxxxxx-..." */
int gs_uuid_parse(const char *s, CUuuid *u);

/* ---- shared usage region (region.c) ---- */
extern struct gs_region *gs_reg;
void gs_region_open(const char *socket_path); /* a shared region, or a private one refusing charges */
void gs_region_refuse(const char *why);       /* a private region refusing every charge, saying why */
void gs_region_close_after_fork(void);
int gs_region_device(const CUuuid *uuid); /* index in gs_reg->devices, -1 if none free */
/* 0, or -1 over the limit. A negative ridx (a limited GPU the region has no
 * entry for) and a region that could not be had refuse every charge. */
int gs_charge(int ridx, uint64_t size, uint64_t limit);
void gs_credit(int ridx, uint64_t size);
uint64_t gs_usage(int ridx); /* UINT64_MAX where charges are refused */
uint64_t gs_container_id(void);

/* ---- devices as this process sees them (device.c) ---- */
#define GS_MAX_ORDINALS 64
struct gs_dev {
  _Atomic int ready;
  int ridx;          /* region device; -1 = not accounted (no limit), -2 = limited but no entry: refused */
  uint64_t mem_limit;
  int compute;       /* percent; 100 or more = no gating */
  int policy;
  CUuuid uuid;
  struct gs_region_device local; /* compute bookkeeping when ridx is -2 */
};
extern struct gs_dev gs_devs[GS_MAX_ORDINALS];
void gs_dev_setup(int ordinal);
void gs_devs_reset(void);
static inline struct gs_dev *gs_dev_get(int ordinal) {
  if (GS_UNLIKELY(ordinal < 0 || ordinal >= GS_MAX_ORDINALS)) return 0;
  struct gs_dev *d = &gs_devs[ordinal];
  if (GS_UNLIKELY(!atomic_load_explicit(&d->ready, memory_order_acquire))) gs_dev_setup(ordinal);
  return d;
}
/* The device of the calling thread's current context, NULL without one. */
struct gs_dev *gs_current_dev(void);
/* The device `ordinal` where its memory is accounted, else NULL (pass through). */
static inline struct gs_dev *gs_ordinal_dev(int ordinal) {
  if (gs_mode() != GS_ENFORCE) return 0;
  struct gs_dev *d = gs_dev_get(ordinal);
  return d && atomic_load_explicit(&d->ready, memory_order_relaxed) && d->ridx != -1 ? d : 0;
}

/* Whether any GPU this process sees is accounted (its usage counted), and
 * whether any has a memory limit. */
int gs_any_accounted(void);
int gs_any_memory_limit(void);

/* The stream a call means: a _ptsz call's NULL is the per-thread stream. */
static inline CUstream gs_named_stream(CUstream s, int ptsz) { return !s && ptsz ? GS_STREAM_PER_THREAD : s; }

/* ---- our own waits (memory.c) ---- */
/* Waits for the work queued on `s` so far. The calling thread is relaxed
 * for it: a program's capture in global mode on another thread would take
 * our wait for an unsafe call of its own, refuse it, and end invalidated. */
CUresult gs_stream_wait(CUstream s);

/* ---- memory pools (pools.c) ---- */
/* gs_charge on a device's entry; where it is refused, the pools' memory the
 * driver released since it was last looked at is credited, and the charge
 * tried once more. */
int gs_charge_dev(const struct gs_dev *d, uint64_t size);
/* Credits what this process's pools on region device `ridx` (every device:
 * -1) gave back to the driver; 1 if anything was. */
int gs_pools_release(int ridx);
void gs_pools_reset_after_fork(void);

/* ---- allocation table (track.c) ---- */
enum { GS_KIND_PTR = 1, GS_KIND_ARRAY = 3 }; /* VMM handles: vmm.c */
int gs_track_init(void);
int gs_track_insert(uint64_t key, int kind, int ridx, uint64_t size);
int gs_track_remove(uint64_t key, int kind, int *ridx, uint64_t *size);

/* ---- VMM handles and mappings (vmm.c) ---- */
void gs_vmm_reset_after_fork(void);

/* ---- compute shares (throttle.c) ---- */
extern GS_TLS int64_t gs_launch_countdown;
struct gs_gate {
  int sample;
  unsigned slot; /* the sample's slot (throttle.c), when sample */
  int ptsz;
  CUstream stream;
  uint64_t kernel; /* gs_kernel_key of the launch */
  uint64_t t0; /* host time of the first event when the GPU was idle, else 0 */
  uint64_t wall0, cpu0; /* host and thread CPU time at the first event */
};
void gs_gate_begin(struct gs_gate *g, CUstream stream, int ptsz, uint64_t kernel);
/* What identifies a kernel's cost: its function (or graph) and its shape. */
uint64_t gs_kernel_key(const void *function, uint64_t grid, uint64_t block);
void gs_gate_end(struct gs_gate *g, CUresult launched);
void gs_throttle_reset(void);

/* ---- lookups (procaddr.c) ---- */
void *gs_export_lookup(const char *name);

#endif
