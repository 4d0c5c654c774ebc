/* The fast path's decisions (fast_path.h). No C library and no system call:
 * this runs before glibc has started (entry.c), so it is built freestanding
 * and a test checks that its object file calls nothing. */
#include "fast_path.h"

/* Every read-only table of this file in one section, which the ordered
 * link puts first in .rodata by its one global symbol (shim/hot-text.order):
 * in the same 64 KB window as the fast path's strings, which the kernel
 * maps in at once on the first read of either, and every call reads. One
 * section each, they lay 85 KB away, and a call faulted in a second window. */
#define FAST_PATH_TABLE __attribute__((section(".rodata.gpuslice_fp_tables")))

FAST_PATH_TABLE const char gpuslice_fp_global_flags_with_value[] = "--root\0--log\0--log-format\0--criu\0--rootless\0"
                                                   "--cgroup-manager\0--log-level\0--debug-log\0";

size_t gpuslice_fp_strlen(const char *s) {
  size_t n = 0;
  while (s[n])
    ++n;
  return n;
}

int gpuslice_fp_streq(const char *a, const char *b) {
  while (*a && *a == *b)
    ++a, ++b;
  return *a == *b;
}

static int bytes_equal(const char *a, const char *b, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i])
      return 0;
  return 1;
}

int gpuslice_fp_global_flag_takes_value(const char *flag, size_t len) {
  for (const char *f = gpuslice_fp_global_flags_with_value; *f; f += gpuslice_fp_strlen(f) + 1)
    if (gpuslice_fp_strlen(f) == len && bytes_equal(f, flag, len))
      return 1;
  return 0;
}

int gpuslice_fp_find_verb(int argc, char *const *argv) {
  for (int i = 1; i < argc; ++i) {
    const char *arg = argv[i];
    if (arg[0] != '-')
      return i;
    size_t len = 0;
    while (arg[len] && arg[len] != '=')
      ++len;
    if (gpuslice_fp_global_flag_takes_value(arg, len) && arg[len] != '=')
      ++i; /* "--root R": R is no verb */
  }
  return argc;
}

enum gpuslice_fp_verb_kind gpuslice_fp_verb_kind(const char *verb) {
  FAST_PATH_TABLE static const char bundle[] = "create\0run\0";
  FAST_PATH_TABLE static const char stateful[] = "delete\0exec\0";
  FAST_PATH_TABLE static const char monitored[] = "start\0state\0ps\0pause\0resume\0";
  for (const char *v = bundle; *v; v += gpuslice_fp_strlen(v) + 1)
    if (gpuslice_fp_streq(v, verb))
      return GPUSLICE_FP_BUNDLE;
  for (const char *v = stateful; *v; v += gpuslice_fp_strlen(v) + 1)
    if (gpuslice_fp_streq(v, verb))
      return GPUSLICE_FP_STATEFUL;
  for (const char *v = monitored; *v; v += gpuslice_fp_strlen(v) + 1)
    if (gpuslice_fp_streq(v, verb))
      return GPUSLICE_FP_MONITORED;
  return GPUSLICE_FP_PLAIN;
}

int gpuslice_fp_safe_container_id(const char *id) {
  const size_t n = gpuslice_fp_strlen(id);
  if (n == 0 || n > 255 || id[0] == '.')
    return 0;
  for (size_t i = 0; i < n; ++i) {
    const char c = id[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
          c == '-'))
      return 0;
  }
  return 1;
}

void gpuslice_fp_digest(const char *s, size_t len, char out[17]) {
  unsigned long long h = 14695981039346656037ull;
  for (size_t i = 0; i < len; ++i) {
    h ^= (unsigned char)s[i];
    h *= 1099511628211ull;
  }
  for (int i = 15; i >= 0; --i, h >>= 4)
    out[i] = "0123456789abcdef"[h & 15];
  out[16] = '\0';
}

void gpuslice_fp_record_name(const char *s, char out[17]) { gpuslice_fp_digest(s, gpuslice_fp_strlen(s), out); }

