/* The limits file: written on the host, mounted read-only, the only source of
 * limits (the writable region never is). Format in docs/region.md. Parsed once
 * per process with plain read(2): no stdio buffers, no allocation. A file that
 * is malformed anywhere is rejected as a whole: enforcing half a file could
 * silently drop the limit the operator meant.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static struct gs_limit entries[GS_LIMITS_MAX_ENTRIES];
static int nentries;
static char activity[256];

static int parse_u64(const char *s, uint64_t *out) {
  if (!*s) return -1;
  uint64_t v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return -1;
    if (v > (UINT64_MAX - 9) / 10) return -1;
    v = v * 10 + (uint64_t)(*s - '0');
  }
  *out = v;
  return 0;
}

/* Splits a line into at most 8 whitespace-separated words, in place. */
static int split(char *line, char **w, int max) {
  int n = 0;
  char *p = line;
  while (*p) {
    while (*p == ' ' || *p == '\t') *p++ = 0;
    if (!*p) break;
    if (n == max) return -1;
    w[n++] = p;
    while (*p && *p != ' ' && *p != '\t') p++;
  }
  return n;
}

static int parse_line(char *line) {
  char *w[9];
  int n = split(line, w, 9);
  if (n < 0) return -1;
  if (n == 0 || w[0][0] == '#') return 0;
  if (strcmp(w[0], "activity") == 0) {
    if (n != 2 || w[1][0] != '/' || strlen(w[1]) >= sizeof activity) return -1;
    strcpy(activity, w[1]);
    return 0;
  }
  if (strcmp(w[0], "device") != 0 || n < 2 || n % 2 != 0 || strlen(w[1]) >= sizeof entries[0].key) return -1;
  if (nentries == GS_LIMITS_MAX_ENTRIES) return -1;
  struct gs_limit *e = &entries[nentries];
  strcpy(e->key, w[1]);
  e->memory = GS_NO_LIMIT;
  e->compute = -1;
  e->policy = -1;
  for (int i = 2; i < n; i += 2) {
    uint64_t v;
    if (strcmp(w[i], "memory") == 0) {
      if (parse_u64(w[i + 1], &v)) return -1;
      e->memory = v;
    } else if (strcmp(w[i], "compute") == 0) {
      if (parse_u64(w[i + 1], &v) || v > 100) return -1;
      e->compute = (int)v;
    } else if (strcmp(w[i], "policy") == 0) {
      if (strcmp(w[i + 1], "native") == 0) e->policy = GS_POLICY_NATIVE;
      else if (strcmp(w[i + 1], "fixed") == 0) e->policy = GS_POLICY_FIXED;
      else if (strcmp(w[i + 1], "burst") == 0) e->policy = GS_POLICY_BURST;
      else return -1;
    } else {
      return -1;
    }
  }
  nentries++;
  return 0;
}

int gs_limits_load(const char *path) {
  static char buf[GS_LIMITS_MAX_SIZE + 1];
  nentries = 0;
  activity[0] = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t len = 0;
  for (;;) {
    ssize_t r = read(fd, buf + len, GS_LIMITS_MAX_SIZE + 1 - len);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    len += (size_t)r;
    if (len > GS_LIMITS_MAX_SIZE) break;
  }
  close(fd);
  errno = EINVAL; /* from here on: there, but not a limits file */
  if (len > GS_LIMITS_MAX_SIZE) return -1;
  buf[len] = 0;
  if (memchr(buf, 0, len)) return -1;
  char *line = buf;
  int lineno = 0;
  while (line && *line) {
    char *nl = strchr(line, '\n');
    if (nl) *nl = 0;
    if (lineno++ == 0) {
      if (strcmp(line, GS_LIMITS_HEADER) != 0) {
        GS_LOG("limits \"%s\": first line is not \"%s\"", path, GS_LIMITS_HEADER);
        errno = EINVAL;
        return -1;
      }
    } else if (parse_line(line) != 0) {
      GS_LOG("limits \"%s\": line %d is malformed", path, lineno);
      nentries = 0;
      errno = EINVAL;
      return -1;
    }
    line = nl ? nl + 1 : NULL;
  }
  if (lineno == 0) return -1;
  return nentries;
}

static void merge(struct gs_limit *out, const struct gs_limit *e) {
  if (e->memory != GS_NO_LIMIT) out->memory = e->memory;
  if (e->compute >= 0) out->compute = e->compute;
  if (e->policy >= 0) out->policy = e->policy;
}

/* "*" first, then the ordinal, then the UUID: the most specific line wins. */
void gs_limits_for(int ordinal, const CUuuid *uuid, struct gs_limit *out) {
  char ord[16], id[48];
  snprintf(ord, sizeof ord, "%d", ordinal);
  gs_uuid_format(uuid, id, sizeof id);
  strcpy(out->key, id);
  out->memory = GS_NO_LIMIT;
  out->compute = -1;
  out->policy = -1;
  const char *keys[3] = {"*", ord, id};
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < nentries; i++)
      if (strcasecmp(entries[i].key, keys[k]) == 0) merge(out, &entries[i]);
}

const char *gs_limits_activity_path(void) { return activity[0] ? activity : NULL; }

int gs_uuid_format(const CUuuid *u, char *out, size_t len) {
  const unsigned char *b = (const unsigned char *)u->bytes;
  return snprintf(out, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                  b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int gs_uuid_parse(const char *s, CUuuid *u) {
  if (strncmp(s, "GPU-", 4) == 0) s += 4;
  int n = 0;
  for (; *s && n < 32; s++) {
    if (*s == '-') continue;
    int v = hexval(*s);
    if (v < 0) return -1;
    if (n % 2 == 0) u->bytes[n / 2] = (char)(v << 4);
    else u->bytes[n / 2] = (char)(u->bytes[n / 2] | v);
    n++;
  }
  return n == 32 && *s == 0 ? 0 : -1;
}
