/* A program's build id, read from its own program headers, in C and without
 * the C library: gpuslice-runtime's front (runtime/front/front.h) reads it
 * before glibc has started, and own_build_id() (build_id.hpp) the same way,
 * so that a record and the binary reading it agree on whose it is. */
#ifndef GPUSLICE_COMMON_BUILD_ID_H
#define GPUSLICE_COMMON_BUILD_ID_H

#include <elf.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The most bytes of build id that are read (sha1 takes 20, xxhash 8). */
#define GS_MAX_BUILD_ID 64

/* The NT_GNU_BUILD_ID note of the loaded object whose program headers
 * these are (AT_PHDR, AT_PHNUM: a static program, PIE or not), in
 * lower-case hex, NUL-terminated: its length, or 0 when it has none (or a
 * larger one). */
size_t gs_build_id(const Elf64_Phdr *phdr, size_t phnum, char hex[2 * GS_MAX_BUILD_ID + 1]);

#ifdef __cplusplus
}
#endif

#endif
