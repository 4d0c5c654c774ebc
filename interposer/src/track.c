/* What each live allocation was charged, so that a free credits exactly that.
 * cuMemFree gets only a pointer; asking the driver for the size would add a
 * driver round trip per free. An open-addressing table of 2^18 entries in
 * anonymous memory (touched only where used), lock-free: insert claims an
 * empty or deleted key with compare-and-swap; remove marks the key deleted.
 * A pointer is inserted once (the driver never hands out a live address
 * twice) and removed after its allocation returned, so an entry's value is
 * never read while it is written.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <sys/mman.h>

#define BITS 18
#define SIZE (1u << BITS)
#define MAX_PROBE 4096
#define EMPTY 0ull
#define DELETED 1ull

struct entry {
  _Atomic uint64_t key;
  uint64_t val; /* size (48 bits) | region device << 48 | kind << 56 */
};

static struct entry *table;

int gs_track_init(void) {
  if (table) return 0;
  void *m = mmap(NULL, SIZE * sizeof(struct entry), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return -1;
  table = m;
  return 0;
}

static inline uint32_t slot_of(uint64_t key, int kind) {
  return (uint32_t)(((key >> 8) ^ (uint64_t)kind) * 0x9E3779B97F4A7C15ull >> (64 - BITS));
}

int gs_track_insert(uint64_t key, int kind, int ridx, uint64_t size) {
  if (!table || key <= DELETED || size >> 48) return -1; /* no table: every charge is refused anyway */
  uint64_t val = size | (uint64_t)ridx << 48 | (uint64_t)kind << 56;
  uint32_t i = slot_of(key, kind);
  for (int probe = 0; probe < MAX_PROBE; probe++, i = (i + 1) & (SIZE - 1)) {
    uint64_t k = atomic_load_explicit(&table[i].key, memory_order_relaxed);
    if ((k == EMPTY || k == DELETED) &&
        atomic_compare_exchange_strong_explicit(&table[i].key, &k, key, memory_order_acq_rel, memory_order_relaxed)) {
      table[i].val = val;
      return 0;
    }
  }
  return -1;
}

int gs_track_remove(uint64_t key, int kind, int *ridx, uint64_t *size) {
  if (!table || key <= DELETED) return 0;
  uint32_t i = slot_of(key, kind);
  for (int probe = 0; probe < MAX_PROBE; probe++, i = (i + 1) & (SIZE - 1)) {
    uint64_t k = atomic_load_explicit(&table[i].key, memory_order_acquire);
    if (k == EMPTY) return 0;
    if (k == key && (int)(table[i].val >> 56) == kind) {
      uint64_t v = table[i].val;
      *size = v & ((1ull << 48) - 1);
      *ridx = (int)((v >> 48) & 0xff);
      atomic_store_explicit(&table[i].key, DELETED, memory_order_release);
      return 1;
    }
  }
  return 0;
}
