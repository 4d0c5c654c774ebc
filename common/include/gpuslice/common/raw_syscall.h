/* A system call without the C library: its result, or -errno, and errno
 * left alone. For code that may not call the C library: gpuslice-runtime's
 * front, which runs before glibc has started (runtime/front/entry.c), and
 * the init recorder, whose errno and memory belong to another process until
 * that one execs (runtime/src/init_recorder.cpp). Both build it for x86-64
 * and aarch64; elsewhere GS_HAVE_RAW_SYSCALL is not defined. */
#ifndef GPUSLICE_COMMON_RAW_SYSCALL_H
#define GPUSLICE_COMMON_RAW_SYSCALL_H

#if defined(__x86_64__) || defined(__aarch64__)
#define GS_HAVE_RAW_SYSCALL 1

/* Not instrumented: ASan's checks may call into its runtime, which neither
 * caller may. */
__attribute__((no_sanitize_address)) static inline long gs_raw_syscall(long n, long a, long b, long c, long d,
                                                                         long e) {
#if defined(__x86_64__)
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  long ret;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8) : "rcx", "r11", "memory");
  return ret;
#else
  register long x8 __asm__("x8") = n;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  register long x4 __asm__("x4") = e;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4) : "memory");
  return x0;
#endif
}
#endif

#endif
