/* The plan of a create with devices, and the entry's decisions around it
 * (create_plan.h). Freestanding like fast_path.c. */
#include "create_plan.h"

#include "fast_path.h"
#include "gpuslice/common/utc_timestamp.h"

static int equal(const char *a, const char *b) { return gpuslice_fp_streq(a, b); }

static int starts_with(const char *s, size_t len, const char *prefix) {
  size_t i = 0;
  while (prefix[i] && i < len && s[i] == prefix[i])
    ++i;
  return !prefix[i];
}

/* ---- the plan's text ---------------------------------------------------- */

#define MAX_FIELDS 10

/* Cuts the line at *p (up to '\n') into tab-separated fields, each
 * NUL-terminated in place: their number, or -1 (no newline, too many). */
static int fields_of(char **p, char *end, char **field) {
  int n = 0;
  char *q = *p;
  field[n++] = q;
  for (; q < end && *q != '\n'; ++q) {
    if (*q == '\0')
      return -1;
    if (*q == '\t') {
      if (n == MAX_FIELDS)
        return -1;
      *q = '\0';
      field[n++] = q + 1;
    }
  }
  if (q >= end)
    return -1;
  *q = '\0';
  *p = q + 1;
  return n;
}

/* A decimal number: 0 and *v; "-1" is ~0 for the fields that allow it. */
static int number(const char *s, unsigned long long *v) {
  if (s[0] == '-' && s[1] == '1' && !s[2]) {
    *v = ~0ull;
    return 0;
  }
  unsigned long long n = 0;
  if (!*s)
    return -1;
  for (; *s; ++s) {
    const unsigned long long d = (unsigned long long)(*s - '0');
    if (*s < '0' || *s > '9' || n > (~0ull - d) / 10)
      return -1;
    n = n * 10 + d;
  }
  *v = n;
  return 0;
}

static int numbers(char **field, int n, unsigned long long *out) {
  for (int i = 0; i < n; ++i)
    if (number(field[i], &out[i]) != 0)
      return -1;
  return 0;
}

static long long optional(unsigned long long v) { return v == ~0ull ? -1 : (long long)v; }

static int parse_line(char **field, int n, struct gpuslice_fp_plan *p) {
  const char *tag = field[0];
  unsigned long long v[9];
  if (equal(tag, "writer") && n == 2)
    p->writer = field[1];
  else if (equal(tag, "config") && n == 2)
    p->config_path = field[1];
  else if (equal(tag, "config-digest") && n == 2)
    p->config_digest = field[1];
  else if (equal(tag, "devices") && n == 2)
    p->devices = field[1];
  else if (equal(tag, "log") && n == 2)
    p->log_file = field[1];
  else if (equal(tag, "cdi-env") && n == 2)
    p->cdi_env = field[1];
  else if (equal(tag, "prefix") && n == 2 && p->prefixes < GPUSLICE_FP_PLAN_MAX_PREFIXES)
    p->prefix[p->prefixes++] = field[1];
  else if (equal(tag, "spec-dir") && n == 8 && p->spec_dirs < GPUSLICE_FP_PLAN_MAX_SPEC_DIRS) {
    struct gpuslice_fp_plan_dir *d = &p->spec_dir[p->spec_dirs++];
    if (numbers(field + 2, 6, v) != 0 || v[0] > 1)
      return -1;
    d->path = field[1];
    d->absent = (int)v[0];
    d->dev_major = v[1], d->dev_minor = v[2], d->ino = v[3], d->mtime_sec = v[4], d->mtime_nsec = v[5];
  } else if (equal(tag, "spec-file") && n == 10 && p->spec_files < GPUSLICE_FP_PLAN_MAX_SPEC_FILES) {
    struct gpuslice_fp_plan_file *f = &p->spec_file[p->spec_files++];
    if (numbers(field + 2, 8, v) != 0)
      return -1;
    f->path = field[1];
    f->dev_major = v[0], f->dev_minor = v[1], f->ino = v[2], f->size = v[3];
    f->mtime_sec = v[4], f->mtime_nsec = v[5], f->ctime_sec = v[6], f->ctime_nsec = v[7];
  } else if (equal(tag, "host-node") && n == 6 && p->host_nodes < GPUSLICE_FP_PLAN_MAX_HOST_NODES) {
    struct gpuslice_fp_plan_node *h = &p->host_node[p->host_nodes++];
    const char t = field[2][0];
    if (field[2][1] || (t != 'b' && t != 'c' && t != 'p' && t != '-') || numbers(field + 3, 3, v) != 0)
      return -1;
    h->path = field[1];
    h->type = t == '-' ? 0 : t;
    h->major = v[0], h->minor = v[1], h->mode = v[2];
  } else if (equal(tag, "env") && n == 3 && p->edits.env_count < GPUSLICE_FP_PLAN_MAX_ENV) {
    struct gpuslice_fp_env_entry *e = &p->env[p->edits.env_count++];
    e->key = field[1];
    e->json = field[2];
  } else if (equal(tag, "device") && n == 9 && p->edits.device_count < GPUSLICE_FP_PLAN_MAX_DEVICES) {
    struct gpuslice_fp_device_node *d = &p->device[p->edits.device_count++];
    const char t = field[2][0];
    if (field[2][1] || (t != 'b' && t != 'c' && t != 'p' && t != 'u') || numbers(field + 3, 5, v) != 0 ||
        v[0] == ~0ull || v[1] == ~0ull)
      return -1;
    d->path = field[1];
    d->type = t;
    d->major = v[0], d->minor = v[1];
    d->file_mode = optional(v[2]), d->uid = optional(v[3]), d->gid = optional(v[4]);
    d->access = field[8];
  } else if ((equal(tag, "mount") || equal(tag, "hook")) && n == 3) {
    const int mount = equal(tag, "mount");
    int *count = mount ? &p->edits.mount_count : &p->edits.hook_count;
    if (*count >= (mount ? GPUSLICE_FP_PLAN_MAX_MOUNTS : GPUSLICE_FP_PLAN_MAX_HOOKS))
      return -1;
    struct gpuslice_fp_keyed_json *k = mount ? &p->mount[(*count)++] : &p->hook[(*count)++];
    k->key = field[1];
    k->json = field[2];
  } else {
    return -1;
  }
  return 0;
}

