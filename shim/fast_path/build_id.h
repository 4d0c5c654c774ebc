/* The running program's build id, read by the entry from its own program
 * headers (no C library yet): records name the build that wrote them, and a
 * build acts only on its own (fast_path.h). Pure, as fast_path.h. */
#ifndef GPUSLICE_SHIM_FAST_PATH_BUILD_ID_H
#define GPUSLICE_SHIM_FAST_PATH_BUILD_ID_H

#include <elf.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The most bytes of build id that are read (sha1 takes 20, xxhash 8). */
#define GPUSLICE_FP_MAX_BUILD_ID 64

/* The NT_GNU_BUILD_ID note of the object whose program headers these are
 * (loaded `bias` bytes from its addresses), in lower-case hex and
 * NUL-terminated in hex[0..2 * GPUSLICE_FP_MAX_BUILD_ID]: its length, or 0
 * when it has none (or a larger one). */
size_t gpuslice_fp_build_id(const Elf64_Phdr *phdr, size_t phnum, unsigned long bias,
                            char hex[2 * GPUSLICE_FP_MAX_BUILD_ID + 1]);

#ifdef __cplusplus
}
#endif

#endif
