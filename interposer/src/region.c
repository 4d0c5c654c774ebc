/* The usage region shared by every process of a container (layout in
 * gpuslice/region.h, docs/region.md). Lock-free: a process charges its own
 * slot with an atomic add and then sums all slots; if the sum passes the limit
 * it takes the charge back. Two racing allocations can both fail, never both
 * pass the limit (sequentially consistent add-then-read on both sides).
 * A slot belongs to the process holding an OFD lock on its byte; the kernel
 * releases that lock when the process dies, so a slot whose lock can be taken
 * is dead and its usage is dropped (at claim time and before reporting out of
 * memory). Everything read from the region is bounded before use.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct gs_region *gs_reg;
static struct gs_region_slot *my_slot;
static int my_index = -1;
static int reg_fd = -1;
static int reg_shared; /* mapped from the file, vs private memory */
static uint64_t container_id;

static int slot_trylock(int fd, unsigned i, short type) {
  struct flock fl;
  memset(&fl, 0, sizeof fl);
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = GS_SLOT_LOCK_BASE + (off_t)i;
  fl.l_len = 1;
  return fcntl(fd, F_OFD_SETLK, &fl);
}

static void zero_slot(struct gs_region_slot *s) {
  for (unsigned d = 0; d < GS_MAX_DEVICES; d++) atomic_store((_Atomic uint64_t *)&s->used[d], 0);
}

static uint32_t slots_hw(void) {
  uint32_t hw = atomic_load((_Atomic uint32_t *)&gs_reg->slots_hw);
  return hw > GS_MAX_SLOTS ? GS_MAX_SLOTS : hw;
}

static int valid(const struct gs_region *r, uint64_t file_size) {
  return file_size >= GS_REGION_SIZE && r->magic == GS_REGION_MAGIC && r->version == GS_REGION_VERSION &&
         r->header_size == sizeof(struct gs_region) && r->ndevices == GS_MAX_DEVICES &&
         r->nslots == GS_MAX_SLOTS && r->slot_size == sizeof(struct gs_region_slot);
}

static void use_private(void) {
  gs_reg = calloc(1, sizeof *gs_reg);
  if (!gs_reg) return;
  gs_reg->magic = GS_REGION_MAGIC;
  gs_reg->version = GS_REGION_VERSION;
  gs_reg->nslots = GS_MAX_SLOTS;
  gs_reg->slots_hw = 1;
  my_index = 0;
  my_slot = &gs_reg->slots[0];
  reg_shared = 0;
  container_id = (uint64_t)getpid() | (1ull << 63);
}

static int claim_slot(void) {
  for (unsigned i = 0; i < GS_MAX_SLOTS; i++) {
    if (slot_trylock(reg_fd, i, F_WRLCK) != 0) continue;
    struct gs_region_slot *s = &gs_reg->slots[i];
    zero_slot(s); /* a previous owner, if any, is dead */
    s->pid = (uint32_t)getpid();
    s->gen++;
    uint32_t hw = atomic_load((_Atomic uint32_t *)&gs_reg->slots_hw);
    while (hw < i + 1 && !atomic_compare_exchange_weak((_Atomic uint32_t *)&gs_reg->slots_hw, &hw, i + 1)) {
    }
    my_index = (int)i;
    my_slot = s;
    return 0;
  }
  return -1;
}

void gs_region_open(const char *path) {
  int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < GS_REGION_SIZE) {
    GS_LOG("no usable region \"%s\": accounting this process alone", path);
    if (fd >= 0) close(fd);
    use_private();
    return;
  }
  void *m = mmap(NULL, GS_REGION_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED || !valid(m, (uint64_t)st.st_size)) {
    GS_LOG("region \"%s\" has no valid header: accounting this process alone", path);
    if (m != MAP_FAILED) munmap(m, GS_REGION_SIZE);
    close(fd);
    use_private();
    return;
  }
  gs_reg = m;
  reg_fd = fd;
  reg_shared = 1;
  container_id = ((uint64_t)st.st_dev << 40) ^ (uint64_t)st.st_ino;
  if (claim_slot() != 0) {
    GS_LOG("region \"%s\": every slot is taken: accounting this process alone", path);
    munmap(m, GS_REGION_SIZE);
    close(fd);
    reg_fd = -1;
    use_private();
    return;
  }
  GS_LOG("region \"%s\": slot %d", path, my_index);
}