/* The next line of [*p, end), NUL-terminated in place; NULL when no '\n'. */
static char *take_line(char **p, char *end) {
  for (char *q = *p; q < end; ++q)
    if (*q == '\n') {
      char *line = *p;
      *q = '\0';
      *p = q + 1;
      return line;
    }
  return 0;
}

/* `line` after `prefix`, or NULL. */
static const char *after(const char *line, const char *prefix) {
  while (*prefix)
    if (*line++ != *prefix++)
      return 0;
  return line;
}

/* A decimal without sign or leading zero that fits, up to `stop`. */
static const char *parse_u64(const char *s, char stop, unsigned long long *out) {
  unsigned long long v = 0;
  const char *start = s;
  for (; *s >= '0' && *s <= '9'; ++s) {
    const unsigned d = (unsigned)(*s - '0');
    if (v > (~0ull - d) / 10)
      return 0;
    v = v * 10 + d;
  }
  if (s == start || *s != stop || (*start == '0' && s - start > 1))
    return 0;
  *out = v;
  return s;
}

static int absolute(const char *p) { return p && p[0] == '/'; }

int gpuslice_fp_parse_record(char *buf, size_t len, struct gpuslice_fp_record *out) {
  FAST_PATH_TABLE static const char magic[] = GPUSLICE_FAST_PATH_MAGIC;
  const size_t magic_len = sizeof magic - 1;
  if (len < magic_len || !bytes_equal(buf, magic, magic_len))
    return -1;
  char *p = buf + magic_len, *end = buf + len;
  const char *line, *v;

  if (!(line = take_line(&p, end)) || !(out->writer = after(line, "writer ")) || !*out->writer)
    return -1;
  if (!(line = take_line(&p, end)) || !absolute(out->config_path = after(line, "config ")))
    return -1;
  if (!(line = take_line(&p, end)))
    return -1;
  if ((v = after(line, "PATH=")))
    out->path_env = v;
  else if (gpuslice_fp_streq(line, "PATH unset"))
    out->path_env = 0;
  else
    return -1;
  if (!(line = take_line(&p, end)) || !absolute(out->runtime = after(line, "runtime ")))
    return -1;
  if (!(line = take_line(&p, end)) || !(v = after(line, "runtime-id ")) ||
      !(v = parse_u64(v, ' ', &out->runtime_dev_major)) || !(v = parse_u64(v + 1, ' ', &out->runtime_dev_minor)) ||
      !parse_u64(v + 1, '\0', &out->runtime_ino))
    return -1;
  unsigned long long searched;
  if (!(line = take_line(&p, end)) || !(v = after(line, "searched-before ")) || !parse_u64(v, '\0', &searched) ||
      searched > GPUSLICE_FP_MAX_SEARCHED_DIRS)
    return -1;
  out->searched_dirs = (int)searched;
  for (int i = 0; i < out->searched_dirs; ++i) {
    if (!(line = take_line(&p, end)))
      return -1;
    out->searched_dir_absent[i] = (v = after(line, "absent ")) != 0;
    out->searched_dir_sec[i] = out->searched_dir_nsec[i] = 0;
    if (!v && (!(v = parse_u64(line, '.', &out->searched_dir_sec[i])) ||
               !(v = parse_u64(v + 1, ' ', &out->searched_dir_nsec[i])) || !*v++))
      return -1;
    if (!absolute(out->searched_dir[i] = v))
      return -1;
  }
  if (!(line = take_line(&p, end)) || !absolute(out->state_dir = after(line, "state-dir ")))
    return -1;
  if (!(line = take_line(&p, end)) || !(v = after(line, "create-triggers ")))
    return -1;
  unsigned long long triggers;
  if (gpuslice_fp_streq(v, "none"))
    out->create_triggers = -1;
  else if (parse_u64(v, '\0', &triggers) && triggers <= GPUSLICE_FP_MAX_CREATE_TRIGGERS)
    out->create_triggers = (int)triggers;
  else
    return -1;
  for (int i = 0; i < out->create_triggers; ++i)
    if (!(line = take_line(&p, end)) || !*(out->create_trigger[i] = line))
      return -1;
  if (!(line = take_line(&p, end)) || !(v = after(line, "config-parsed ")))
    return -1;
  unsigned long long parsed_size;
  if (gpuslice_fp_streq(v, "none")) {
    out->config_parsed = 0;
    out->config_parsed_size = 0;
  } else if (parse_u64(v, '\0', &parsed_size) && parsed_size > 0 && parsed_size <= (unsigned long long)(end - p)) {
    out->config_parsed = p;
    out->config_parsed_size = (size_t)parsed_size;
    p += parsed_size;
  } else {
    return -1;
  }
  if (!(line = take_line(&p, end)) || !(v = after(line, "config-bytes ")))
    return -1;
  out->config = p;
  if (gpuslice_fp_streq(v, "absent")) {
    out->config_absent = 1;
    out->config_size = 0;
    return p == end ? 0 : -1;
  }
  unsigned long long size;
  if (!parse_u64(v, '\0', &size) || size > GPUSLICE_FAST_PATH_MAX_CONFIG || size != (unsigned long long)(end - p))
    return -1;
  out->config_absent = 0;
  out->config_size = (size_t)size;
  return 0;
}

