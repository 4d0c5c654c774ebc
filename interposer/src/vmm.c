/* Virtual memory management (cuMemCreate and the calls that map it): when
 * physical memory is given back.
 *
 * Why a file of its own: cuMemRelease does not free memory that is still
 * mapped. The driver frees a cuMemCreate allocation once its handle and
 * every reference to it (cuMemRetainAllocationHandle) are released and every
 * mapping of it (cuMemMap) is unmapped, in any order; releasing the handle
 * right after mapping it is the documented idiom (NVIDIA's vectorAddMMAP
 * sample). Crediting at cuMemRelease let a loop of create, map, release take
 * the whole GPU. So each charged handle keeps a count of its references and
 * mappings, and is credited when the count reaches zero.
 *
 * Two small hash tables under one mutex: handles (what each was charged, its
 * count) and mappings (the handle at each mapped address). VMM calls are few
 * and heavy (each a driver round trip that edits page tables); the driver is
 * called under the mutex, so that a release and an unmap of one handle never
 * cross. Handles the interposer did not charge (no limit on their device,
 * imported from another process) are passed through and not tracked.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <pthread.h>
#include <stdlib.h>

struct entry {
  uint64_t key;    /* a handle or a mapped address; 0: empty */
  uint64_t size;   /* handles: what was charged; mappings: the mapped size */
  uint64_t handle; /* mappings: the handle mapped there */
  uint32_t refs;   /* handles: the handle and its retains, plus its mappings */
  int ridx;        /* handles: the region device charged */
};

struct table {
  struct entry *slots;
  size_t cap; /* a power of two, or 0 */
  size_t used;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct table handles, mappings;

/* The product's top bits: handles and addresses are 2 MiB-aligned, so their
 * low bits, and those of the product, are zeros. */
static size_t home(const struct table *t, uint64_t key) {
  return (size_t)((key * 0x9E3779B97F4A7C15ull) >> (64 - __builtin_ctzll(t->cap)));
}

static struct entry *find(struct table *t, uint64_t key) {
  if (!t->cap || !key) return NULL;
  for (size_t i = home(t, key);; i = (i + 1) & (t->cap - 1)) {
    if (t->slots[i].key == key) return &t->slots[i];
    if (!t->slots[i].key) return NULL;
  }
}

/* A new entry for `key` (not in the table), or NULL when memory is short. */
static struct entry *add(struct table *t, uint64_t key) {
  if ((t->used + 1) * 2 > t->cap) {
    const size_t cap = t->cap ? t->cap * 2 : 64;
    struct entry *slots = calloc(cap, sizeof *slots);
    if (!slots) return NULL;
    struct table grown = {slots, cap, 0};
    for (size_t i = 0; i < t->cap; i++)
      if (t->slots[i].key) *add(&grown, t->slots[i].key) = t->slots[i]; /* cannot grow again */
    free(t->slots);
    *t = grown;
  }
  size_t i = home(t, key);
  while (t->slots[i].key) i = (i + 1) & (t->cap - 1);
  t->slots[i] = (struct entry){.key = key};
  t->used++;
  return &t->slots[i];
}

/* Linear probing without tombstones: the entries after a removed one move
 * back where their probe would have stopped. */
static void drop(struct table *t, struct entry *e) {
  size_t hole = (size_t)(e - t->slots);
  for (size_t i = (hole + 1) & (t->cap - 1); t->slots[i].key; i = (i + 1) & (t->cap - 1)) {
    const size_t want = home(t, t->slots[i].key);
    /* movable when its home is not in the cyclic range (hole, i] */
    if ((i > hole && (want <= hole || want > i)) || (i < hole && want <= hole && want > i)) {
      t->slots[hole] = t->slots[i];
      hole = i;
    }
  }
  t->slots[hole].key = 0;
  t->used--;
}

/* One reference or mapping of a charged handle gone: credited at the last. */
static void unref(struct entry *h) {
  if (--h->refs) return;
  gs_credit(h->ridx, h->size);
  drop(&handles, h);
}

void gs_vmm_reset_after_fork(void) {
  /* The child has no CUDA context, so none of these handles: start empty
   * (the mutex may have been held by a thread that does not exist here). */
  pthread_mutex_init(&mu, NULL);
  free(handles.slots);
  free(mappings.slots);
  handles = mappings = (struct table){0};
}

GS_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t size, const CUmemAllocationProp *prop,
                               unsigned long long flags) {
  gs_mode(); /* the driver resolved, for a call passed through too (no prop, a host location) */
  if (!prop) return gs_real.cuMemCreate(h, size, prop, flags);
  /* decided on, and handed to the driver, as one copy of ours: another
   * thread could turn the caller's host location into a device's between */
  const CUmemAllocationProp asked = *prop;
  struct gs_dev *d = asked.location.type == CU_MEM_LOCATION_TYPE_DEVICE ? gs_ordinal_dev(asked.location.id) : NULL;
  if (!d || !h) return gs_real.cuMemCreate(h, size, &asked, flags);
  if (gs_charge_dev(d, size) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&mu);
  CUmemGenericAllocationHandle got = 0; /* ours until the end: another thread could rewrite the caller's */
  CUresult r = gs_real.cuMemCreate(&got, size, &asked, flags);
  if (r == CUDA_SUCCESS) *h = got;
  struct entry *e = r == CUDA_SUCCESS ? add(&handles, got) : NULL;
  if (e) {
    e->size = size;
    e->ridx = d->ridx;
    e->refs = 1;
  } else if (r != CUDA_SUCCESS) {
    gs_credit(d->ridx, size);
  } else {
    GS_LOG("no memory to track a handle: its %zu bytes stay charged", size); /* the safe side */
  }
  pthread_mutex_unlock(&mu);
  return r;
}

