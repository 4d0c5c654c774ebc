/* A fake libnvidia-ml.so.1 backed by the fake driver's state: memory info
 * (total per FAKE_CUDA_MEMORY, used = what the fake driver has handed out in
 * this process), running processes and utilization (share of wall time the
 * fake GPU spent in this process's kernels since the previous query), per
 * process utilization samples and the device's name. Real signatures and
 * return codes.
 *
 * Running processes are the node's, as the real NVML reports them, where the
 * fake driver's accounting directory exists (FAKECUDA_PROCESS_DIR: each
 * process using the fake GPU keeps its usage there): pids as seen from the
 * caller's pid namespace (found through /proc/PID/fd), usage per device.
 * Without it, this process alone.
 */
#define _GNU_SOURCE
#include "fake_cuda_internal.h"

#include <dirent.h>
#include <pthread.h>
#include <time.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

struct nvmlDevice_st {
  int index;
};

static struct nvmlDevice_st devices[8] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}};
static _Atomic int inited;
static uint64_t last_busy, last_time;

#define NEED_INIT()                                                                                \
  do {                                                                                             \
    if (!atomic_load(&inited)) return NVML_ERROR_UNINITIALIZED;                                    \
  } while (0)
#define CHECK_DEVICE(d)                                                                            \
  do {                                                                                             \
    if (!(d) || (d) < devices || (d) >= devices + fakecuda_device_count())                         \
      return NVML_ERROR_INVALID_ARGUMENT;                                                          \
  } while (0)

nvmlReturn_t nvmlInit_v2(void) {
  atomic_store(&inited, 1);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlShutdown(void) {
  NEED_INIT();
  atomic_store(&inited, 0);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n) {
  NEED_INIT();
  if (!n) return NVML_ERROR_INVALID_ARGUMENT;
  *n = (unsigned)fakecuda_device_count();
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d) {
  NEED_INIT();
  if (!d || i >= (unsigned)fakecuda_device_count()) return NVML_ERROR_INVALID_ARGUMENT;
  *d = &devices[i];
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *out, unsigned int len) {
  NEED_INIT();
  CHECK_DEVICE(d);
  if (!out) return NVML_ERROR_INVALID_ARGUMENT;
  if (len < 41) return NVML_ERROR_INSUFFICIENT_SIZE;
  CUuuid u;
  fakecuda_uuid(d->index, &u);
  const unsigned char *b = (const unsigned char *)u.bytes;
  snprintf(out, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
           b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return NVML_SUCCESS;
}
static void memory(int dev, unsigned long long *total, unsigned long long *free_b, unsigned long long *used);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m) {
  NEED_INIT();
  CHECK_DEVICE(d);
  if (!m) return NVML_ERROR_INVALID_ARGUMENT;
  memory(d->index, &m->total, &m->free, &m->used);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m) {
  NEED_INIT();
  CHECK_DEVICE(d);
  /* newer headers call a wrong version NVML_ERROR_ARGUMENT_VERSION_MISMATCH */
  if (!m || m->version != nvmlMemory_v2) return NVML_ERROR_INVALID_ARGUMENT;
  m->reserved = 0;
  memory(d->index, &m->total, &m->free, &m->used);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u) {
  NEED_INIT();
  CHECK_DEVICE(d);
  if (!u) return NVML_ERROR_INVALID_ARGUMENT;
  uint64_t now = fake_now_ns(), busy = fakecuda_busy_ns();
  uint64_t dt = now - last_time;
  u->gpu = last_time && dt ? (unsigned)((busy - last_busy) * 100 / dt) : 0;
  if (u->gpu > 100) u->gpu = 100;
  u->memory = 0;
  last_time = now;
  last_busy = busy;
  return NVML_SUCCESS;
}
/* stat and fstat by system call: glibc's own symbols for them are new in
 * 2.33, and this library loads on 2.17 (the old-glibc image test). */
static int raw_stat(const char *path, struct stat *st) {
  return (int)syscall(SYS_newfstatat, AT_FDCWD, path, st, 0);
}
static int raw_fstat(int fd, struct stat *st) { return (int)syscall(SYS_fstat, fd, st); }

/* The pid (in our pid namespace) of a process holding the file dev:ino open, 0 if none. */
static unsigned holder_of(dev_t dev, ino_t ino) {
  DIR *procs = opendir("/proc");
  if (!procs) return 0;
  unsigned found = 0;
  struct dirent *p;
  while (!found && (p = readdir(procs))) {
    if (p->d_name[0] < '1' || p->d_name[0] > '9') continue;
    char fd_dir[300];
    snprintf(fd_dir, sizeof fd_dir, "/proc/%s/fd", p->d_name);
    DIR *fds = opendir(fd_dir);
    if (!fds) continue;
    struct dirent *f;
    while ((f = readdir(fds))) {
      char path[600];
      struct stat st;
      snprintf(path, sizeof path, "%s/%s", fd_dir, f->d_name);
      if (f->d_name[0] != '.' && raw_stat(path, &st) == 0 && st.st_dev == dev && st.st_ino == ino) {
        found = (unsigned)atoi(p->d_name);
        break;
      }
    }
    closedir(fds);
  }
  closedir(procs);
  return found;
}

/* One process's entry in the driver's accounting directory. */
struct node_process {
  unsigned pid;
  uint64_t used[FAKECUDA_MAX_DEVICES];
  uint64_t busy_ns, born_ns; /* its kernels' time; when it first held memory (monotonic) */
};

/* Calls `each` for the node's live processes that use device `index`, from
 * the driver's accounting directory; -1 when there is none. */
static int for_node_processes(int index, void (*each)(const struct node_process *, void *), void *arg) {
  DIR *d = opendir(FAKECUDA_PROCESS_DIR);
  if (!d) return -1;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", FAKECUDA_PROCESS_DIR, e->d_name);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;
    uint64_t file[FAKECUDA_MAX_DEVICES + 1] = {0};
    struct stat st;
    ssize_t got = pread(fd, file, sizeof file, 0);
    int ok = got >= (ssize_t)(FAKECUDA_MAX_DEVICES * sizeof(uint64_t)) && raw_fstat(fd, &st) == 0;
    close(fd);
    if (!ok || file[index] == 0) continue;
    struct node_process p;
    p.pid = holder_of(st.st_dev, st.st_ino);
    if (!p.pid) continue; /* its process is gone: the driver has freed its memory */
    memcpy(p.used, file, sizeof p.used);
    p.busy_ns = file[FAKECUDA_MAX_DEVICES];
    const char *dash = strchr(e->d_name, '-'); /* "PID-BORNHEX" */
    p.born_ns = dash ? strtoull(dash + 1, NULL, 16) : 0;
    each(&p, arg);
  }
  closedir(d);
  return 0;
}

