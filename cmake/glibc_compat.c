/* gpuslice-shim links libstdc++ statically (shim/CMakeLists.txt), and gcc
 * 12's libstdc++.a calls arc4random, new in glibc 2.36, from
 * std::random_device, which gpuslice never uses. Defined here, over
 * getrandom (glibc 2.25), so that the program still starts on RHEL 9.4's
 * glibc 2.34; where glibc has its own, this one (in the executable) is the
 * one used, equally random. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/random.h>

uint32_t arc4random(void) {
  uint32_t value;
  for (;;) {
    ssize_t n = getrandom(&value, sizeof value, 0);
    if (n == (ssize_t)sizeof value) return value;
    if (n < 0 && errno != EINTR) abort(); /* no kernel randomness: nothing sane to return */
  }
}