GS_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle h) {
  gs_mode();
  pthread_mutex_lock(&mu);
  CUresult r = gs_real.cuMemRelease(h);
  struct entry *e = r == CUDA_SUCCESS ? find(&handles, h) : NULL;
  if (e) unref(e);
  pthread_mutex_unlock(&mu);
  return r;
}

GS_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *h, void *addr) {
  gs_mode();
  pthread_mutex_lock(&mu);
  CUmemGenericAllocationHandle got = 0;
  CUresult r = gs_real.cuMemRetainAllocationHandle(h ? &got : NULL, addr);
  struct entry *e = r == CUDA_SUCCESS && h ? find(&handles, got) : NULL;
  if (e) e->refs++;
  if (r == CUDA_SUCCESS && h) *h = got;
  pthread_mutex_unlock(&mu);
  return r;
}

GS_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle h,
                            unsigned long long flags) {
  gs_mode();
  pthread_mutex_lock(&mu);
  CUresult r = gs_real.cuMemMap(ptr, size, offset, h, flags);
  struct entry *e = r == CUDA_SUCCESS ? find(&handles, h) : NULL;
  if (e) {
    struct entry *m = find(&mappings, ptr) ? NULL : add(&mappings, ptr);
    if (m) {
      m->size = size;
      m->handle = h;
      e->refs++;
    } else {
      /* never credited, rather than while a mapping may hold the memory */
      GS_LOG("cannot track a mapping at %#llx: its handle stays charged", (unsigned long long)ptr);
      e->refs |= 1u << 31;
    }
  }
  pthread_mutex_unlock(&mu);
  return r;
}

/* The range is whole mappings laid end to end (the driver refuses a part of
 * one): each is dropped, and its handle loses a reference. */
GS_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  gs_mode();
  pthread_mutex_lock(&mu);
  CUresult r = gs_real.cuMemUnmap(ptr, size);
  if (r == CUDA_SUCCESS) {
    const uint64_t end = (uint64_t)ptr + size;
    for (uint64_t at = ptr; at < end;) {
      struct entry *m = find(&mappings, at);
      if (!m) break; /* a handle this interposer does not track */
      const uint64_t handle = m->handle, mapped = m->size;
      drop(&mappings, m);
      struct entry *e = find(&handles, handle);
      if (e) unref(e);
      if (!mapped) break;
      at += mapped;
    }
  }
  pthread_mutex_unlock(&mu);
  return r;
}