int gpuslice_fp_record_matches(const struct gpuslice_fp_record *r, const char *build_id, const char *config_path,
                               const char *config, size_t config_size, const char *path_env) {
  if (!build_id || !*build_id || !gpuslice_fp_streq(r->writer, build_id))
    return 0;
  if (!gpuslice_fp_streq(r->config_path, config_path))
    return 0;
  if (!config != !!r->config_absent)
    return 0;
  if (config && (config_size != r->config_size || !bytes_equal(config, r->config, config_size)))
    return 0;
  if (!path_env != !r->path_env)
    return 0;
  return !path_env || gpuslice_fp_streq(path_env, r->path_env);
}

int gpuslice_fp_create_bundle(int argc, char *const *argv, int verb, const char **bundle) {
  FAST_PATH_TABLE static const char with_value[] = "--bundle\0-b\0--console-socket\0--pid-file\0--preserve-fds\0";
  FAST_PATH_TABLE static const char flags[] = "--no-pivot\0--no-new-keyring\0--detach\0-d\0--keep\0--no-subreaper\0";
  int ids = 0;
  *bundle = 0;
  for (int i = verb + 1; i < argc; ++i) {
    const char *arg = argv[i];
    if (arg[0] != '-') {
      ++ids;
      continue;
    }
    size_t len = 0;
    while (arg[len] && arg[len] != '=')
      ++len;
    int known = 0;
    for (const char *f = flags; *f && !known; f += gpuslice_fp_strlen(f) + 1)
      known = !arg[len] && gpuslice_fp_streq(f, arg);
    if (known)
      continue;
    for (const char *f = with_value; *f && !known; f += gpuslice_fp_strlen(f) + 1)
      known = gpuslice_fp_strlen(f) == len && bytes_equal(f, arg, len);
    if (!known)
      return -1;
    const char *value = arg[len] ? arg + len + 1 : (i + 1 < argc ? argv[++i] : 0);
    if (!value)
      return -1;
    if (len == 2 || (len == 8 && bytes_equal(arg, "--bundle", 8)))
      *bundle = *value ? value : 0; /* -b or --bundle: the last one counts; "" is the current directory, as for runc */
  }
  return ids == 1 ? 0 : -1;
}

int gpuslice_fp_contains(const char *hay, size_t len, const char *needle) {
  const size_t n = gpuslice_fp_strlen(needle);
  for (size_t i = 0; n && i + n <= len; ++i)
    if (hay[i] == needle[0] && bytes_equal(hay + i, needle, n))
      return 1;
  return 0;
}

static int json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

