/* Compute shares (docs/compute-shares.md). A container with share S% earns
 * S ns of GPU time per wall-clock ns into a token bucket kept in its region
 * (shared by its processes, capped at S% of a 50 ms window); every launch
 * spends its estimated GPU time; a launch that finds the bucket empty sleeps
 * until the bucket is refilled to a random level between half and full. The
 * GPU time of a launch is measured, not guessed: launches are bracketed by
 * two events on their stream, read back without blocking at a later batch.
 * Batches are sized so that the slow path runs about once per millisecond of
 * GPU time, so a launch in the middle of a batch costs one thread-local
 * decrement.
 *
 * Why the least recent sample of each kernel, and why sleep until
 * the bucket is half to fully refilled: on a real GPU, contexts time-slice,
 * and a kernel whose context is switched out between its two events is
 * measured with the other context's time in it (next to a busy neighbour
 * nearly every kernel measures about twice its time alone). Charged that,
 * a container's share falls far below its budget. A
 * sample is only ever stretched, so a kernel (function, grid, block) is
 * charged the least of its recent samples; and a throttled container
 * leaves the GPU in stretches of a good part of (100 - S)% of a window
 * rather than in gaps shorter than a kernel, so that its neighbours'
 * kernels run alone, and are measured clean, now and then. The level is
 * random so that two containers' cycles cannot stay in step, each one's
 * bursts always meeting the other's (on the fake GPU that starved the 30%
 * side once in 8 runs).
 */
#define _GNU_SOURCE
#include "internal.h"

#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define WINDOW_NS 50000000ll       /* bucket depth: 50 ms at 100% */
#define BATCH_GPU_NS 1000000ull    /* slow path about once per ms of GPU time */
#define MAX_BATCH 4096ull
#define MAX_SLEEP_NS 200000000ll
#define BUSY_HOLD_NS 100000000ull  /* a gated container counts as busy this long after a launch */
#define RECHECK_UNGATED 65536
#define PREEMPTED_NS 50000ll       /* off the CPU this long while sampling: discard */
#define ESTIMATE_SAMPLES 4         /* a thread's estimate: the mean of its last kernels' times */
#define KERNEL_SLOTS 128           /* kernels whose times are remembered (direct-mapped) */
#define KERNEL_WINDOW 128          /* a kernel's least sample is kept for 128 to 256 of its samples */
#define SAMPLE_SLOTS 4             /* launches sampled at once, each with its two events */

GS_TLS int64_t gs_launch_countdown;

/* A sampled launch: its events, and what its interval is read with. */
struct sample_slot {
  CUevent ev0, ev1;
  uint64_t kernel; /* gs_kernel_key */
  uint64_t gap;    /* host ns from the first record to the launch when the GPU was idle at the first */
};

static GS_TLS struct {
  uint64_t random;   /* xorshift state, 0 = not seeded */
  uint64_t batch;    /* launches admitted since the last slow path */
  uint64_t est_ns;   /* GPU ns per launch + 1; 0 = not measured yet */
  uint64_t samples[ESTIMATE_SAMPLES];
  unsigned nsamples;
  /* Sampled launches waiting for their second event, oldest first: several
   * at once for long kernels, so that a burst of them is sampled beyond its
   * first one (the kernels that run while the neighbours are idle are the
   * clean ones) */
  unsigned first_pending, npending;
  int sampled; /* a launch of ev_ctx was sampled */
  CUcontext ev_ctx;
  struct sample_slot slots[SAMPLE_SLOTS];
} t;

/* Uniform in [0, 1). */
static double random_unit(void) {
  if (!t.random) t.random = (gs_now_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&t) | 1;
  t.random ^= t.random << 13;
  t.random ^= t.random >> 7;
  t.random ^= t.random << 17;
  return (double)(t.random >> 11) / 9007199254740992.0;
}

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* slow path only */
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The GPU time of each kernel, process-wide (every thread launching it
 * samples it): the least of its recent samples, two windows of
 * KERNEL_WINDOW (the current one and the one before), so that a kernel
 * that became slower is charged its new time after at most 2 windows. On
 * an H200 next to a 70% neighbour, 2 to 3% of a 30% container's samples
 * were clean: a window must hold a hundred or so. Slow path only. */
static struct kernel_time {
  uint64_t key;
  uint64_t least_now, least_before;
  uint32_t samples;
} kernel_times[KERNEL_SLOTS];
static pthread_mutex_t kernel_times_mu = PTHREAD_MUTEX_INITIALIZER;

