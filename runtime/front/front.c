/* The front's decisions (front.h). No C library and no system call: this
 * runs before glibc has started (entry.c), so it is built freestanding and
 * a test checks that its object file calls nothing. */
#include "front.h"

size_t gs_strlen(const char *s) {
  size_t n = 0;
  while (s[n])
    ++n;
  return n;
}

int gs_streq(const char *a, const char *b) {
  while (*a && *a == *b)
    ++a, ++b;
  return *a == *b;
}

int gs_bytes_equal(const char *a, const char *b, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i])
      return 0;
  return 1;
}

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

/* A decimal without sign or leading zero, at most `max`, filling the rest
 * of the string: 0, or -1. */
static int parse_count(const char *s, unsigned long max, unsigned long *out) {
  if (!*s || (*s == '0' && s[1]))
    return -1;
  for (*out = 0; *s >= '0' && *s <= '9' && *out <= max; ++s)
    *out = *out * 10 + (unsigned long)(*s - '0');
  return *s || *out > max ? -1 : 0;
}

/* The next line's value after `key`, when it is that key's and not empty. */
static const char *take_value(char **p, char *end, const char *key) {
  const char *line = take_line(p, end), *v = line ? after(line, key) : 0;
  return v && *v ? v : 0;
}

int gs_front_parse_record(char *buf, size_t len, struct gs_front_record *r) {
  static const char magic[] = GS_FRONT_MAGIC;
  if (len < sizeof magic - 1 || !gs_bytes_equal(buf, magic, sizeof magic - 1))
    return -1;
  char *p = buf + sizeof magic - 1, *end = buf + len;
  if (!(r->writer = take_value(&p, end, "writer ")) || !(r->config_path = take_value(&p, end, "config ")) ||
      !(r->state_dir = take_value(&p, end, "state-dir ")) || r->config_path[0] != '/' || r->state_dir[0] != '/')
    return -1;
  const char *line, *v = 0;
  r->runtimes = r->triggers = 0;
  while ((line = take_line(&p, end)) && !(v = after(line, "config-bytes "))) {
    if ((v = after(line, "runtime ")) && *v && r->runtimes < GS_FRONT_MAX_LIST)
      r->runtime[r->runtimes++] = v;
    else if ((v = after(line, "trigger ")) && *v && r->triggers < GS_FRONT_MAX_LIST)
      r->trigger[r->triggers++] = v;
    else
      return -1;
  }
  unsigned long size = 0;
  if (!line || (!(r->config_absent = gs_streq(v, "absent")) && parse_count(v, GS_FRONT_MAX_CONFIG, &size) != 0))
    return -1;
  r->config = p;
  r->config_size = size;
  return size == (size_t)(end - p) ? 0 : -1;
}

int gs_front_record_matches(const struct gs_front_record *r, const char *build_id, const char *config_path,
                            const char *config, size_t config_size) {
  if (!build_id || !*build_id || !gs_streq(r->writer, build_id) || !gs_streq(r->config_path, config_path))
    return 0;
  return config ? !r->config_absent && config_size == r->config_size && gs_bytes_equal(config, r->config, config_size)
                : r->config_absent;
}

static int contains(const char *hay, size_t len, const char *needle) {
  const size_t n = gs_strlen(needle);
  for (size_t i = 0; n && i + n <= len; ++i)
    if (hay[i] == needle[0] && gs_bytes_equal(hay + i, needle, n))
      return 1;
  return 0;
}

static int json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

int gs_front_spec_may_request(const char *json, size_t len, const struct gs_front_record *r) {
  for (int i = 0; i < r->triggers; ++i)
    if (contains(json, len, r->trigger[i]))
      return 1;
  static const char key[] = "\"path\"";
  for (size_t i = 0; i < len; ++i) {
    if (json[i] == '\0' || (json[i] == '\\' && i + 1 < len && (json[i + 1] == 'u' || json[i + 1] == '/')))
      return 1;
    if (i + sizeof key - 1 > len || !gs_bytes_equal(json + i, key, sizeof key - 1))
      continue;
    size_t j = i + sizeof key - 1;
    while (j < len && json_space(json[j]))
      ++j;
    if (j >= len || json[j] != ':')
      continue; /* a value "path", not a key */
    for (++j; j < len && json_space(json[j]);)
      ++j;
    if (j >= len || json[j] != '"')
      continue; /* not a string: no device name */
    const size_t start = ++j;
    int equals = 0;
    for (; j < len && json[j] != '"'; ++j) {
      if (json[j] == '\\')
        return 1;
      equals |= json[j] == '=';
    }
    if (j >= len || (equals && (j == start || json[start] != '/')))
      return 1;
  }
  return 0;
}

int gs_join_path(char *out, size_t cap, const char *dir, size_t dir_len, const char *name) {
  while (dir_len > 1 && dir[dir_len - 1] == '/')
    --dir_len;
  const size_t name_len = gs_strlen(name), sep = dir[dir_len - 1] != '/';
  if (dir_len + sep + name_len + 1 > cap)
    return -1;
  for (size_t k = 0; k < dir_len; ++k)
    out[k] = dir[k];
  if (sep)
    out[dir_len] = '/';
  for (size_t k = 0; k <= name_len; ++k)
    out[dir_len + sep + k] = name[k];
  return 0;
}

int gs_find_runtime(const char *const *names, int n, const char *path_env, char *out, size_t cap,
                    gs_usable_runtime usable, void *ctx) {
  for (int i = 0; i < n; ++i) {
    /* an absolute name is looked for in "/" alone */
    const char *name = names[i], *dirs = path_env && *path_env ? path_env : GS_DEFAULT_PATH;
    if (name[0] == '/')
      dirs = "/", ++name;
    for (const char *dir = dirs; *name && *dir;) {
      size_t len = 0;
      while (dir[len] && dir[len] != ':')
        ++len;
      /* a relative entry would depend on the bundle's cwd: skipped */
      if (dir[0] == '/' && gs_join_path(out, cap, dir, len, name) == 0 && usable(out, ctx))
        return 0;
      dir += len + (dir[len] == ':');
    }
  }
  return -1;
}

void gs_front_digest(const char *s, size_t len, char out[17]) {
  unsigned long long h = 14695981039346656037ull;
  for (size_t i = 0; i < len; ++i) {
    h ^= (unsigned char)s[i];
    h *= 1099511628211ull;
  }
  for (int i = 15; i >= 0; --i, h >>= 4)
    out[i] = "0123456789abcdef"[h & 15];
  out[16] = '\0';
}