int gpuslice_fp_spec_may_request(const char *json, size_t len, const struct gpuslice_fp_record *r) {
  if (r->create_triggers < 0)
    return 1;
  for (int i = 0; i < r->create_triggers; ++i)
    if (gpuslice_fp_contains(json, len, r->create_trigger[i]))
      return 1;
  for (size_t i = 0; i < len; ++i) {
    if (json[i] == '\0' || (json[i] == '\\' && i + 1 < len && (json[i + 1] == 'u' || json[i + 1] == '/')))
      return 1;
    FAST_PATH_TABLE static const char key[] = "\"path\"";
    if (i + sizeof key - 1 > len || !bytes_equal(json + i, key, sizeof key - 1))
      continue;
    size_t j = i + sizeof key - 1;
    while (j < len && json_space(json[j]))
      ++j;
    if (j >= len || json[j] != ':')
      continue; /* a value "path", not a key */
    ++j;
    while (j < len && json_space(json[j]))
      ++j;
    if (j >= len || json[j] != '"')
      continue; /* not a string: the full program takes no name from it */
    const size_t start = ++j;
    int equals = 0;
    for (; j < len && json[j] != '"'; ++j) {
      if (json[j] == '\\')
        return 1;
      equals |= json[j] == '=';
    }
    if (j >= len)
      return 1;
    if (equals && (j == start || json[start] != '/'))
      return 1;
  }
  return 0;
}

const char *gpuslice_fp_plain_state_files(void) {
  FAST_PATH_TABLE static const char files[] = "format\0" GPUSLICE_FP_CREATOR_RECORD "\0" GPUSLICE_FP_INIT_RECORD
                                              "\0" GPUSLICE_FP_INIT_PID_FILE_RECORD "\0cdi-env\0init.pid\0";
  return files;
}

int gpuslice_fp_plain_state_file(const char *name) {
  for (const char *f = gpuslice_fp_plain_state_files(); *f; f += gpuslice_fp_strlen(f) + 1)
    if (gpuslice_fp_streq(f, name))
      return 1;
  return 0;
}

int gpuslice_fp_parse_pid_file_record(char *buf, size_t len) {
  if (len < 2 || buf[0] != '/' || buf[len - 1] != '\n')
    return -1;
  for (size_t i = 0; i + 1 < len; ++i)
    if (buf[i] == '\0' || buf[i] == '\n')
      return -1;
  buf[len - 1] = '\0';
  return 0;
}

int gpuslice_fp_parse_pid(const char *buf, size_t len, unsigned long long *pid) {
  while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
    --len;
  unsigned long long v = 0;
  for (size_t i = 0; i < len; ++i) {
    if (buf[i] < '0' || buf[i] > '9')
      return -1;
    v = v * 10 + (unsigned)(buf[i] - '0');
    if (v > 0x7fffffff)
      return -1;
  }
  if (v == 0)
    return -1;
  *pid = v;
  return 0;
}

int gpuslice_fp_parse_process_record(const char *buf, size_t len, unsigned long long *pid, unsigned long long *start) {
  char text[64];
  if (len == 0 || len >= sizeof text)
    return -1;
  for (size_t i = 0; i < len; ++i)
    if ((text[i] = buf[i]) == '\0')
      return -1;
  text[len] = '\0';
  const char *v = parse_u64(text, ' ', pid);
  if (!v || *pid == 0 || *pid > 0x7fffffff || !(v = parse_u64(v + 1, '\n', start)) || v + 1 != text + len)
    return -1;
  return 0;
}

int gpuslice_fp_proc_stat_start(const char *buf, size_t len, unsigned long long *start) {
  /* "PID (COMM) STATE ...": COMM may hold anything, ')' included */
  size_t close = len;
  for (size_t i = 0; i < len; ++i)
    if (buf[i] == ')')
      close = i;
  if (close == len)
    return -1;
  int field = 2; /* the one closed by ')' */
  char state = 0;
  for (size_t i = close + 1; i < len;) {
    if (buf[i] == ' ') {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < len && buf[end] != ' ' && buf[end] != '\n')
      ++end;
    ++field;
    if (field == 3)
      state = buf[i];
    if (field == 22) {
      if (state == 'Z' || state == 'X')
        return 0;
      unsigned long long v = 0;
      if (end == i)
        return -1;
      for (size_t k = i; k < end; ++k) {
        if (buf[k] < '0' || buf[k] > '9' || v > (~0ull - 9) / 10)
          return -1;
        v = v * 10 + (unsigned)(buf[k] - '0');
      }
      *start = v;
      return 1;
    }
    i = end;
    if (i < len && buf[i] == '\n')
      break;
  }
  return state == 'Z' || state == 'X' ? 0 : -1;
}
