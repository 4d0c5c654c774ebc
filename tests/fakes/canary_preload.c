/* What a hostile image would name in LD_PRELOAD or LD_LIBRARY_PATH: a
 * library that, once loaded into any process, says so. Its constructor
 * writes "loaded.<pid>" (holding the process's executable) next to the
 * library itself, found through dladdr: no env var needed, so a scrubbed
 * environment cannot hide a load. tests/integration/test_hook_mode.py
 * checks that no host process gpuslice starts ever writes one. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void canary_loaded(void) {
  Dl_info info;
  if (!dladdr((void *)canary_loaded, &info) || !info.dli_fname)
    return;
  char marker[PATH_MAX];
  const char *slash = strrchr(info.dli_fname, '/');
  int dir_len = slash ? (int)(slash - info.dli_fname) : 1;
  snprintf(marker, sizeof marker, "%.*s/loaded.%d", dir_len, slash ? info.dli_fname : ".", (int)getpid());
  char exe[PATH_MAX] = "?";
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 1] = '\0';
  int fd = open(marker, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) {
    ssize_t w = write(fd, exe, strlen(exe));
    (void)w;
    close(fd);
  }
}