struct process_list {
  int index;
  unsigned n, room;
  nvmlProcessInfo_t *infos;
};

static void list_process(const struct node_process *p, void *arg) {
  struct process_list *l = arg;
  if (l->infos && l->n < l->room) {
    l->infos[l->n].pid = p->pid;
    l->infos[l->n].usedGpuMemory = p->used[l->index];
    l->infos[l->n].gpuInstanceId = 0xffffffffu;
    l->infos[l->n].computeInstanceId = 0xffffffffu;
  }
  l->n++;
}

/* The node's processes using device `index`; -1 when there is no
 * accounting directory, 1 when they do not fit in *count. */
static int node_processes(int index, unsigned *count, nvmlProcessInfo_t *infos) {
  struct process_list l = {index, 0, *count, infos};
  if (for_node_processes(index, list_process, &l) < 0) return -1;
  *count = l.n;
  return l.n > l.room ? 1 : 0;
}

static void add_used(const struct node_process *p, void *arg) {
  struct { int index; unsigned long long used; } *sum = arg;
  sum->used += p->used[sum->index];
}

/* The device's memory: used by the node's processes where the accounting
 * directory says (as the real NVML counts the whole device), else by this
 * process. */
static void memory(int dev, unsigned long long *total, unsigned long long *free_b, unsigned long long *used) {
  *total = fakecuda_device_total(dev);
  struct { int index; unsigned long long used; } sum = {dev, 0};
  *used = for_node_processes(dev, add_used, &sum) == 0 ? sum.used : fakecuda_device_used(dev);
  if (*used > *total) *used = *total;
  *free_b = *total - *used;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *count, nvmlProcessInfo_t *infos) {
  NEED_INIT();
  CHECK_DEVICE(d);
  if (!count) return NVML_ERROR_INVALID_ARGUMENT;
  int node = node_processes(d->index, count, infos);
  if (node >= 0) return node ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
  uint64_t used = fakecuda_device_used(d->index);
  unsigned n = used ? 1 : 0;
  if (*count < n) {
    *count = n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  *count = n;
  if (n && infos) {
    infos[0].pid = (unsigned)getpid();
    infos[0].usedGpuMemory = used;
    infos[0].gpuInstanceId = 0xffffffffu;
    infos[0].computeInstanceId = 0xffffffffu;
  }
  return NVML_SUCCESS;
}

/* Per-process utilization: one sample per process using the device, its
 * SM share of the time since the previous sample this library took of it
 * (or since it first held memory). Like the real driver: a NULL buffer
 * asks for the count (NVML_ERROR_INSUFFICIENT_SIZE), no sample newer than
 * lastSeenTimeStamp is NVML_ERROR_NOT_FOUND. */
#define MAX_SEEN 256
static struct { unsigned pid; uint64_t busy_ns, at_ns; } seen[MAX_SEEN];
static pthread_mutex_t seen_mu = PTHREAD_MUTEX_INITIALIZER;

struct sample_list {
  unsigned n, room;
  nvmlProcessUtilizationSample_t *out;
  unsigned long long now_us;
  uint64_t now_ns;
};

static void sample_process(const struct node_process *p, void *arg) {
  struct sample_list *l = arg;
  if (l->out && l->n < l->room) {
    uint64_t busy_before = 0, since = p->born_ns;
    int slot = -1;
    for (int i = 0; i < MAX_SEEN; i++) {
      if (seen[i].pid == p->pid) {
        slot = i;
        break;
      }
      if (slot < 0 && seen[i].pid == 0) slot = i;
    }
    if (slot >= 0 && seen[slot].pid == p->pid && seen[slot].at_ns >= p->born_ns) {
      busy_before = seen[slot].busy_ns;
      since = seen[slot].at_ns;
    }
    uint64_t dt = l->now_ns > since ? l->now_ns - since : 0;
    uint64_t busy = p->busy_ns > busy_before ? p->busy_ns - busy_before : 0;
    unsigned sm = dt ? (unsigned)(busy * 100 / dt) : 0;
    nvmlProcessUtilizationSample_t *s = &l->out[l->n];
    s->pid = p->pid;
    s->timeStamp = l->now_us;
    s->smUtil = sm > 100 ? 100 : sm;
    s->memUtil = s->encUtil = s->decUtil = 0;
    if (slot >= 0) {
      seen[slot].pid = p->pid;
      seen[slot].busy_ns = p->busy_ns;
      seen[slot].at_ns = l->now_ns;
    }
  }
  l->n++;
}

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d, nvmlProcessUtilizationSample_t *utilization,
                                             unsigned int *processSamplesCount, unsigned long long lastSeenTimeStamp) {
  NEED_INIT();
  CHECK_DEVICE(d);
  if (!processSamplesCount) return NVML_ERROR_INVALID_ARGUMENT;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct sample_list l = {0, utilization ? *processSamplesCount : 0, utilization,
                          (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000,
                          fake_now_ns()};
  if (lastSeenTimeStamp >= l.now_us) return NVML_ERROR_NOT_FOUND;
  pthread_mutex_lock(&seen_mu);
  int r = for_node_processes(d->index, sample_process, &l);
  pthread_mutex_unlock(&seen_mu);
  if (r < 0) return NVML_ERROR_NOT_SUPPORTED; /* no per-process accounting to sample */
  if (!utilization || l.n > l.room) {
    *processSamplesCount = l.n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  *processSamplesCount = l.n;
  return l.n ? NVML_SUCCESS : NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int length) {
  NEED_INIT();
  CHECK_DEVICE(d);
  if (!name) return NVML_ERROR_INVALID_ARGUMENT;
  const char *model = "Fake GPU (gpuslice tests)";
  if (length < strlen(model) + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(name, model, strlen(model) + 1);
  return NVML_SUCCESS;
}
