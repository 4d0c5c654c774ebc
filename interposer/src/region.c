/* The usage region shared by every process of a container (layout in
 * gpuslice/region.h, docs/region.md). It arrives as a sealed memfd over the
 * region socket; a region that cannot be had, or is not what region.h says,
 * fails closed: every GPU memory charge is refused, and the process says why
 * once on stderr.
 *
 * Lock-free: a process charges its own slot with an atomic add and then sums
 * the device's whole row; if the sum passes the limit it takes the charge
 * back. Two racing allocations can both fail, never both pass the limit
 * (sequentially consistent add, then a full fence before the reads). A slot
 * belongs to the process holding an OFD lock on its byte; the kernel releases
 * that lock when the process dies, so a slot whose lock can be taken is dead
 * and its usage is dropped (at claim time and before reporting out of
 * memory). Everything read from the region is bounded before use.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef F_GET_SEALS
#define F_GET_SEALS 1034 /* linux/fcntl.h: F_LINUX_SPECIFIC_BASE + 10 */
#endif

struct gs_region *gs_reg;
/* The kernel's struct stat is glibc's on x86_64 and aarch64. */
int gs_fstat(int fd, struct stat *st) { return (int)syscall(SYS_fstat, fd, st); }

static int my_index = -1;
static int reg_fd = -1;
static int reg_shared; /* mapped from the monitor's memfd, vs private memory */
static char broken_why[160]; /* non-empty: charges are refused */
static _Atomic int broken_said;
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

static void zero_slot(unsigned i) {
  for (unsigned d = 0; d < GS_MAX_DEVICES; d++) atomic_store((_Atomic uint64_t *)&gs_reg->used[d][i], 0);
}

static int valid(const struct gs_region *r) {
  return r->magic == GS_REGION_MAGIC && r->version == GS_REGION_VERSION && r->header_size == sizeof(struct gs_region) &&
         r->size == GS_REGION_SIZE && r->ndevices == GS_MAX_DEVICES && r->nslots == GS_MAX_SLOTS;
}

/* No region to share: private memory keeps the compute bookkeeping of this
 * process, and `why` (non-empty) refuses every memory charge. Static, not
 * allocated: with no memory to be had (an RLIMIT_AS set low on purpose) a
 * failed allocation would leave no region, and so no limit. */
static struct gs_region private_region;

static void use_private(const char *why) {
  memset(&private_region, 0, sizeof private_region);
  gs_reg = &private_region;
  gs_reg->magic = GS_REGION_MAGIC;
  my_index = 0;
  reg_shared = 0;
  container_id = (uint64_t)getpid() | (1ull << 63);
  snprintf(broken_why, sizeof broken_why, "%s", why);
}

void gs_region_refuse(const char *why) { use_private(why); }

static int claim_slot(void) {
  for (unsigned i = 0; i < GS_MAX_SLOTS; i++) {
    if (slot_trylock(reg_fd, i, F_WRLCK) != 0) continue;
    zero_slot(i); /* a previous owner, if any, is dead */
    gs_reg->slots[i].pid = (uint32_t)getpid();
    gs_reg->slots[i].gen++;
    my_index = (int)i;
    return 0;
  }
  return -1;
}

/* The region's descriptor, from the monitor over the socket at `path`; -1
 * with a reason in `why` otherwise. A monitor that does not answer within
 * seconds is as good as none: the process must not hang in its first CUDA
 * call. */
