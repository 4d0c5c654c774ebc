/* runc's command line, read the same way by the front (before the C
 * library: pure, freestanding) and by the full program: global flags, a
 * verb, its flags and the container id. Which flags take a value is what
 * runc and crun say in their --help. */
#include "command_line.h"

#include "front.h"

/* Whether flag[0..len) is one of `list` (NUL-separated, an empty one last). */
static int listed(const char *list, const char *flag, size_t len) {
  for (const char *f = list; *f; f += gs_strlen(f) + 1)
    if (gs_strlen(f) == len && gs_bytes_equal(f, flag, len))
      return 1;
  return 0;
}

/* runc's and crun's flags, by where they stand, without their dashes. */
static const char global_with_value[] = "root\0log\0log-format\0criu\0rootless\0cgroup-manager\0log-level\0debug-log\0";
static const char global_switches[] = "debug\0systemd-cgroup\0help\0h\0version\0v\0";
static const char create_with_value[] = "bundle\0b\0console-socket\0pid-file\0preserve-fds\0";
static const char create_switches[] = "no-pivot\0no-new-keyring\0detach\0d\0keep\0no-subreaper\0";
static const char exec_with_value[] = "console-socket\0cwd\0env\0e\0user\0u\0additional-gids\0g\0process\0p\0"
                                      "process-label\0l\0apparmor\0cap\0c\0preserve-fds\0pid-file\0cgroup\0";
static const char exec_switches[] = "tty\0t\0detach\0d\0no-new-privs\0ignore-paused\0";
static const char ps_with_value[] = "format\0f\0";
static const char delete_switches[] = "force\0f\0";
static const char none[] = "";
/* What Go's strconv.ParseBool takes: "--detach=false" is a switch too. */
static const char go_bools[] = "1\0t\0T\0TRUE\0true\0True\0" "0\0f\0F\0FALSE\0false\0False\0";

/* The flag at argv[*i], read as Go's flag package (runc's) reads it: one
 * dash or two alike, its value after '=' or, for a flag that takes one, in
 * the next argument (*i then on it). Its name (len bytes) and value; 0 for
 * a flag of the lists, -1 for anything else (an unknown flag, a missing
 * value, "---x", a switch given a value Go would refuse). */
static int take_flag(int argc, char *const *argv, int *i, const char *with_value, const char *switches,
                     const char **name, size_t *len, const char **value) {
  *name = argv[*i] + 1 + (argv[*i][1] == '-');
  for (*len = 0; (*name)[*len] && (*name)[*len] != '=';)
    ++*len;
  *value = (*name)[*len] ? *name + *len + 1 : 0;
  if (*len == 0 || (*name)[0] == '-')
    return -1;
  if (listed(with_value, *name, *len)) {
    if (!*value && *i + 1 < argc)
      *value = argv[++*i];
    return *value ? 0 : -1;
  }
  return listed(switches, *name, *len) && (!*value || listed(go_bools, *value, gs_strlen(*value))) ? 0 : -1;
}

static enum gs_verb_kind kind_of(const char *verb) {
  if (gs_streq(verb, "create") || gs_streq(verb, "run"))
    return GS_VERB_BUNDLE;
  if (gs_streq(verb, "delete") || gs_streq(verb, "exec"))
    return GS_VERB_CONTAINER;
  return listed("start\0state\0ps\0pause\0resume\0", verb, gs_strlen(verb)) ? GS_VERB_MONITORED : GS_VERB_PLAIN;
}

/* The first argument in doubt, where there is none yet. */
static void doubt(struct gs_call *call, int at) {
  if (!call->doubt)
    call->doubt = at;
}

void gs_read_call(int argc, char *const *argv, struct gs_call *call) {
  *call = (struct gs_call){argc, GS_VERB_PLAIN, 0, 0, 0, 0, 0, 0, 0};
  const char *name, *value;
  size_t len;
  int i = 1;
  for (; i < argc; ++i) { /* global flags, up to the verb */
    if (argv[i][0] != '-' || !argv[i][1]) {
      call->verb = i++;
      break;
    }
    if (take_flag(argc, argv, &i, global_with_value, global_switches, &name, &len, &value) != 0)
      doubt(call, i);
    else if (listed("log\0", name, len))
      call->log = value;
    else if (listed("log-format\0", name, len))
      call->log_format = value;
  }
  if (call->verb == argc)
    return;
  const char *verb = argv[call->verb];
  call->kind = kind_of(verb);
  if (call->kind == GS_VERB_PLAIN)
    return;
  const int exec = gs_streq(verb, "exec");
  const char *with_value = none, *switches = none;
  if (call->kind == GS_VERB_BUNDLE)
    with_value = create_with_value, switches = create_switches;
  else if (exec)
    with_value = exec_with_value, switches = exec_switches;
  else if (gs_streq(verb, "ps"))
    with_value = ps_with_value;
  else if (gs_streq(verb, "delete"))
    switches = delete_switches;
  int ids = 0;
  for (; i < argc; ++i) {
    const char *arg = argv[i];
    if (gs_streq(arg, "--")) {
      if (i + 1 < argc)
        call->id = argv[i + 1], ++ids;
      if (!exec && i + 2 < argc)
        doubt(call, i + 2);
      break;
    }
    if (arg[0] != '-' || !arg[1]) {
      call->id = arg, ++ids;
      if (exec)
        break; /* what follows is the command to run */
      continue;
    }
    if (take_flag(argc, argv, &i, with_value, switches, &name, &len, &value) != 0)
      doubt(call, i);
    else if (exec && listed("process\0p\0", name, len))
      call->process = value;
    else if (!exec && listed("bundle\0b\0", name, len))
      call->bundle = value; /* the last one counts, as for runc */
    else if (!exec && listed("pid-file\0", name, len))
      call->pid_file = value;
  }
  if (ids != 1)
    doubt(call, call->verb);
}