uint64_t gs_kernel_key(const void *function, uint64_t grid, uint64_t block) {
  uint64_t k = (uint64_t)(uintptr_t)function * 0x9e3779b97f4a7c15ull;
  k ^= (grid + 0x632be59bd9b4e019ull) * 0xc2b2ae3d27d4eb4full;
  k ^= (block + 0x165667b19e3779f9ull) * 0xff51afd7ed558ccdull;
  return k ? k : 1;
}

/* Records a sample of a kernel; returns the kernel's time. */
static uint64_t kernel_time(uint64_t key, uint64_t sample) {
  struct kernel_time *k = &kernel_times[(key >> 32) % KERNEL_SLOTS];
  pthread_mutex_lock(&kernel_times_mu);
  if (k->key != key) {
    k->key = key;
    k->samples = 0;
    k->least_now = UINT64_MAX;
  }
  if (k->samples++ % KERNEL_WINDOW == 0) {
    k->least_before = k->least_now;
    k->least_now = UINT64_MAX;
  }
  if (sample < k->least_now) k->least_now = sample;
  uint64_t least = k->least_now < k->least_before ? k->least_now : k->least_before;
  pthread_mutex_unlock(&kernel_times_mu);
  return least;
}

/* As the region stores a UUID (a zero half is stored as 1). */
static void uuid_words(const CUuuid *u, uint64_t *lo, uint64_t *hi) {
  memcpy(lo, u->bytes, 8);
  memcpy(hi, u->bytes + 8, 8);
  if (!*lo) *lo = 1;
  if (!*hi) *hi = 1;
}

static int activity_fd = -1;
static int activity_tried;

void gs_throttle_reset(void) {
  if (activity_fd >= 0) close(activity_fd);
  activity_fd = -1;
  activity_tried = 0;
  gs_launch_countdown = 0;
  memset(&t, 0, sizeof t);
  pthread_mutex_init(&kernel_times_mu, NULL);
  memset(kernel_times, 0, sizeof kernel_times);
}

static void open_activity(void) {
  activity_tried = 1;
  const char *path = gs_limits_activity_path();
  if (!path) return;
  activity_fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  struct stat st;
  if (activity_fd >= 0 && (gs_fstat(activity_fd, &st) != 0 || !S_ISREG(st.st_mode))) {
    close(activity_fd);
    activity_fd = -1;
  }
  if (activity_fd < 0) GS_LOG("cannot open activity table \"%s\": burst acts as fixed", path);
}

/* Says this container is busy on the GPU (in its own region: the monitor
 * copies it to the node's activity table), and whether another container
 * is. The table is read with pread into a copy, never mapped. */
static int publish_and_check(const struct gs_dev *d, struct gs_region_device *rd, uint64_t now) {
  uint64_t until = now + BUSY_HOLD_NS;
  uint64_t cur = atomic_load((_Atomic uint64_t *)&rd->busy_until);
  while (cur < until && !atomic_compare_exchange_weak((_Atomic uint64_t *)&rd->busy_until, &cur, until)) {
  }
  if (!activity_tried) open_activity();
  if (activity_fd < 0) return 1; /* cannot know: act as fixed */
  struct gs_activity_entry table[GS_ACTIVITY_ENTRIES];
  ssize_t n = pread(activity_fd, table, sizeof table, 0);
  if (n < 0) return 1;
  uint64_t lo, hi, me = gs_container_id();
  uuid_words(&d->uuid, &lo, &hi);
  for (size_t i = 0; i < (size_t)n / sizeof table[0]; i++) {
    const struct gs_activity_entry *e = &table[i];
    if (e->owner && e->owner != me && e->uuid_lo == lo && e->uuid_hi == hi && e->busy_until > now &&
        e->busy_until - now <= BUSY_HOLD_NS)
      return 1;
  }
  return 0;
}

/* Adds the tokens earned since the last refill and bounds the bucket (its
 * content comes from the writable region). Returns the current content. */
static int64_t refill(struct gs_region_device *rd, uint64_t now, int share) {
  _Atomic uint64_t *last = (_Atomic uint64_t *)&rd->refill_ns;
  _Atomic int64_t *tokens = (_Atomic int64_t *)&rd->tokens_ns;
  int64_t cap = WINDOW_NS * share / 100, floor = -1000000000ll * share / 100;
  uint64_t prev = atomic_load(last);
  if (prev != now && atomic_compare_exchange_strong(last, &prev, now)) {
    uint64_t dt = prev < now && now - prev < 1000000000ull ? now - prev : 1000000000ull;
    atomic_fetch_add(tokens, (int64_t)(dt * (uint64_t)share / 100));
  }
  int64_t cur = atomic_load(tokens);
  while (cur > cap || cur < floor) {
    int64_t want = cur > cap ? cap : floor;
    if (atomic_compare_exchange_weak(tokens, &cur, want)) return want;
  }
  return cur;
}

