/* gpuslice-runtime's front: what it decides before the C library starts.
 *
 * Most runtime calls concern containers that ask for no GPU, and for them
 * gpuslice-runtime's whole job is an exec of runc. Starting the C library
 * and the C++ program first (glibc's start-up alone asks the CPU dozens of
 * times, each an exit to the hypervisor on a VM) would make every container
 * of the node pay for the few that use a GPU. So the ELF entry point is
 * entry.c: without the C library it proves, from the call's arguments, the
 * config and the bundle's config.json, that the full program would do
 * nothing but exec the runtime, and execs it. On any doubt it returns, and
 * glibc's _start runs the full program as if the front did not exist. It
 * writes nothing and decides nothing else.
 *
 * What it knows of the config comes from a record that the full program,
 * the config's only parser, writes: the config's exact bytes and what they
 * say to the front's questions (the runtimes to look for, the state dir,
 * what in a config.json asks for a device). It is used only when the config
 * file holds those very bytes and this very build wrote it, so it cannot
 * say what the config does not.
 *
 * This file's functions are pure (no system call, no C library): they build
 * into the freestanding entry and into the unit tests alike, and the full
 * program looks for the runtime with gs_find_runtime. */
#ifndef GPUSLICE_RUNTIME_FRONT_H
#define GPUSLICE_RUNTIME_FRONT_H

#include "gpuslice/common/default_path.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Root's, on /run: a boot forgets them. One record per config path. */
#define GS_FRONT_RECORD_DIR "/run/gpuslice/runtime-front"
#define GS_FRONT_MAGIC "gpuslice-runtime front 2\n"
/* The largest config whose bytes a record holds; a larger one always takes
 * the full program. */
#define GS_FRONT_MAX_CONFIG 16384
#define GS_FRONT_MAX_RECORD (GS_FRONT_MAX_CONFIG + 8192)
/* The most runtimes and create triggers a record lists. */
#define GS_FRONT_MAX_LIST 16
/* A larger config.json takes the full program. */
#define GS_FRONT_MAX_SPEC (1 << 20)

struct gs_front_record {
  const char *writer;      /* the build id (hex) of the program that wrote it */
  const char *config_path; /* absolute */
  const char *state_dir;   /* absolute, clean */
  int runtimes;            /* the config's runtimes, in its order */
  const char *runtime[GS_FRONT_MAX_LIST];
  int triggers;            /* what in a config.json makes a create the full program's */
  const char *trigger[GS_FRONT_MAX_LIST];
  int config_absent;       /* no file there: the defaults */
  const char *config;      /* its bytes */
  size_t config_size;
};

/* Parses buf[0..len), cutting its lines in place (buf[len] need not be
 * writable). 0, or -1 for anything not exactly what the full program writes. */
int gs_front_parse_record(char *buf, size_t len, struct gs_front_record *r);

/* Whether `r` was written by build `build_id` for this config path and
 * these bytes (config NULL: no file). */
int gs_front_record_matches(const struct gs_front_record *r, const char *build_id, const char *config_path,
                            const char *config, size_t config_size);

/* 0 only when a config.json's bytes cannot ask for anything: none of r's
 * triggers, no escape that could spell one (\u, \/), no NUL, and no "path"
 * whose string value holds '=' without starting with '/' (a CDI device name
 * in linux.devices). 1 on any doubt. */
int gs_front_spec_may_request(const char *json, size_t len, const struct gs_front_record *r);

/* The runtime to run: the first of names[0..n) that `usable` accepts, a
 * name with a '/' as it is (only an absolute one), any other in each
 * absolute directory of path_env (NULL: GS_DEFAULT_PATH) in turn, the path
 * built as "DIR/NAME". 0 and out (NUL-terminated); -1 when none is, or a
 * path does not fit in cap bytes. */
typedef int (*gs_usable_runtime)(const char *path, void *ctx);
int gs_find_runtime(const char *const *names, int n, const char *path_env, char *out, size_t cap,
                    gs_usable_runtime usable, void *ctx);

/* FNV-1a 64 of s[0..len) as 16 lower-case hex digits and a NUL: a record's
 * file name is that of its config path. */
void gs_front_digest(const char *s, size_t len, char out[17]);

/* out = dir[0..dir_len) "/" name (dir's trailing slashes dropped), when it
 * fits in cap bytes with its NUL: 0, or -1. */
int gs_join_path(char *out, size_t cap, const char *dir, size_t dir_len, const char *name);

size_t gs_strlen(const char *s);
int gs_streq(const char *a, const char *b);
int gs_bytes_equal(const char *a, const char *b, size_t n);

#ifdef __cplusplus
}
#endif

#endif
