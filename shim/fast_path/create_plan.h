/* A create with devices done by the entry alone: what the full program left
 * for it (a plan), and the entry's pure decisions around it.
 *
 * Why: a create with devices ran the full program, whose start-up and C++
 * work cost ~1.2 ms more than the entry's exec on a small VM, nearly all of
 * it pages touched once (docs/start-overhead.md). For one config, one set of
 * devices asked for by annotation, and the very spec files and host device
 * nodes it read, the full program's work is the same every time but for
 * the config.json it edits and the state dir it makes. So after such a
 * create it writes a plan (shim/src/create_plan.cpp): the edits, complete,
 * and what they depend on; and the entry (entry.c) does the next create of
 * the same devices itself when every one of those still holds, the
 * config.json is one whose merge cdi_merge.c vouches for, and nothing else
 * in it asks for more (limits, an SELinux label, other requests). On any
 * doubt the full program runs, as before.
 *
 * The plan's text: one line a field, tab-separated, exactly as
 * shim::create_plan_text writes it (the unit tests hold the two to each
 * other). Everything here is pure, as fast_path.h. */
#ifndef GPUSLICE_SHIM_FAST_PATH_CREATE_PLAN_H
#define GPUSLICE_SHIM_FAST_PATH_CREATE_PLAN_H

#include "cdi_merge.h"
#include "fast_path.h"
#include "json_tree.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPUSLICE_FP_PLAN_MAGIC "gpuslice-runtime create plan 1\n"
/* Where plans are (shim::kCreatePlanDir). */
#define GPUSLICE_FP_PLAN_DIR "/run/gpuslice/runtime-create-plans"

/* What the entry writes of a container's state dir as state/container_dir.cpp
 * does (the integration tests compare the two dirs): a temporary of this
 * prefix, PID-ID, renamed into place, its format record, and the marker of
 * the last collection of stale dirs, which a create leaves to the full
 * program when it is this old. */
#define GPUSLICE_FP_STATE_TEMP_PREFIX ".new-"
#define GPUSLICE_FP_STATE_FORMAT_FILE "format"
#define GPUSLICE_FP_STATE_FORMAT_TEXT "gpuslice-state 2\n"
#define GPUSLICE_FP_STALE_COLLECTED "stale-collected"
#define GPUSLICE_FP_STALE_INTERVAL 60
#define GPUSLICE_FP_CDI_ENV_FILE "cdi-env"
/* A config.json's temporary (fs::write_file_atomic): PATH, this, PID.NONCE. */
#define GPUSLICE_FP_TEMP_MARKER ".gpuslice-tmp."
/* The file of a plan, in GPUSLICE_FAST_PATH_DIR: this prefix and 16 hex
 * digits of FNV-1a 64 of the config path, a newline and the device list. */
#define GPUSLICE_FP_PLAN_PREFIX "create-"
#define GPUSLICE_FP_PLAN_MAX 65536

/* The most of each a plan holds (a plan that would hold more is not
 * written): a node's driver spec mounts some 50 files, adds a few nodes and
 * hooks. Small, so that a parsed plan lies in a few pages. */
#define GPUSLICE_FP_PLAN_MAX_PREFIXES 8
#define GPUSLICE_FP_PLAN_MAX_SPEC_DIRS 8
#define GPUSLICE_FP_PLAN_MAX_SPEC_FILES 32
#define GPUSLICE_FP_PLAN_MAX_HOST_NODES 32
#define GPUSLICE_FP_PLAN_MAX_ENV 64
#define GPUSLICE_FP_PLAN_MAX_DEVICES 64
#define GPUSLICE_FP_PLAN_MAX_MOUNTS 128
#define GPUSLICE_FP_PLAN_MAX_HOOKS 32

/* A spec dir as the plan's writer saw it: absent, or its identity and mtime
 * (a spec file added, removed or renamed there changes it). */
struct gpuslice_fp_plan_dir {
  const char *path;
  int absent;
  unsigned long long dev_major, dev_minor, ino, mtime_sec, mtime_nsec;
};
/* A spec file (followed, as the registry reads it): its identity, size and
 * times (a write changes its ctime, which no one can set back). */
