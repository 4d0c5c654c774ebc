/* The floor of any runc wrapper: a static program that only replaces itself
 * with the runtime GPUSLICE_FLOOR_RUNTIME names, arguments untouched. What
 * bench_start.py measures for it is one exec of the smallest binary there
 * is; gpuslice-runtime's cost above it is what gpuslice itself adds.
 *
 * With GPUSLICE_FLOOR_STAMP set, it first writes CLOCK_MONOTONIC (ns) to
 * that file: the moment the low-level runtime starts, for bench_start.py's
 * "before the runtime" figure (what a wrapper spends before runc runs, free
 * of runc's own swings). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void stamp(const char *path) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  char text[32];
  const int n = snprintf(text, sizeof text, "%lld\n", (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || write(fd, text, (size_t)n) != n)
    perror(path); /* the bench then finds no stamp and says so */
  if (fd >= 0)
    close(fd);
}

int main(int argc, char **argv) {
  (void)argc;
  const char *runtime = getenv("GPUSLICE_FLOOR_RUNTIME");
  if (!runtime || !*runtime) {
    fputs("exec_floor: set GPUSLICE_FLOOR_RUNTIME to the runtime to exec\n", stderr);
    return 127;
  }
  const char *stamp_file = getenv("GPUSLICE_FLOOR_STAMP");
  if (stamp_file && *stamp_file)
    stamp(stamp_file);
  argv[0] = (char *)runtime;
  execv(runtime, argv);
  perror(runtime);
  return 127;
}
