/* runc's command line as the front and the full program read it
 * (command_line.c). */
#ifndef GPUSLICE_RUNTIME_COMMAND_LINE_H
#define GPUSLICE_RUNTIME_COMMAND_LINE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum gs_verb_kind {
  GS_VERB_PLAIN,     /* only an exec of the runtime, whatever the container (kill, list, ...) */
  GS_VERB_CONTAINER, /* more when the container has gpuslice state (delete, exec) */
  GS_VERB_MONITORED, /* more when the container has a monitor (start, state, ps, pause, resume) */
  GS_VERB_BUNDLE     /* create, run: more when config.json asks for a device */
};

/* A runtime command line as runc reads it (Go's flag syntax: "-bundle x",
 * "--bundle=x", "-b x" alike): global flags, a verb, its flags and the
 * container id. Pointers into argv; NULL where not given. */
struct gs_call {
  int verb; /* argv index of the verb; argc when there is none */
  enum gs_verb_kind kind;
  const char *id;
  const char *bundle, *pid_file; /* create, run */
  const char *process;           /* exec */
  const char *log, *log_format;  /* global */
  /* The argv index of the first argument it cannot be sure of (a flag it
   * does not know, a missing value), or of the verb when there is not
   * exactly one container id; 0 when none. What it read may then be
   * wrong: the front leaves the call to the full program, which refuses a
   * create or run. */
  int doubt;
};
void gs_read_call(int argc, char *const *argv, struct gs_call *call);

#ifdef __cplusplus
}
#endif

#endif
