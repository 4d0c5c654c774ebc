/* Binds the glibc calls of a program or library built here that runs in
 * container images (the fake driver and the probe of the old-glibc image
 * test) to the oldest symbol versions, so that it loads on glibc >= 2.17.
 * The interposer does not use this: it calls none of these functions (it
 * finds the loader's at run time), so that it needs libc.so.6 alone.
 *
 * Why: glibc 2.34 moved dlopen & co. and the pthread functions from libdl
 * and libpthread into libc.so.6 under new versions (GLIBC_2.34), and 2.33
 * made fstat & co. real functions (GLIBC_2.33). Built on a newer glibc, a
 * library refers to those versions, and ld.so refuses to load it into a
 * process whose glibc lacks them: a preloaded interposer then kills every
 * program of an Ubuntu 20.04, UBI 8 or CentOS 7 image. Newer glibc still
 * exports the old versions, so binding to them works on both sides; on an
 * old glibc they live in libdl.so.2 / libpthread.so.0, which the target
 * therefore names as NEEDED (cmake/GlibcFloor.cmake).
 *
 * Force-included (-include) by targets marked with gpuslice_glibc_floor().
 * Not for a library that defines dlsym & co.: a .symver on a name the file
 * defines versions the definition. fstat has no old version at all (it was
 * an inline over __fxstat): not usable there. This header includes nothing,
 * so that the feature macros (_GNU_SOURCE) of the file it is forced into
 * still take effect.
 */
#ifndef GPUSLICE_GLIBC_FLOOR_H
#define GPUSLICE_GLIBC_FLOOR_H

/* __GLIBC__ is not known yet (features.h comes later): Linux is glibc here. */
#if defined(__linux__)

#if defined(__x86_64__)
#define GS_GLIBC_BASE "GLIBC_2.2.5"
#define GS_GLIBC_DLINFO "GLIBC_2.3.3"
#define GS_GLIBC_DLMOPEN "GLIBC_2.3.4"
#elif defined(__aarch64__)
#define GS_GLIBC_BASE "GLIBC_2.17"
#define GS_GLIBC_DLINFO "GLIBC_2.17"
#define GS_GLIBC_DLMOPEN "GLIBC_2.17"
#else
#error "glibc_floor.h: symbol versions of this architecture are not known"
#endif

#define GS_GLIBC_PIN(name, version) __asm__(".symver " #name "," #name "@" version)

GS_GLIBC_PIN(dlopen, GS_GLIBC_BASE);
GS_GLIBC_PIN(dlclose, GS_GLIBC_BASE);
GS_GLIBC_PIN(dlerror, GS_GLIBC_BASE);
GS_GLIBC_PIN(dladdr, GS_GLIBC_BASE);
GS_GLIBC_PIN(dlinfo, GS_GLIBC_DLINFO);
GS_GLIBC_PIN(dlsym, GS_GLIBC_BASE);
GS_GLIBC_PIN(dlvsym, GS_GLIBC_BASE);
GS_GLIBC_PIN(dlmopen, GS_GLIBC_DLMOPEN);
GS_GLIBC_PIN(pthread_create, GS_GLIBC_BASE);
GS_GLIBC_PIN(pthread_join, GS_GLIBC_BASE);
GS_GLIBC_PIN(pthread_once, GS_GLIBC_BASE);
GS_GLIBC_PIN(pthread_key_create, GS_GLIBC_BASE);
GS_GLIBC_PIN(pthread_getspecific, GS_GLIBC_BASE);
GS_GLIBC_PIN(pthread_setspecific, GS_GLIBC_BASE);

#endif /* __linux__ */
#endif