static int receive_region(const char *path, char *why, size_t len) {
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  if (strlen(path) >= sizeof addr.sun_path) {
    snprintf(why, len, "region socket path \"%s\" is too long", path);
    return -1;
  }
  strcpy(addr.sun_path, path);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) {
    snprintf(why, len, "cannot create a socket: %s", strerror(errno));
    return -1;
  }
  struct timeval tv = {5, 0};
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int r;
  while ((r = connect(s, (struct sockaddr *)&addr, sizeof addr)) != 0 && errno == EINTR) {
  }
  if (r != 0) {
    snprintf(why, len, "cannot reach the container's monitor at \"%s\": %s", path, strerror(errno));
    close(s);
    return -1;
  }
  char byte;
  struct iovec iov = {&byte, 1};
  union {
    struct cmsghdr h;
    char buf[CMSG_SPACE(sizeof(int) * 4)];
  } ctl;
  struct msghdr msg;
  memset(&msg, 0, sizeof msg);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = ctl.buf;
  msg.msg_controllen = sizeof ctl.buf;
  ssize_t n;
  while ((n = recvmsg(s, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  close(s);
  int fd = -1;
  for (struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL; c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; i++) {
      int got;
      memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof got);
      if (fd < 0) fd = got;
      else close(got); /* one descriptor was asked for */
    }
  }
  if (fd < 0) snprintf(why, len, "the monitor at \"%s\" sent no region", path);
  return fd;
}

void gs_region_open(const char *socket_path) {
  char why[160];
  int fd = receive_region(socket_path, why, sizeof why);
  if (fd < 0) {
    use_private(why);
    return;
  }
  struct stat st;
  int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & GS_REGION_SEALS_REQUIRED) != GS_REGION_SEALS_REQUIRED) {
    close(fd);
    use_private("the region is not sealed against resizing");
    return;
  }
  if (gs_fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != GS_REGION_SIZE) {
    close(fd);
    use_private("the region has the wrong size");
    return;
  }
  void *m = mmap(NULL, GS_REGION_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    close(fd);
    use_private("cannot map the region");
    return;
  }
  if (!valid(m)) {
    munmap(m, GS_REGION_SIZE);
    close(fd);
    use_private("the region's header is not valid (overwritten?)");
    return;
  }
  gs_reg = m;
  reg_fd = fd;
  reg_shared = 1;
  container_id = GS_CONTAINER_ID(st.st_dev, st.st_ino);
  if (claim_slot() != 0) {
    munmap(m, GS_REGION_SIZE);
    close(fd);
    reg_fd = -1;
    use_private("every slot of the region is taken (too many processes use the GPU)");
    return;
  }
  GS_LOG("region from \"%s\": slot %d", socket_path, my_index);
}