struct gpuslice_fp_plan_file {
  const char *path;
  unsigned long long dev_major, dev_minor, ino, size, mtime_sec, mtime_nsec, ctime_sec, ctime_nsec;
};
/* A host device node a device node was completed from (lstat): its type
 * ('b', 'c', 'p'; 0: the lookup failed), numbers and mode. */
struct gpuslice_fp_plan_node {
  const char *path;
  char type;
  unsigned long long major, minor, mode;
};

/* The arrays in the order a plan's text lists them, the largest last: what
 * a usual plan fills lies together. */
struct gpuslice_fp_plan {
  const char *writer;        /* the build id of the program that wrote it */
  const char *config_path;
  const char *config_digest; /* gpuslice_fp_digest (fast_path.h) of the config's bytes; "none": no config file */
  const char *devices;       /* the device list, as gpuslice_fp_requested_devices writes it */
  const char *log_file;      /* where the create's info line goes; "": none */
  const char *cdi_env;       /* the state dir's cdi-env record, without its newline */
  int prefixes, spec_dirs, spec_files, host_nodes;
  struct gpuslice_fp_edits edits; /* pointing into the arrays below */
  const char *prefix[GPUSLICE_FP_PLAN_MAX_PREFIXES]; /* the annotation prefixes */
  struct gpuslice_fp_plan_dir spec_dir[GPUSLICE_FP_PLAN_MAX_SPEC_DIRS];
  struct gpuslice_fp_plan_file spec_file[GPUSLICE_FP_PLAN_MAX_SPEC_FILES];
  struct gpuslice_fp_plan_node host_node[GPUSLICE_FP_PLAN_MAX_HOST_NODES];
  struct gpuslice_fp_env_entry env[GPUSLICE_FP_PLAN_MAX_ENV];
  struct gpuslice_fp_device_node device[GPUSLICE_FP_PLAN_MAX_DEVICES];
  struct gpuslice_fp_keyed_json mount[GPUSLICE_FP_PLAN_MAX_MOUNTS], hook[GPUSLICE_FP_PLAN_MAX_HOOKS];
};

/* Parses buf[0..len) (its lines cut in place; buf[len] must be writable):
 * 0, or -1 for anything not exactly the format. */
int gpuslice_fp_parse_plan(char *buf, size_t len, struct gpuslice_fp_plan *out);

/* The devices a config.json asks for by annotation, as collect_requests
 * finds them: the annotations whose keys start with one of the prefixes, in
 * the order of their keys, each value split at ',', every device once;
 * written into out (cap bytes) joined by ','. Its length (0: none), or -1
 * when an escape hides a value, out is too small, or there are more than
 * these annotations or devices (with duplicates) to look at. */
#define GPUSLICE_FP_MAX_REQUEST_ANNOTATIONS 64
#define GPUSLICE_FP_MAX_REQUESTED_DEVICES 256
long gpuslice_fp_requested_devices(const char *text, const struct gpuslice_fp_json_node *nodes,
                                   const char *const *prefixes, int n_prefixes, char *out, size_t cap);

/* Whether the full program could do more with this config.json than the
 * plan says (1), or not (0): a request it takes from elsewhere than
 * annotations (a CDI name in linux.devices, an env request), an SELinux
 * label (its state files get it), an env entry spelled with an escape, or
 * any of `triggers` (the env names the full program looks at: requests,
 * limits) anywhere in the text. */
int gpuslice_fp_create_doubts(const char *text, size_t len, const struct gpuslice_fp_json_node *nodes,
                              const char *const *triggers, int n_triggers);

/* The container id and pid file (NULL: none given) of a create whose flags
 * gpuslice_fp_create_bundle knows; -1 for anything else. */
int gpuslice_fp_create_args(int argc, char *const *argv, int verb, const char **id, const char **pid_file);

/* Whether an absolute path is clean (fs::clean_path would leave it as it
 * is): no empty, "." or ".." component, no '/' at its end. */
int gpuslice_fp_clean_absolute_path(const char *p);

/* The log's time, "YYYY-MM-DDTHH:MM:SS.mmmZ" and a NUL: gpuslice_utc_timestamp
 * (gpuslice/common/utc_timestamp.h), compiled freestanding with the entry. */
void gpuslice_fp_utc_timestamp(long long sec, long nsec, char out[25]);

#ifdef __cplusplus
}
#endif

#endif
