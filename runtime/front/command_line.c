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

/* runc's and crun's flags, by where they stand. */
static const char global_with_value[] = "--root\0--log\0--log-format\0--criu\0--rootless\0--cgroup-manager\0"
                                        "--log-level\0--debug-log\0";
static const char global_switches[] = "--debug\0--systemd-cgroup\0--help\0-h\0--version\0-v\0";
static const char create_with_value[] = "--bundle\0-b\0--console-socket\0--pid-file\0--preserve-fds\0";
static const char create_switches[] = "--no-pivot\0--no-new-keyring\0--detach\0-d\0--keep\0--no-subreaper\0";
static const char exec_with_value[] = "--console-socket\0--cwd\0--env\0-e\0--user\0-u\0--additional-gids\0-g\0"
                                      "--process\0-p\0--process-label\0-l\0--apparmor\0--cap\0-c\0--preserve-fds\0"
                                      "--pid-file\0--cgroup\0";
static const char exec_switches[] = "--tty\0-t\0--detach\0-d\0--no-new-privs\0--ignore-paused\0";
static const char ps_with_value[] = "--format\0-f\0";
static const char delete_switches[] = "--force\0-f\0";
static const char none[] = "";

/* Whether arg[0..len) is `flag`. */
static int is(const char *arg, size_t len, const char *flag) {
  return gs_strlen(flag) == len && gs_bytes_equal(arg, flag, len);
}

static enum gs_verb_kind kind_of(const char *verb) {
  if (gs_streq(verb, "create") || gs_streq(verb, "run"))
    return GS_VERB_BUNDLE;
  static const char monitored[] = "start\0state\0ps\0pause\0resume\0";
  if (gs_streq(verb, "delete") || gs_streq(verb, "exec"))
    return GS_VERB_CONTAINER;
  return listed(monitored, verb, gs_strlen(verb)) ? GS_VERB_MONITORED : GS_VERB_PLAIN;
}

void gs_read_call(int argc, char *const *argv, struct gs_call *call) {
  *call = (struct gs_call){argc, GS_VERB_PLAIN, 0, 0, 0, 0, 0, 0, 0};
  int i = 1;
  for (; i < argc; ++i) { /* global flags, up to the verb */
    const char *arg = argv[i];
    if (arg[0] != '-') {
      call->verb = i++;
      break;
    }
    size_t len = 0;
    while (arg[len] && arg[len] != '=')
      ++len;
    if (!listed(global_with_value, arg, len)) {
      call->doubt |= arg[len] || !listed(global_switches, arg, len);
      continue;
    }
    const char *value = arg[len] ? arg + len + 1 : (i + 1 < argc ? argv[++i] : 0);
    if (is(arg, len, "--log"))
      call->log = value;
    else if (is(arg, len, "--log-format"))
      call->log_format = value;
  }
  if (call->verb == argc)
    return;
  const char *verb = argv[call->verb];
  call->kind = kind_of(verb);
  if (call->kind == GS_VERB_PLAIN)
    return;
  const int exec = gs_streq(verb, "exec");
  const char *with_value = create_with_value, *switches = create_switches;
  if (exec)
    with_value = exec_with_value, switches = exec_switches;
  else if (gs_streq(verb, "ps"))
    with_value = ps_with_value, switches = none;
  else if (gs_streq(verb, "delete"))
    with_value = none, switches = delete_switches;
  else if (call->kind == GS_VERB_MONITORED)
    with_value = none, switches = none;
  int ids = 0;
  for (; i < argc; ++i) {
    const char *arg = argv[i];
    if (gs_streq(arg, "--")) {
      if (i + 1 < argc)
        call->id = argv[i + 1], ++ids;
      call->doubt |= !exec && i + 2 < argc;
      break;
    }
    if (arg[0] != '-') {
      call->id = arg, ++ids;
      if (exec)
        break; /* what follows is the command to run */
      continue;
    }
    size_t len = 0;
    while (arg[len] && arg[len] != '=')
      ++len;
    if (!listed(with_value, arg, len)) {
      call->doubt |= arg[len] || !listed(switches, arg, len);
      continue;
    }
    const char *value = arg[len] ? arg + len + 1 : (i + 1 < argc ? argv[++i] : 0);
    if (!value)
      call->doubt = 1;
    else if (exec && (is(arg, len, "--process") || is(arg, len, "-p")))
      call->process = value;
    else if (!exec && (is(arg, len, "--bundle") || is(arg, len, "-b")))
      call->bundle = value; /* the last one counts, as for runc */
    else if (!exec && is(arg, len, "--pid-file"))
      call->pid_file = value;
  }
  call->doubt |= ids != 1;
}

