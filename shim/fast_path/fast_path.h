/* gpuslice-runtime's fast path: what it decides before the C library starts.
 *
 * Most runtime calls concern containers that asked for no GPU: their
 * create, start, state, kill and delete only need the low-level runtime. gpuslice-runtime
 * is a static glibc program, and on a virtual machine glibc's start-up
 * (CPUID, each an exit to the hypervisor) costs more than everything else
 * the wrapper does. So its ELF entry point is entry.c, which runs first,
 * without the C library, and execs the runtime straight away when it can
 * prove that the full program would do nothing but that exec. Otherwise it
 * returns, and glibc's _start runs the full program as if nothing happened.
 *
 * What it may rely on is a record the full program wrote (fast_path_cache):
 * for one config file's exact bytes and one $PATH, the runtime that file
 * resolves to, its state dir and what in a config.json asks for a GPU.
 * The full program is the only reader of the config; the fast path only
 * compares and scans bytes. Everything here is pure (no
 * system call, no C library) so that it builds into the freestanding entry
 * and into the unit tests alike. */
#ifndef GPUSLICE_SHIM_FAST_PATH_H
#define GPUSLICE_SHIM_FAST_PATH_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where the full program keeps its records, one per config path (its
 * FNV-1a name below): root's, on /run so that a boot forgets them. */
#define GPUSLICE_FAST_PATH_DIR "/run/gpuslice/runtime-fast-path"
#define GPUSLICE_FAST_PATH_MAGIC "gpuslice-runtime fast path 4\n"
/* The largest config file whose bytes a record holds; a larger one always
 * takes the full program. */
#define GPUSLICE_FAST_PATH_MAX_CONFIG 16384
/* The largest record the entry reads; the full program leaves the parsed
 * config out of one that would be larger. */
#define GPUSLICE_FAST_PATH_MAX_RECORD (GPUSLICE_FAST_PATH_MAX_CONFIG + 8191)
/* More arguments than this: the full program (it bounds the stats). */
#define GPUSLICE_FAST_PATH_MAX_ARGS 64

/* runc's and crun's global flags that take a value ("--root R"), each
 * NUL-terminated, an empty one last (a string, not an array of pointers: the
 * entry runs before anything could relocate pointers). The full program's
 * command line parser reads the same list. */
extern const char gpuslice_fp_global_flags_with_value[];
/* Whether `flag` (up to an '=') is one of them. */
int gpuslice_fp_global_flag_takes_value(const char *flag, size_t len);

enum gpuslice_fp_verb_kind {
  GPUSLICE_FP_PLAIN,     /* the full program only execs the runtime (kill, list, ...) */
  GPUSLICE_FP_MONITORED, /* it does more when the container has a monitor (start, state, ps, pause, resume) */
  GPUSLICE_FP_STATEFUL,  /* it does more when the container has gpuslice state (delete, exec) */
  GPUSLICE_FP_BUNDLE     /* create, run: the full program, unless config.json asks for nothing or a plan
                            covers what it asks for (create_plan.h) */
};
enum gpuslice_fp_verb_kind gpuslice_fp_verb_kind(const char *verb);

/* Index in argv of the verb (as shim/command_line.cpp finds it), or argc. */
int gpuslice_fp_find_verb(int argc, char *const *argv);

/* The file in a container's state dir that says it has a monitor
 * (shim::kMonitorArgsFile). */
#define GPUSLICE_FP_MONITOR_ARGS "monitor-args"

/* A delete of a container whose state dir holds only these files (a
 * container with devices and no limits: the state dir's own records, the
 * CDI env for exec, the pid file the runtime gave runc) is the entry's: it
 * runs the runtime and removes the dir once the container's init is gone,
 * as shim::delete_with_state does. NUL-separated, an empty one last (a
 * function, not an extern array: the entry must not go through the GOT). */
const char *gpuslice_fp_plain_state_files(void);
/* 1 when `name` is one of them. */
int gpuslice_fp_plain_state_file(const char *name);
/* The state dir's records of the container's creator, init and monitor,
 * and of the pid file that names the init of a container without limits
 * (state::kCreatorRecord, kInitRecord, kMonitorRecord, kInitPidFileRecord). */
#define GPUSLICE_FP_CREATOR_RECORD "creator"
#define GPUSLICE_FP_INIT_RECORD "init"
#define GPUSLICE_FP_MONITOR_RECORD "monitor"
#define GPUSLICE_FP_INIT_PID_FILE_RECORD "init-pid-file"

/* The init-pid-file record's text (an absolute path and a newline, no other
 * newline, no NUL): 0 and the path NUL-terminated in place of its newline,
 * -1 for anything else. */
int gpuslice_fp_parse_pid_file_record(char *buf, size_t len);
/* A pid file's text (decimal digits, perhaps spaces or newlines after them:
 * parse_pid_text): 0 and the pid (1 to INT_MAX), -1 for anything else. */
int gpuslice_fp_parse_pid(const char *buf, size_t len, unsigned long long *pid);

/* "PID START\n", as the state dir's records are written
 * (state::write_process_record): 0 and the two numbers, -1 for anything
 * else. */
int gpuslice_fp_parse_process_record(const char *buf, size_t len, unsigned long long *pid, unsigned long long *start);
/* /proc/PID/stat's text: 1 and the start time (field 22) of a process that
 * runs, 0 for one that has ended (a zombie), -1 when it cannot be read. */
int gpuslice_fp_proc_stat_start(const char *buf, size_t len, unsigned long long *start);

