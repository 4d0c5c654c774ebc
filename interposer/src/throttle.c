/* Compute shares (docs/compute-shares.md). A container with share S% earns
 * S ns of GPU time per wall-clock ns into a token bucket kept in its region
 * (shared by its processes, capped at S% of a 50 ms window); every launch
 * spends its estimated GPU time; a launch that finds the bucket empty sleeps
 * until it would be refilled. The GPU time of a launch is measured, not
 * guessed: one launch in each batch is bracketed by two events on its stream,
 * read back without blocking at the next batch. Batches are sized so that the
 * slow path runs about once per millisecond of GPU time, so a launch in the
 * middle of a batch costs one thread-local decrement.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <fcntl.h>
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

GS_TLS int64_t gs_launch_countdown;

static GS_TLS struct {
  uint64_t batch;    /* launches admitted since the last slow path */
  uint64_t est_ns;   /* GPU ns per launch + 1; 0 = not measured yet */
  uint64_t samples[5];
  unsigned nsamples;
  int sample_pending;
  uint64_t sample_gap; /* host ns between the two records when the GPU was idle at the first */
  CUcontext ev_ctx;
  CUevent ev0, ev1;
} t;

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* slow path only */
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
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

static void read_sample(void) {
  if (!t.sample_pending || gs_real.cuEventQuery(t.ev1) != CUDA_SUCCESS) return;
  float ms;
  if (gs_real.cuEventElapsedTime(&ms, t.ev0, t.ev1) == CUDA_SUCCESS && ms >= 0) {
    uint64_t s = (uint64_t)((double)ms * 1e6);
    /* An idle GPU stamps the first event on arrival: the interval then also
     * holds the host's own time to submit the launch, which is not GPU time. */
    s = s > t.sample_gap ? s - t.sample_gap : 0;
    /* the second smallest of the last 5 samples: a sample is stretched, never
     * shrunk, by another context's time slice or by preemption; keeping one
     * below it still follows kernels that change size */
    t.samples[t.nsamples++ % 5] = s + 1;
    unsigned n = t.nsamples < 5 ? t.nsamples : 5;
    uint64_t v[5];
    for (unsigned i = 0; i < n; i++) {
      unsigned j = i;
      for (; j > 0 && v[j - 1] > t.samples[i]; j--) v[j] = v[j - 1];
      v[j] = t.samples[i];
    }
    t.est_ns = v[n > 1 ? 1 : 0];
  }
  t.sample_pending = 0;
}

static int ensure_events(void) {
  CUcontext ctx = NULL;
  if (gs_real.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx) return 0;
  if (ctx == t.ev_ctx && t.ev0) return 1;
  /* events of another context are left alone: it may be gone */
  t.ev0 = t.ev1 = NULL;
  t.sample_pending = 0;
  if (gs_real.cuEventCreate(&t.ev0, 0) != CUDA_SUCCESS || gs_real.cuEventCreate(&t.ev1, 0) != CUDA_SUCCESS) {
    t.ev0 = t.ev1 = NULL;
    return 0;
  }
  t.ev_ctx = ctx;
  return 1;
}

void gs_gate_begin(struct gs_gate *g, CUstream stream, int ptsz) {
  g->sample = 0;
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
  read_sample();
  uint64_t now = gs_now_ns();
  struct gs_region_device *rd = d->ridx >= 0 ? &gs_reg->devices[d->ridx] : &d->local;
  refill(rd, now, d->compute);
  int64_t debit = (int64_t)(t.batch * (t.est_ns ? t.est_ns - 1 : 0));
  int64_t tokens = atomic_fetch_sub((_Atomic int64_t *)&rd->tokens_ns, debit) - debit;
  int capped = d->policy == GS_POLICY_FIXED || publish_and_check(d, rd, now);
  if (capped && tokens < 0) {
    int64_t ns = -tokens * 100 / d->compute;
    if (ns > MAX_SLEEP_NS) ns = MAX_SLEEP_NS;
    struct timespec ts = {ns / 1000000000ll, ns % 1000000000ll};
    while (nanosleep(&ts, &ts) != 0) {
    }
    refill(rd, gs_now_ns(), d->compute);
  } else if (!capped && tokens < 0) {
    /* burst, alone: no debt to pay back when a neighbour turns up */
    atomic_store((_Atomic int64_t *)&rd->tokens_ns, 0);
  }
  if (!t.sample_pending && ensure_events()) {
    uint64_t t0 = gs_now_ns();
    g->cpu0 = thread_cpu_ns();
    CUresult r = ptsz ? gs_real.cuEventRecord_ptsz(t.ev0, stream) : gs_real.cuEventRecord(t.ev0, stream);
    g->sample = r == CUDA_SUCCESS;
    g->wall0 = t0;
    g->t0 = g->sample && gs_real.cuEventQuery(t.ev0) == CUDA_SUCCESS ? t0 : 0;
  }
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
  CUresult r = g->ptsz ? gs_real.cuEventRecord_ptsz(t.ev1, g->stream) : gs_real.cuEventRecord(t.ev1, g->stream);
  uint64_t wall = gs_now_ns() - g->wall0, cpu = thread_cpu_ns() - g->cpu0;
  /* With an idle GPU the host's time between the records is taken out of
   * the sample; if the thread was off the CPU meanwhile, that time is not
   * known and the sample says nothing. (With a busy GPU the events alone
   * measure the launch, whatever the host did.) */
  t.sample_pending = r == CUDA_SUCCESS && (!g->t0 || wall < cpu + (uint64_t)PREEMPTED_NS);
  t.sample_gap = g->t0 ? gs_now_ns() - g->t0 : 0;
}
