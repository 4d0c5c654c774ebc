/* A fake libnvidia-ml.so.1 backed by the fake driver's state: memory info
 * (total per FAKE_CUDA_MEMORY, used = what the fake driver has handed out in
 * this process), running processes and utilization (share of wall time the
 * fake GPU spent in this process's kernels since the previous query). Real
 * signatures and return codes.
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
static void memory(int dev, unsigned long long *total, unsigned long long *free_b, unsigned long long *used) {
  *total = fakecuda_device_total(dev);
  *used = fakecuda_device_used(dev);
  *free_b = *total - *used;
}
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

/* The node's processes using device `index`, from the driver's accounting
 * directory; -1 when there is none. */
static int node_processes(int index, unsigned *count, nvmlProcessInfo_t *infos) {
  DIR *d = opendir(FAKECUDA_PROCESS_DIR);
  if (!d) return -1;
  unsigned n = 0, room = *count;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", FAKECUDA_PROCESS_DIR, e->d_name);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;
    uint64_t used[FAKECUDA_MAX_DEVICES] = {0};
    struct stat st;
    int ok = pread(fd, used, sizeof used, 0) == (ssize_t)sizeof used && raw_fstat(fd, &st) == 0;
    close(fd);
    if (!ok || used[index] == 0) continue;
    unsigned pid = holder_of(st.st_dev, st.st_ino);
    if (!pid) continue; /* its process is gone: the driver has freed its memory */
    if (infos && n < room) {
      infos[n].pid = pid;
      infos[n].usedGpuMemory = used[index];
      infos[n].gpuInstanceId = 0xffffffffu;
      infos[n].computeInstanceId = 0xffffffffu;
    }
    n++;
  }
  closedir(d);
  *count = n;
  return n > room ? 1 : 0;
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
