/* For executables built with gpuslice_glibc_floor(): glibc 2.34's crt1
 * calls __libc_start_main@GLIBC_2.34, which older glibc lacks. The link
 * wraps that call (--wrap) to the oldest version, and hands it the
 * executable's constructors: the old ABI ran them through the `init`
 * argument, which the new crt1 passes as NULL (glibc >= 2.34 runs them
 * itself only when `init` is NULL, so they run once either way). */
#include <stddef.h>

typedef int (*gs_main_fn)(int, char **, char **);
typedef void (*gs_init_fn)(int, char **, char **);

extern gs_init_fn __preinit_array_start[] __attribute__((weak));
extern gs_init_fn __preinit_array_end[] __attribute__((weak));
extern gs_init_fn __init_array_start[] __attribute__((weak));
extern gs_init_fn __init_array_end[] __attribute__((weak));

int gs_floor_libc_start_main(gs_main_fn main_fn, int argc, char **argv, void (*init)(int, char **, char **),
                             void (*fini)(void), void (*rtld_fini)(void), void *stack_end);
__asm__(".symver gs_floor_libc_start_main,__libc_start_main@" GS_GLIBC_BASE);

static void run_constructors(int argc, char **argv, char **envp) {
  for (gs_init_fn *f = __preinit_array_start; f && f < __preinit_array_end; f++) (*f)(argc, argv, envp);
  for (gs_init_fn *f = __init_array_start; f && f < __init_array_end; f++) (*f)(argc, argv, envp);
}

int __wrap___libc_start_main(gs_main_fn main_fn, int argc, char **argv, void (*init)(int, char **, char **),
                             void (*fini)(void), void (*rtld_fini)(void), void *stack_end) {
  return gs_floor_libc_start_main(main_fn, argc, argv, init ? init : run_constructors, fini, rtld_fini, stack_end);
}