/* Reads the sampled launches that are done, oldest first. */
static void read_samples(void) {
  while (t.npending) {
    struct sample_slot *slot = &t.slots[t.first_pending];
    if (gs_real.cuEventQuery(slot->ev1) != CUDA_SUCCESS) return;
    t.first_pending = (t.first_pending + 1) % SAMPLE_SLOTS;
    t.npending--;
    float ms;
    if (gs_real.cuEventElapsedTime(&ms, slot->ev0, slot->ev1) != CUDA_SUCCESS || !(ms >= 0)) continue;
    uint64_t s = (uint64_t)((double)ms * 1e6);
    /* An idle GPU stamps the first event on arrival: the interval then also
     * holds the host's own time to submit the launch, which is not GPU time. */
    s = s > slot->gap ? s - slot->gap : 0;
    uint64_t charged = kernel_time(slot->kernel, s);
    t.samples[t.nsamples++ % ESTIMATE_SAMPLES] = charged;
    GS_LOG("kernel %016llx: sample %llu ns (%llu ns idle taken out), charged %llu ns", (unsigned long long)slot->kernel,
           (unsigned long long)s, (unsigned long long)slot->gap, (unsigned long long)charged);
    /* the mean of the last kernels' times: a batch of different kernels
     * costs about that much per launch */
    unsigned n = t.nsamples < ESTIMATE_SAMPLES ? t.nsamples : ESTIMATE_SAMPLES;
    uint64_t sum = 0;
    for (unsigned i = 0; i < n; i++) sum += t.samples[i];
    t.est_ns = sum / n + 1;
  }
}

/* The current context's events, created on its first sampled launch. */
static int ensure_events(void) {
  CUcontext ctx = NULL;
  if (gs_real.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx) return 0;
  if (ctx == t.ev_ctx) return 1;
  /* events of another context are left alone: it may be gone */
  t.ev_ctx = NULL;
  t.npending = 0;
  t.sampled = 0;
  for (unsigned i = 0; i < SAMPLE_SLOTS; i++)
    if (gs_real.cuEventCreate(&t.slots[i].ev0, 0) != CUDA_SUCCESS ||
        gs_real.cuEventCreate(&t.slots[i].ev1, 0) != CUDA_SUCCESS)
      return 0;
  t.ev_ctx = ctx;
  return 1;
}