int gpuslice_fp_parse_plan(char *buf, size_t len, struct gpuslice_fp_plan *out) {
  const size_t magic = sizeof GPUSLICE_FP_PLAN_MAGIC - 1;
  if (len < magic || !starts_with(buf, len, GPUSLICE_FP_PLAN_MAGIC))
    return -1;
  out->writer = out->config_path = out->config_digest = out->devices = out->log_file = out->cdi_env = 0;
  out->prefixes = out->spec_dirs = out->spec_files = out->host_nodes = 0;
  out->edits.env_count = out->edits.device_count = out->edits.mount_count = out->edits.hook_count = 0;
  out->edits.env = out->env;
  out->edits.devices = out->device;
  out->edits.mounts = out->mount;
  out->edits.hooks = out->hook;
  char *p = buf + magic, *const end = buf + len;
  char *field[MAX_FIELDS];
  for (;;) {
    const int n = fields_of(&p, end, field);
    if (n < 1)
      return -1;
    if (n == 1 && equal(field[0], "end"))
      break;
    if (parse_line(field, n, out) != 0)
      return -1;
  }
  if (p != end || !out->writer || !out->config_path || !out->config_digest || !out->devices || !*out->devices ||
      !out->log_file || !out->cdi_env)
    return -1;
  return 0;
}

/* ---- what a config.json asks for ---------------------------------------- */

static const char *string_bytes(const char *text, const struct gpuslice_fp_json_node *n, size_t *len) {
  *len = n->end - n->start - 2;
  return text + n->start + 1;
}

/* Key a < key b, bytes compared unsigned (std::map<std::string>'s order). */
static int key_less(const char *text, const struct gpuslice_fp_json_node *a, const struct gpuslice_fp_json_node *b) {
  const unsigned char *x = (const unsigned char *)text + a->key_start + 1,
                      *y = (const unsigned char *)text + b->key_start + 1;
  const unsigned nx = a->key_end - a->key_start - 2, ny = b->key_end - b->key_start - 2;
  for (unsigned i = 0; i < nx && i < ny; ++i)
    if (x[i] != y[i])
      return x[i] < y[i];
  return nx < ny;
}

/* Whether device s[0..n) is in the list out[0..len) already. */
static int listed(const char *out, size_t len, const char *s, size_t n) {
  size_t i = 0;
  while (i <= len) {
    size_t j = i;
    while (j < len && out[j] != ',')
      ++j;
    if (j - i == n) {
      size_t k = 0;
      while (k < n && out[i + k] == s[k])
        ++k;
      if (k == n)
        return 1;
    }
    i = j + 1;
  }
  return 0;
}

long gpuslice_fp_requested_devices(const char *text, const struct gpuslice_fp_json_node *nodes,
                                   const char *const *prefixes, int n_prefixes, char *out, size_t cap) {
  const int annotations = gpuslice_fp_json_member(text, nodes, 0, "annotations");
  if (annotations < 0 || nodes[annotations].kind != GPUSLICE_FP_JSON_OBJECT)
    return 0;
  size_t len = 0;
  int any = 0, last = -1; /* the last key taken: each round takes the least one after it */
  /* Bounds on the work a config.json can ask for (each round scans the
   * annotations, each device the list so far): more is the full program's. */
  int rounds = 0, parts = 0;
  for (;;) {
    if (++rounds > GPUSLICE_FP_MAX_REQUEST_ANNOTATIONS + 1)
      return -1;
    int next = -1;
    for (int m = nodes[annotations].first_child; m >= 0; m = nodes[m].next_sibling) {
      const char *key = text + nodes[m].key_start + 1;
      const size_t key_len = nodes[m].key_end - nodes[m].key_start - 2;
      int match = 0;
      for (int p = 0; p < n_prefixes && !match; ++p)
        match = *prefixes[p] && starts_with(key, key_len, prefixes[p]);
      if (match && (last < 0 || key_less(text, &nodes[last], &nodes[m])) &&
          (next < 0 || key_less(text, &nodes[m], &nodes[next])))
        next = m;
    }
    if (next < 0)
      return (long)len;
    last = next;
    if (nodes[next].kind != GPUSLICE_FP_JSON_STRING)
      continue; /* not a string: collect_requests skips it */
    if (nodes[next].escaped)
      return -1;
    size_t n;
    const char *value = string_bytes(text, &nodes[next], &n);
    for (size_t i = 0; i <= n;) {
      size_t j = i;
      while (j < n && value[j] != ',')
        ++j;
      if (++parts > GPUSLICE_FP_MAX_REQUESTED_DEVICES)
        return -1;
      if (!(any && listed(out, len, value + i, j - i))) {
        if (len + (any ? 1 : 0) + (j - i) > cap)
          return -1;
        if (any)
          out[len++] = ',';
        for (size_t k = i; k < j; ++k)
          out[len++] = value[k];
        any = 1;
      }
      i = j + 1;
    }
  }
}