void gs_region_close_after_fork(void) {
  /* Closing our copy of the descriptor keeps the parent's lock (it is the
   * parent's open file description); the child claims its own slot later. */
  if (reg_shared && gs_reg) munmap(gs_reg, GS_REGION_SIZE);
  if (reg_fd >= 0) close(reg_fd);
  reg_fd = -1;
  gs_reg = NULL;
  my_slot = NULL;
  my_index = -1;
}

uint64_t gs_container_id(void) { return container_id; }

static void split_uuid(const CUuuid *u, uint64_t *lo, uint64_t *hi) {
  memcpy(lo, u->bytes, 8);
  memcpy(hi, u->bytes + 8, 8);
  if (!*lo) *lo = 1;
  if (!*hi) *hi = 1;
}

static int claim_word(_Atomic uint64_t *w, uint64_t v) {
  uint64_t cur = atomic_load(w);
  if (cur == 0 && atomic_compare_exchange_strong(w, &cur, v)) return 1;
  return cur == v;
}

int gs_region_device(const CUuuid *uuid) {
  uint64_t lo, hi;
  split_uuid(uuid, &lo, &hi);
  for (unsigned i = 0; i < GS_MAX_DEVICES; i++) {
    struct gs_region_device *d = &gs_reg->devices[i];
    if (claim_word((_Atomic uint64_t *)&d->uuid_lo, lo) && claim_word((_Atomic uint64_t *)&d->uuid_hi, hi))
      return (int)i;
  }
  return -1;
}

uint64_t gs_usage(int ridx) {
  uint32_t hw = slots_hw();
  uint64_t sum = 0;
  for (uint32_t i = 0; i < hw; i++) {
    uint64_t v = atomic_load((_Atomic uint64_t *)&gs_reg->slots[i].used[ridx]);
    sum = sum + v < sum ? UINT64_MAX : sum + v;
  }
  return sum;
}

/* Drops the usage of slots whose owner died. Returns how many it dropped. */
static int reclaim_dead(void) {
  if (!reg_shared) return 0;
  int n = 0;
  uint32_t hw = slots_hw();
  for (uint32_t i = 0; i < hw; i++) {
    if ((int)i == my_index) continue;
    struct gs_region_slot *s = &gs_reg->slots[i];
    int any = 0;
    for (unsigned d = 0; d < GS_MAX_DEVICES; d++) any |= atomic_load((_Atomic uint64_t *)&s->used[d]) != 0;
    if (!any || slot_trylock(reg_fd, i, F_WRLCK) != 0) continue;
    zero_slot(s);
    slot_trylock(reg_fd, i, F_UNLCK);
    n++;
  }
  if (n) GS_LOG("reclaimed %d slot(s) of dead processes", n);
  return n;
}

int gs_charge(int ridx, uint64_t size, uint64_t limit) {
  _Atomic uint64_t *mine = (_Atomic uint64_t *)&my_slot->used[ridx];
  for (int attempt = 0; attempt < 2; attempt++) {
    atomic_fetch_add(mine, size);
    if (limit == GS_NO_LIMIT) return 0;
    uint64_t total = gs_usage(ridx);
    if (total <= limit) return 0;
    atomic_fetch_sub(mine, size);
    if (attempt == 0 && reclaim_dead() == 0) break;
  }
  GS_LOG("out of memory: %llu more bytes would pass the limit of %llu", (unsigned long long)size,
         (unsigned long long)limit);
  return -1;
}

void gs_credit(int ridx, uint64_t size) {
  _Atomic uint64_t *mine = (_Atomic uint64_t *)&my_slot->used[ridx];
  uint64_t cur = atomic_load_explicit(mine, memory_order_relaxed);
  /* never below zero, whatever the tenant wrote into our slot */
  while (!atomic_compare_exchange_weak(mine, &cur, cur >= size ? cur - size : 0)) {
  }
}
