/* CDI container edits applied to a config.json's text, before the C library
 * starts: what cdi::apply_edits (cdi/src/apply.cpp) does to the parsed spec,
 * for edits the full program prepared (device nodes already completed from
 * their host nodes, each text already JSON), on the tree json_tree.h built.
 *
 * Why: a create with devices done by the entry alone (docs/start-overhead.md,
 * "Next") needs CDI's merge without the full program. The result must be
 * the document the full program would write, the same semantics (the text
 * may differ: whitespace, number spelling of untouched values); a unit test
 * holds the two to each other. Where the full program's answer depends on
 * what this does not decide byte by byte (an escape in a compared string, a
 * number spelled 195.0, a hook stage the spec has already, a member that is
 * null or missing where apply.cpp would create it), it returns -1 and the
 * caller hands the create to the full program. */
#ifndef GPUSLICE_SHIM_FAST_PATH_CDI_MERGE_H
#define GPUSLICE_SHIM_FAST_PATH_CDI_MERGE_H

#include "json_tree.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A device node as cdi::apply_edits writes it, its host node looked up. */
struct gpuslice_fp_device_node {
  const char *path;           /* as written, needing no JSON escape */
  char type;                  /* 'c', 'b' or 'p' */
  unsigned long long major, minor;
  long long file_mode;        /* -1: none */
  long long uid, gid;         /* -1: none (then process.user's, when one is set) */
  const char *access;         /* its cgroup rule's (b and c), needing no escape */
};

/* A mount or a hook, as the JSON text of its object, and the key it is
 * merged by (needing no escape). */
struct gpuslice_fp_keyed_json {
  const char *key;  /* a mount's destination; a hook's stage */
  const char *json; /* the whole object */
};

/* An env entry: its key (before '=', needing no escape) and its JSON string. */
struct gpuslice_fp_env_entry {
  const char *key;
  const char *json;
};

struct gpuslice_fp_edits {
  int env_count;
  const struct gpuslice_fp_env_entry *env;
  int device_count;
  const struct gpuslice_fp_device_node *devices;
  int mount_count;
  const struct gpuslice_fp_keyed_json *mounts;
  int hook_count;
  const struct gpuslice_fp_keyed_json *hooks;
};

/* The most items one edited list (env, devices, rules, mounts) may hold. */
#define GPUSLICE_FP_MERGE_MAX_ITEMS 4096

/* Writes text (its tree: nodes, count) with the edits applied into out (at
 * most cap bytes): the length written, or -1 when the full program must
 * decide (above), or out or the work area (work_size ints: each edited
 * list's elements and edits, and as many again) is too small. The work
 * area is the caller's, so that what it touches lies with the rest of its
 * memory (each page a process touches first costs a fault). */
long gpuslice_fp_apply_edits(const char *text, const struct gpuslice_fp_json_node *nodes, int count,
                             const struct gpuslice_fp_edits *edits, char *out, size_t cap, int *work,
                             size_t work_size);

#ifdef __cplusplus
}
#endif

#endif
