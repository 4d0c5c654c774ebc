/* The floor of any runc wrapper: a static program that only replaces itself
 * with the runtime GPUSLICE_FLOOR_RUNTIME names, arguments untouched. What
 * bench_start.py measures for it is one exec of the smallest binary there
 * is; gpuslice-runtime's cost above it is what gpuslice itself adds. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
  (void)argc;
  const char *runtime = getenv("GPUSLICE_FLOOR_RUNTIME");
  if (!runtime || !*runtime) {
    fputs("exec_floor: set GPUSLICE_FLOOR_RUNTIME to the runtime to exec\n", stderr);
    return 127;
  }
  argv[0] = (char *)runtime;
  execv(runtime, argv);
  perror(runtime);
  return 127;
}