int gpuslice_fp_create_doubts(const char *text, size_t len, const struct gpuslice_fp_json_node *nodes,
                              const char *const *triggers, int n_triggers) {
  if (nodes[0].kind != GPUSLICE_FP_JSON_OBJECT)
    return 1;
  for (int i = 0; i < n_triggers; ++i)
    if (gpuslice_fp_contains(text, len, triggers[i]))
      return 1;
  const int process = gpuslice_fp_json_member(text, nodes, 0, "process");
  const int linux_ = gpuslice_fp_json_member(text, nodes, 0, "linux");
  if (gpuslice_fp_json_member(text, nodes, process, "selinuxLabel") >= 0 ||
      gpuslice_fp_json_member(text, nodes, linux_, "mountLabel") >= 0)
    return 1;
  const int env = gpuslice_fp_json_member(text, nodes, process, "env");
  if (env >= 0 && nodes[env].kind == GPUSLICE_FP_JSON_ARRAY)
    for (int e = nodes[env].first_child; e >= 0; e = nodes[e].next_sibling)
      if (nodes[e].kind == GPUSLICE_FP_JSON_STRING && nodes[e].escaped)
        return 1;
  /* A path in linux.devices that is not absolute may be a CDI name. */
  const int devices = gpuslice_fp_json_member(text, nodes, linux_, "devices");
  if (devices >= 0 && nodes[devices].kind == GPUSLICE_FP_JSON_ARRAY)
    for (int d = nodes[devices].first_child; d >= 0; d = nodes[d].next_sibling) {
      const int path = gpuslice_fp_json_member(text, nodes, d, "path");
      if (path < 0 || nodes[path].kind == GPUSLICE_FP_JSON_NULL)
        continue;
      if (nodes[path].kind != GPUSLICE_FP_JSON_STRING || nodes[path].escaped ||
          (nodes[path].end - nodes[path].start > 2 && text[nodes[path].start + 1] != '/'))
        return 1;
    }
  return 0;
}

/* ---- the command line, paths, the log's time ---------------------------- */

static int same(const char *s, size_t len, const char *word) {
  size_t i = 0;
  while (i < len && word[i] && s[i] == word[i])
    ++i;
  return i == len && !word[i];
}

int gpuslice_fp_create_args(int argc, char *const *argv, int verb, const char **id, const char **pid_file) {
  const char *bundle;
  if (gpuslice_fp_create_bundle(argc, argv, verb, &bundle) != 0) /* every flag known, every value there */
    return -1;
  *id = *pid_file = 0;
  for (int i = verb + 1; i < argc; ++i) {
    const char *arg = argv[i];
    if (arg[0] != '-') {
      *id = arg;
      continue;
    }
    size_t len = 0;
    while (arg[len] && arg[len] != '=')
      ++len;
    if (!same(arg, len, "--bundle") && !same(arg, len, "-b") && !same(arg, len, "--console-socket") &&
        !same(arg, len, "--pid-file") && !same(arg, len, "--preserve-fds"))
      continue; /* a flag without a value */
    const char *value = arg[len] ? arg + len + 1 : argv[++i];
    if (same(arg, len, "--pid-file"))
      *pid_file = value; /* the last one counts, as for the full program */
  }
  return *id ? 0 : -1;
}

int gpuslice_fp_clean_absolute_path(const char *p) {
  if (p[0] != '/')
    return 0;
  for (const char *s = p; *s;) {
    const char *part = ++s; /* after a '/' */
    while (*s && *s != '/')
      ++s;
    const long n = s - part;
    if (n == 0 || (n == 1 && part[0] == '.') || (n == 2 && part[0] == '.' && part[1] == '.'))
      return p[1] == '\0' && n == 0; /* "/" alone is clean */
  }
  return 1;
}

void gpuslice_fp_utc_timestamp(long long sec, long nsec, char out[25]) { gpuslice_utc_timestamp(sec, nsec, out); }
