/* The floor of any runc wrapper, without a C library: the kernel's entry
 * point finds GPUSLICE_FLOOR_RUNTIME in the environment and execs it with
 * the arguments untouched, the way gpuslice-runtime's front execs the
 * runtime before glibc starts (runtime/front/entry.c). What bench_start.py
 * measures for it is one exec and nothing else: exec_floor, a static glibc
 * program, adds glibc's start-up, which made a floor that gpuslice-runtime
 * could pass.
 *
 * x86-64 only; exit status 127 when the variable is
 * unset or the exec fails, as a shell's for a command it cannot run. */
#include <asm/unistd.h>

static long sys_call3(long n, long a, long b, long c) {
  long ret;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return ret;
}

static __attribute__((noreturn)) void exit_with(int status) {
  for (;;)
    sys_call3(__NR_exit_group, status, 0, 0);
}

static const char *env_value(char **envp, const char *name) {
  for (; *envp; ++envp) {
    const char *e = *envp;
    int i = 0;
    while (name[i] && e[i] == name[i])
      ++i;
    if (!name[i] && e[i] == '=')
      return e + i + 1;
  }
  return 0;
}

__attribute__((used, noreturn)) void exec_floor_bare(long *sp) {
  const int argc = (int)sp[0];
  char **argv = (char **)(sp + 1);
  char **envp = argv + argc + 1;
  const char *runtime = env_value(envp, "GPUSLICE_FLOOR_RUNTIME");
  if (!runtime || !*runtime || argc < 1)
    exit_with(127);
  argv[0] = (char *)runtime;
  sys_call3(__NR_execve, (long)runtime, (long)argv, (long)envp);
  exit_with(127);
}

__asm__(".text\n"
        ".globl _start\n"
        ".type _start,@function\n"
        "_start:\n"
        "  mov %rsp, %rdi\n"
        "  and $-16, %rsp\n"
        "  call exec_floor_bare\n"
        "  hlt\n");