/* state::is_safe_container_id: only such names can have a state dir. */
int gpuslice_fp_safe_container_id(const char *id);

/* FNV-1a 64 of s[0..len), as 16 lower-case hex digits and a NUL. */
void gpuslice_fp_digest(const char *s, size_t len, char out[17]);
/* Its digest of `s`: the record's file name for config path `s`. */
void gpuslice_fp_record_name(const char *s, char out[17]);

/* A record, parsed: pointers into the buffer given (lines NUL-terminated in
 * place), the config's bytes last. */
/* The most create triggers a record holds (more: no create on the fast path). */
#define GPUSLICE_FP_MAX_CREATE_TRIGGERS 16
/* The most directories searched before the runtime a record holds (more: no record). */
#define GPUSLICE_FP_MAX_SEARCHED_DIRS 32

struct gpuslice_fp_record {
  /* The build id (hex) of the program that wrote it: what it decided
   * (its create triggers above all) is that build's, and a binary acts only
   * on its own build's records (an upgrade that adds a way to ask for a GPU
   * must not meet a record that does not know it). */
  const char *writer;
  const char *config_path;
  int config_absent;       /* the full program found no file there */
  const char *path_env;    /* NULL: $PATH was unset */
  const char *runtime;     /* absolute */
  unsigned long long runtime_dev_major, runtime_dev_minor, runtime_ino;
  /* The directories searched before the runtime was found, each with its
   * mtime then (absent: it was not there); a change of any (a runtime that
   * would now come first) takes the call to the full program. */
  int searched_dirs;
  const char *searched_dir[GPUSLICE_FP_MAX_SEARCHED_DIRS];
  int searched_dir_absent[GPUSLICE_FP_MAX_SEARCHED_DIRS];
  unsigned long long searched_dir_sec[GPUSLICE_FP_MAX_SEARCHED_DIRS], searched_dir_nsec[GPUSLICE_FP_MAX_SEARCHED_DIRS];
  const char *state_dir;   /* absolute, clean */
  /* What in a config.json makes the full program look at a create
   * (shim::create_triggers: the annotation prefixes, the env names of
   * requests and limits); -1 triggers: every create is the full program's. */
  int create_triggers;
  const char *create_trigger[GPUSLICE_FP_MAX_CREATE_TRIGGERS];
  /* What the full program made of the config's bytes, in its own private
   * encoding (shim::config_snapshot), config_parsed_size bytes, not
   * NUL-terminated; NULL: none. The entry only hands it over. */
  const char *config_parsed;
  size_t config_parsed_size;
  const char *config;      /* its bytes, config_size of them */
  size_t config_size;
};

/* Parses buf[0..len) (modified in place, but for the parsed config's bytes;
 * buf[len] must be writable). 0 on success, -1 on anything not exactly the
 * format fast_path_cache writes. */
int gpuslice_fp_parse_record(char *buf, size_t len, struct gpuslice_fp_record *out);

/* Whether the record was written by this build (build_id: its hex; empty:
 * none, and nothing matches) for this config path, these config bytes
 * (config == NULL: no file there) and this $PATH (NULL: unset). */
int gpuslice_fp_record_matches(const struct gpuslice_fp_record *r, const char *build_id, const char *config_path,
                               const char *config, size_t config_size, const char *path_env);

/* The bundle of a create or run (argv[verb] the verb) whose flags are all
 * ones this knows, of runc's and crun's create and run, with one container
 * id: 0 and *bundle (NULL: the current directory, also for an empty
 * value); -1 for anything else. */
int gpuslice_fp_create_bundle(int argc, char *const *argv, int verb, const char **bundle);

/* Whether a config.json (its bytes, unparsed) may hold what makes the full
 * program do more than exec the runtime at create: 0 only when it holds none
 * of r's create triggers, no escape that could spell one (\u, \/), no NUL,
 * and no "path" whose value is relative and holds '=' (a CDI device name in
 * linux.devices). 1 on any doubt. */
int gpuslice_fp_spec_may_request(const char *json, size_t len, const struct gpuslice_fp_record *r);

/* What the entry read before it handed a create or run to the full program
 * (its config.json may hold a request), so that the full program does not
 * open and read the same three files again a few microseconds later: the
 * config's record as it lay on disk (the entry checked that it and its
 * directory are root's alone), the config's bytes, and config.json's. Set
 * only once the record matched the config and $PATH, so each is what the
 * full program would read itself; the full program uses one only where its
 * own path for it is the very same string. In the entry's arena. */
struct gpuslice_fp_handover {
  const char *config_path; /* NULL: nothing handed over */
  const char *config;      /* NULL: there is no config file */
  size_t config_size;
  const char *record;      /* NULL: not kept (a verb other than create or run) */
  size_t record_size;
  const char *config_parsed; /* the record's; NULL: none */
  size_t config_parsed_size;
  const char *spec_path;   /* "BUNDLE/config.json" as the entry opened it; NULL: not read */
  const char *spec;
  size_t spec_size;
};
/* The entry's hand-over (gpuslice-runtime's entry.c defines it). */
const struct gpuslice_fp_handover *gpuslice_fp_handed_over(void);

/* Small string helpers of the freestanding code (no C library there). */
/* Whether needle (NUL-terminated, not empty) occurs in hay[0..len). */
int gpuslice_fp_contains(const char *hay, size_t len, const char *needle);
size_t gpuslice_fp_strlen(const char *s);
int gpuslice_fp_streq(const char *a, const char *b);

#ifdef __cplusplus
}
#endif

#endif
