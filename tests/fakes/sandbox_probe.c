/* What gpuslice-hook's sandbox (hook/sandbox.hpp) lets a program do, seen
 * from inside: its pid (1: a PID namespace of its own), its effective
 * capabilities, whether it may open a socket (no: EPERM), whether the host's
 * /proc is there (no: a chroot). With "mount" or "exec" as argument it then
 * tries that, which the filter answers by killing it (SIGSYS). Static: the
 * sandbox runs nothing that needs a loader. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv) {
  /* The sandbox's stdout is /dev/null; --to-stderr: answer where the
   * caller reads (stderr). */
  if (argc > 1 && strcmp(argv[1], "--to-stderr") == 0) {
    dup2(2, 1);
    argv++;
    argc--;
  }
  struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2];
  memset(data, 0, sizeof data);
  unsigned long long effective = 0;
  if (syscall(SYS_capget, &header, data) == 0)
    effective = ((unsigned long long)data[1].effective << 32) | data[0].effective;
  printf("pid=%d\n", (int)getpid());
  printf("cap_eff=%llx\n", effective);
  int s = socket(AF_INET, SOCK_STREAM, 0);
  printf("socket=%s\n", s >= 0 ? "ok" : strerror(errno));
  printf("proc=%s\n", access("/proc/self", F_OK) == 0 ? "present" : "absent");
  fflush(stdout);
  if (argc > 1 && strcmp(argv[1], "mount") == 0)
    mount("none", "/", "tmpfs", 0, NULL);
  if (argc > 1 && strcmp(argv[1], "exec") == 0) {
    char *args[] = {"sh", NULL};
    execve("/bin/sh", args, NULL);
  }
  printf("survived\n");
  return 0;
}