void gs_region_close_after_fork(void) {
  /* Closing our copy of the descriptor keeps the parent's lock (it is the
   * parent's open file description); the child claims its own slot later. */
  if (reg_shared && gs_reg) munmap(gs_reg, GS_REGION_SIZE);
  if (reg_fd >= 0) close(reg_fd);
  reg_fd = -1;
  reg_shared = 0;
  gs_reg = NULL;
  my_index = -1;
  broken_why[0] = 0;
  atomic_store(&broken_said, 0);
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

/* The whole row, every time: no field of the tenant-writable region decides
 * how much of it counts. Each counter is masked to GS_USED_BITS, so the sum
 * cannot wrap. Plain vector loads (an aligned 64-bit element does not tear
 * on the architectures we build for), in four independent sums: this runs
 * on every allocation, so it is built twice, the AVX2 build chosen where
 * the CPU has it (half the loads). */
typedef uint64_t gs_v4u64 __attribute__((vector_size(32)));
_Static_assert(GS_MAX_SLOTS % 16 == 0, "the row is summed 16 counters at a time");

#if defined(__x86_64__) && defined(__has_attribute) && __has_attribute(target_clones)
__attribute__((target_clones("avx2", "default")))
#endif
static uint64_t row_sum(const uint64_t *row) {
  const uint64_t m = (1ull << GS_USED_BITS) - 1;
  const gs_v4u64 mask = {m, m, m, m};
  gs_v4u64 s0 = {0, 0, 0, 0}, s1 = s0, s2 = s0, s3 = s0;
  for (unsigned i = 0; i < GS_MAX_SLOTS; i += 16) {
    gs_v4u64 a, b, c, d;
    memcpy(&a, row + i, 32);
    memcpy(&b, row + i + 4, 32);
    memcpy(&c, row + i + 8, 32);
    memcpy(&d, row + i + 12, 32);
    s0 += a & mask;
    s1 += b & mask;
    s2 += c & mask;
    s3 += d & mask;
  }
  gs_v4u64 s = s0 + s1 + s2 + s3;
  return s[0] + s[1] + s[2] + s[3];
}

/* After a full fence: what other processes added before it is counted. */
uint64_t gs_usage(int ridx) {
  if (broken_why[0] || ridx < 0) return UINT64_MAX;
  atomic_thread_fence(memory_order_seq_cst);
  return row_sum(gs_reg->used[ridx]);
}

/* Drops the usage of slots whose owner died. Returns how many it dropped. */
static int reclaim_dead(void) {
  if (!reg_shared) return 0;
  int n = 0;
  for (unsigned i = 0; i < GS_MAX_SLOTS; i++) {
    if ((int)i == my_index) continue;
    int any = 0;
    for (unsigned d = 0; d < GS_MAX_DEVICES; d++) any |= atomic_load((_Atomic uint64_t *)&gs_reg->used[d][i]) != 0;
    if (!any || slot_trylock(reg_fd, i, F_WRLCK) != 0) continue;
    zero_slot(i);
    slot_trylock(reg_fd, i, F_UNLCK);
    n++;
  }
  if (n) GS_LOG("reclaimed %d slot(s) of dead processes", n);
  return n;
}

static void say_broken(const char *why) {
  if (atomic_exchange(&broken_said, 1)) return;
  /* Not only under GPUSLICE_DEBUG: the program sees out-of-memory errors
   * and the person running it must learn why. */
  char buf[256];
  int n = snprintf(buf, sizeof buf, "gpuslice-cuda[%d]: GPU memory limits cannot be enforced (%s): GPU memory "
                                    "allocations are refused\n",
                   (int)getpid(), why);
  if (n > 0) {
    ssize_t w = write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
    (void)w;
  }
}

int gs_charge(int ridx, uint64_t size, uint64_t limit) {
  if (GS_UNLIKELY(broken_why[0])) {
    say_broken(broken_why);
    return -1;
  }
  if (GS_UNLIKELY(ridx < 0)) { /* a limited GPU without an entry in the region */
    say_broken("every device entry of the region is taken (overwritten?)");
    return -1;
  }
  /* More than the limit can never fit, and more than a counter holds would
   * wrap it: refused before the counter moves (a size of (size_t)-1 added
   * and then credited back on the driver's failure would zero the usage). */
  if (size > (limit == GS_NO_LIMIT ? (1ull << GS_USED_BITS) - 1 : limit)) {
    GS_LOG("out of memory: %llu bytes asked for at once, more than the limit of %llu", (unsigned long long)size,
           (unsigned long long)limit);
    return -1;
  }
  _Atomic uint64_t *mine = (_Atomic uint64_t *)&gs_reg->used[ridx][my_index];
  for (int attempt = 0; attempt < 2; attempt++) {
    atomic_fetch_add(mine, size);
    if (limit == GS_NO_LIMIT) return 0;
#if defined(__x86_64__)
    uint64_t total = row_sum(gs_reg->used[ridx]); /* a locked add is a full fence there */
#else
    uint64_t total = gs_usage(ridx);
#endif
    if (total <= limit) return 0;
    atomic_fetch_sub(mine, size);
    if (attempt == 0 && reclaim_dead() == 0) break;
  }
  GS_LOG("out of memory: %llu more bytes would pass the limit of %llu", (unsigned long long)size,
         (unsigned long long)limit);
  return -1;
}

void gs_credit(int ridx, uint64_t size) {
  if (broken_why[0] || ridx < 0) return;
  _Atomic uint64_t *mine = (_Atomic uint64_t *)&gs_reg->used[ridx][my_index];
  uint64_t cur = atomic_load_explicit(mine, memory_order_relaxed);
  /* never below zero, whatever the tenant wrote into our slot */
  while (!atomic_compare_exchange_weak(mine, &cur, cur >= size ? cur - size : 0)) {
  }
}