void gs_gate_begin(struct gs_gate *g, CUstream stream, int ptsz, uint64_t kernel) {
  g->sample = 0;
  g->kernel = kernel;
  g->ptsz = ptsz;
  g->stream = stream;
  if (gs_mode() != GS_ENFORCE) {
    gs_launch_countdown = RECHECK_UNGATED;
    return;
  }
  struct gs_dev *d = gs_current_dev();
  if (!d || d->ridx == -1 || d->compute >= 100) {
    gs_launch_countdown = RECHECK_UNGATED;
    t.batch = 0;
    return;
  }
  /* A launch into a stream capture is recorded into a graph, not run: it is
   * not charged (the graph's launches are) nor sampled, and nothing here
   * may ask about an event meanwhile (that spoils the capture). The next
   * launch looks again. The legacy stream is never captured, and asking
   * about it during a capture is itself refused. */
  CUstream probe = stream == GS_STREAM_LEGACY ? NULL : stream ? stream : ptsz ? GS_STREAM_PER_THREAD : NULL;
  if (probe) {
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    if (gs_real.cuStreamIsCapturing(probe, &capture) == CUDA_SUCCESS && capture != CU_STREAM_CAPTURE_STATUS_NONE) {
      gs_launch_countdown = 0;
      return;
    }
  }
  /* Our event calls are safe during another stream's capture: relaxed, so
   * that a capture in global mode does not take them for the program's. */
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  int relaxed = gs_real.cuThreadExchangeStreamCaptureMode(&mode) == CUDA_SUCCESS;
  if (!t.est_ns && t.npending) {
    /* Nothing measured yet: the launches admitted so far wait for their
     * first sample, or a whole queue of them (thousands on a real GPU)
     * would go in uncharged. Once per thread. */
    gs_real.cuEventSynchronize(t.slots[t.first_pending].ev1);
  }
  read_samples();
  uint64_t now = gs_now_ns();
  struct gs_region_device *rd = d->ridx >= 0 ? &gs_reg->devices[d->ridx] : &d->local;
  refill(rd, now, d->compute);
  int64_t debit = (int64_t)(t.batch * (t.est_ns ? t.est_ns - 1 : 0));
  int64_t tokens = atomic_fetch_sub((_Atomic int64_t *)&rd->tokens_ns, debit) - debit;
  int capped = d->policy == GS_POLICY_FIXED || publish_and_check(d, rd, now);
  if (capped && tokens < 0) {
    /* until the bucket is half to fully refilled: see the top of this file */
    int64_t level = (int64_t)((double)(WINDOW_NS * d->compute / 100) * (0.5 + 0.5 * random_unit()));
    int64_t ns = (level - tokens) * 100 / d->compute;
    if (ns > MAX_SLEEP_NS) ns = MAX_SLEEP_NS;
    struct timespec ts = {ns / 1000000000ll, ns % 1000000000ll};
    while (nanosleep(&ts, &ts) != 0) {
    }
    refill(rd, gs_now_ns(), d->compute);
  } else if (!capped && tokens < 0) {
    /* burst, alone: no debt to pay back when a neighbour turns up */
    atomic_store((_Atomic int64_t *)&rd->tokens_ns, 0);
  }
  /* Several sampled at once only for kernels of a batch each (a millisecond
   * or more): shorter ones give a sample per millisecond anyway, and a
   * launch queued behind a sampled one that the GPU has already run would
   * be measured with the host's time in it. */
  unsigned slots = t.est_ns > BATCH_GPU_NS ? SAMPLE_SLOTS : 1;
  if (t.npending < slots && ensure_events()) {
    g->slot = (t.first_pending + t.npending) % SAMPLE_SLOTS;
    struct sample_slot *slot = &t.slots[g->slot];
    g->wall0 = gs_now_ns();
    g->cpu0 = thread_cpu_ns();
    CUresult r = ptsz ? gs_real.cuEventRecord_ptsz(slot->ev0, stream) : gs_real.cuEventRecord(slot->ev0, stream);
    g->sample = r == CUDA_SUCCESS;
    /* From before the record. Not for the context's first sample: its
     * record may set things up (a thread, a channel), which would be taken
     * for idle GPU time, and the kernel is charged its least sample. */
    g->t0 = g->sample && t.sampled && gs_real.cuEventQuery(slot->ev0) == CUDA_SUCCESS ? g->wall0 : 0;
    t.sampled = 1;
  }
  if (relaxed) gs_real.cuThreadExchangeStreamCaptureMode(&mode);
  uint64_t batch = t.est_ns ? BATCH_GPU_NS / t.est_ns : 1;
  if (batch < 1) batch = 1;
  if (batch > MAX_BATCH) batch = MAX_BATCH;
  /* grow by at most 4x per slow path: one wrong sample cannot hide thousands of launches */
  if (batch > 4 * t.batch + 1) batch = 4 * t.batch + 1;
  t.batch = batch;
  gs_launch_countdown = (int64_t)batch - 1;
}

void gs_gate_end(struct gs_gate *g, CUresult launched) {
  if (!g->sample || launched != CUDA_SUCCESS) return;
  /* the launch is submitted as its call returns: from then on the GPU may
   * run it, and the host's time is no longer the GPU's idle time */
  uint64_t submitted = gs_now_ns();
  struct sample_slot *slot = &t.slots[g->slot];
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  int relaxed = gs_real.cuThreadExchangeStreamCaptureMode(&mode) == CUDA_SUCCESS;
  CUresult r = g->ptsz ? gs_real.cuEventRecord_ptsz(slot->ev1, g->stream) : gs_real.cuEventRecord(slot->ev1, g->stream);
  if (relaxed) gs_real.cuThreadExchangeStreamCaptureMode(&mode);
  uint64_t wall = gs_now_ns() - g->wall0, cpu = thread_cpu_ns() - g->cpu0;
  /* With an idle GPU the host's time from the first record to the launch
   * is taken out of the sample; if the thread was off the CPU meanwhile,
   * that time is not known and the sample says nothing. (With a busy GPU
   * the events alone measure the launch, whatever the host did.) */
  if (r != CUDA_SUCCESS || (g->t0 && wall >= cpu + (uint64_t)PREEMPTED_NS)) return;
  slot->kernel = g->kernel;
  slot->gap = g->t0 && submitted > g->t0 ? submitted - g->t0 : 0;
  t.npending++;
}
