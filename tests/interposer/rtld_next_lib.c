/* Two preloaded libraries that define the same function, as two interposers
 * (a profiler and a memory hook, say) both defining malloc: each passes to
 * the next one with dlsym(RTLD_NEXT, ...). Built twice: as rtld_next_a
 * (MARK 'a', with NEXT_CHECK) and rtld_next_b (MARK 'b'). Preloaded after
 * libgpuslice-cuda.so in the order a, b, a's constructor prints which
 * definition comes next after it: "b" is right; "a", its own, is the one a
 * lookup made relative to libgpuslice-cuda.so finds (and a real interposer
 * would then call itself forever). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

__attribute__((visibility("default"))) int gs_next_marker(void) { return MARK; }

#ifdef NEXT_CHECK
__attribute__((constructor)) static void print_next(void) {
  int (*next)(void) = (int (*)(void))dlsym(RTLD_NEXT, "gs_next_marker");
  printf("next after a: %c\n", next ? next() : '?');
  fflush(stdout);
}
#endif
