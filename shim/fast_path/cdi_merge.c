/* CDI's merge on a config.json's text (cdi_merge.h). Each edited list (env,
 * linux.devices, its cgroup rules, mounts) is kept as items, each either an
 * element of the text (its node) or a new one, edited the way apply.cpp
 * edits the parsed list, and written out in place of the old list; what
 * apply.cpp creates (linux.devices, hooks and their stages) is inserted
 * before its object's closing brace. Everything else is copied as it was.
 * Freestanding like fast_path.c; its lists in the caller's work area. */
#include "cdi_merge.h"

#define DOUBT (-1)

/* Items: >= 0 an element's node, < 0 (-1 - k) the list's k-th new item. In
 * the caller's work area, each list as large as it can grow. */
struct list {
  int n, cap;
  int *item;
};

struct merge {
  const char *t;
  const struct gpuslice_fp_json_node *nodes;
  const struct gpuslice_fp_edits *e;
  long long uid, gid; /* process.user's, -1: none (apply.cpp's process_id) */
  int new_rules;
  int *rule_device;   /* the device of each new rule */
  unsigned *mount_depth;
  struct list env_list, device_list, rule_list, mount_list;
  int *work;          /* what is left of the work area */
  size_t work_left;
};

/* n ints of the work area. */
static int *take(struct merge *m, size_t n) {
  if (n > m->work_left)
    return 0;
  int *p = m->work;
  m->work += n;
  m->work_left -= n;
  return p;
}

static size_t length(const char *s) {
  size_t n = 0;
  while (s[n])
    ++n;
  return n;
}

static int same(const char *a, size_t n, const char *s) {
  size_t i = 0;
  while (i < n && s[i] && a[i] == s[i])
    ++i;
  return i == n && !s[i];
}

static int streq(const char *a, const char *b) { return same(a, length(a), b); }

static int kind_of(const struct merge *m, int n) { return n < 0 ? 0 : m->nodes[n].kind; }

static int member(const struct merge *m, int object, const char *key) {
  return gpuslice_fp_json_member(m->t, m->nodes, object, key);
}

/* A string node's bytes between its quotes. */
static const char *content(const struct merge *m, int n, size_t *len) {
  *len = m->nodes[n].end - m->nodes[n].start - 2;
  return m->t + m->nodes[n].start + 1;
}

/* The elements of `array` (none: -1), with room for `more` new ones. */
static int list_of(struct list *l, struct merge *m, int array, int more) {
  const size_t cap = (array < 0 ? 0 : m->nodes[array].children) + (size_t)more;
  l->n = 0;
  l->cap = (int)cap;
  if (cap > GPUSLICE_FP_MERGE_MAX_ITEMS || !(l->item = take(m, cap)))
    return DOUBT;
  if (array >= 0)
    for (int c = m->nodes[array].first_child; c >= 0; c = m->nodes[c].next_sibling)
      l->item[l->n++] = c;
  return 0;
}

static int push(struct list *l, int item) {
  if (l->n >= l->cap)
    return DOUBT;
  l->item[l->n++] = item;
  return 0;
}

static void remove_at(struct list *l, int at) {
  for (int i = at; i + 1 < l->n; ++i)
    l->item[i] = l->item[i + 1];
  --l->n;
}

/* string_member(object, key) == value: 1 or 0; DOUBT where string_member
 * throws (a value neither string nor null) or where an escape hides it. */
static int string_member_is(const struct merge *m, int object, const char *key, const char *value) {
  if (kind_of(m, object) != GPUSLICE_FP_JSON_OBJECT)
    return 0;
  const int v = member(m, object, key);
  if (v < 0 || m->nodes[v].kind == GPUSLICE_FP_JSON_NULL)
    return 0;
  if (m->nodes[v].kind != GPUSLICE_FP_JSON_STRING || m->nodes[v].escaped)
    return DOUBT;
  size_t n;
  const char *s = content(m, v, &n);
  return same(s, n, value);
}

/* A number node spelled as plain digits: 1 and *value; 0 for one that is
 * no number or too large to equal a device number; DOUBT for another
 * spelling (-0, 195.0), which nlohmann may find equal to an integer. */
static int plain_number(const struct merge *m, int n, unsigned long long *value) {
  if (kind_of(m, n) != GPUSLICE_FP_JSON_NUMBER)
    return 0;
  const char *s = m->t + m->nodes[n].start;
  const unsigned len = m->nodes[n].end - m->nodes[n].start;
  unsigned long long v = 0;
  for (unsigned i = 0; i < len; ++i) {
    if (s[i] < '0' || s[i] > '9')
      return DOUBT;
    v = v * 10 + (unsigned long long)(s[i] - '0');
  }
  if (len > 19)
    return 0;
  *value = v;
  return 1;
}

/* apply.cpp's process_id: process.user's uid or gid when it is an unsigned
 * integer from 1 to UINT32_MAX, else -1. */
static long long process_id(const struct merge *m, int process, const char *which) {
  const int user = kind_of(m, process) == GPUSLICE_FP_JSON_OBJECT ? member(m, process, "user") : -1;
  unsigned long long v;
  if (kind_of(m, user) != GPUSLICE_FP_JSON_OBJECT || plain_number(m, member(m, user, which), &v) != 1 || v == 0 ||
      v > 0xffffffffull)
    return -1;
  return (long long)v;
}

static int merge_env(struct merge *m, int process, int *env) {
  *env = -1;
  if (!m->e->env_count)
    return 0;
  *env = kind_of(m, process) == GPUSLICE_FP_JSON_OBJECT ? member(m, process, "env") : -1;
  if (kind_of(m, *env) != GPUSLICE_FP_JSON_ARRAY || list_of(&m->env_list, m, *env, m->e->env_count) != 0)
    return DOUBT;
  for (int i = 0; i < m->env_list.n; ++i)
    if (m->nodes[m->env_list.item[i]].kind == GPUSLICE_FP_JSON_STRING && m->nodes[m->env_list.item[i]].escaped)
      return DOUBT;
  /* Each entry replaces the last of its key, in place, or comes last. */
  for (int k = 0; k < m->e->env_count; ++k) {
    const char *key = m->e->env[k].key;
    int found = -1;
    for (int i = m->env_list.n - 1; i >= 0 && found < 0; --i) {
      const int it = m->env_list.item[i];
      if (it < 0) {
        if (streq(m->e->env[-1 - it].key, key))
          found = i;
        continue;
      }
      if (m->nodes[it].kind != GPUSLICE_FP_JSON_STRING)
        continue;
      size_t n, eq = 0;
      const char *s = content(m, it, &n);
      while (eq < n && s[eq] != '=')
        ++eq;
      if (same(s, eq, key))
        found = i;
    }
    if (found >= 0)
      m->env_list.item[found] = -1 - k;
    else if (push(&m->env_list, -1 - k) != 0)
      return DOUBT;
  }
  return 0;
}

/* A value equal to the string `value` (same_member): 1 or 0; DOUBT for a
 * string spelled with an escape. */
static int string_is(const struct merge *m, int n, const char *value) {
  if (kind_of(m, n) != GPUSLICE_FP_JSON_STRING)
    return 0;
  if (m->nodes[n].escaped)
    return DOUBT;
  size_t len;
  const char *s = content(m, n, &len);
  return same(s, len, value);
}

/* The rule device d would get equal to this rule item: 1, 0, or DOUBT. */
static int same_rule(const struct merge *m, int it, const struct gpuslice_fp_device_node *d) {
  if (it < 0) {
    const struct gpuslice_fp_device_node *o = &m->e->devices[m->rule_device[-1 - it]];
    return o->type == d->type && o->major == d->major && o->minor == d->minor && streq(o->access, d->access);
  }
  const char type[2] = {d->type, 0};
  unsigned long long major, minor;
  int r;
  if (kind_of(m, member(m, it, "allow")) != GPUSLICE_FP_JSON_TRUE)
    return 0;
  if ((r = string_is(m, member(m, it, "type"), type)) != 1 ||
      (r = string_is(m, member(m, it, "access"), d->access)) != 1)
    return r;
  if ((r = plain_number(m, member(m, it, "major"), &major)) != 1 || major != d->major)
    return r == DOUBT ? DOUBT : 0;
  if ((r = plain_number(m, member(m, it, "minor"), &minor)) != 1 || minor != d->minor)
    return r == DOUBT ? DOUBT : 0;
  return 1;
}

/* apply.cpp's already_allowed: an equal rule stands after the last deny. */
static int already_allowed(const struct merge *m, const struct gpuslice_fp_device_node *d) {
  for (int i = m->rule_list.n - 1; i >= 0; --i) {
    const int it = m->rule_list.item[i];
    if (it >= 0 && m->nodes[it].kind != GPUSLICE_FP_JSON_OBJECT)
      continue;
    if (it >= 0 && kind_of(m, member(m, it, "allow")) == GPUSLICE_FP_JSON_FALSE)
      return 0;
    const int r = same_rule(m, it, d);
    if (r != 0)
      return r;
  }
  return 0;
}

static int merge_devices(struct merge *m, int linux_, int *devices, int *rules) {
  *devices = *rules = -1;
  if (!m->e->device_count)
    return 0;
  if (kind_of(m, linux_) != GPUSLICE_FP_JSON_OBJECT)
    return DOUBT;
  *devices = member(m, linux_, "devices");
  if ((*devices >= 0 && m->nodes[*devices].kind != GPUSLICE_FP_JSON_ARRAY) ||
      list_of(&m->device_list, m, *devices, m->e->device_count) != 0)
    return DOUBT;
  int cgroup = 0;
  for (int k = 0; k < m->e->device_count; ++k)
    cgroup = cgroup || m->e->devices[k].type == 'b' || m->e->devices[k].type == 'c';
  if (cgroup) {
    const int resources = member(m, linux_, "resources");
    *rules = kind_of(m, resources) == GPUSLICE_FP_JSON_OBJECT ? member(m, resources, "devices") : -1;
    if (kind_of(m, *rules) != GPUSLICE_FP_JSON_ARRAY || list_of(&m->rule_list, m, *rules, m->e->device_count) != 0)
      return DOUBT;
  }
  m->new_rules = 0;
  if (!(m->rule_device = take(m, (size_t)m->e->device_count)))
    return DOUBT;
  for (int k = 0; k < m->e->device_count; ++k) {
    const struct gpuslice_fp_device_node *d = &m->e->devices[k];
    for (int i = 0; i < m->device_list.n; ++i) {
      const int it = m->device_list.item[i];
      const int match = it < 0 ? streq(m->e->devices[-1 - it].path, d->path) : string_member_is(m, it, "path", d->path);
      if (match == DOUBT)
        return DOUBT;
      if (match) {
        remove_at(&m->device_list, i);
        break;
      }
    }
    if (push(&m->device_list, -1 - k) != 0)
      return DOUBT;
    if (d->type != 'b' && d->type != 'c')
      continue;
    const int allowed = already_allowed(m, d);
    if (allowed == DOUBT)
      return DOUBT;
    if (!allowed) {
      if (push(&m->rule_list, -1 - m->new_rules) != 0)
        return DOUBT;
      m->rule_device[m->new_rules++] = k;
    }
  }
  return 0;
}

/* fs::path_depth(fs::clean_path(p)): the '/'s of the cleaned path. */
static unsigned clean_depth(const char *p, size_t len) {
  const int absolute = len > 0 && p[0] == '/';
  unsigned up = 0, down = 0; /* leading ".." parts (relative only), then others */
  size_t i = 0;
  while (i <= len) {
    size_t j = i;
    while (j < len && p[j] != '/')
      ++j;
    const size_t n = j - i;
    if (n == 0 || (n == 1 && p[i] == '.')) {
    } else if (n == 2 && p[i] == '.' && p[i + 1] == '.') {
      if (down)
        --down;
      else if (!absolute)
        ++up;
    } else {
      ++down;
    }
    i = j + 1;
  }
  const unsigned parts = up + down;
  if (absolute)
    return parts ? parts : 1;
  return parts ? parts - 1 : 0;
}

static int merge_mounts(struct merge *m, int *mounts) {
  *mounts = -1;
  if (!m->e->mount_count)
    return 0;
  *mounts = member(m, 0, "mounts");
  if (kind_of(m, *mounts) != GPUSLICE_FP_JSON_ARRAY || list_of(&m->mount_list, m, *mounts, m->e->mount_count) != 0)
    return DOUBT;
  for (int k = 0; k < m->e->mount_count; ++k) {
    const char *destination = m->e->mounts[k].key;
    for (int i = 0; i < m->mount_list.n; ++i) {
      const int it = m->mount_list.item[i];
      const int match =
          it < 0 ? streq(m->e->mounts[-1 - it].key, destination) : string_member_is(m, it, "destination", destination);
      if (match == DOUBT)
        return DOUBT;
      if (match) {
        remove_at(&m->mount_list, i);
        break;
      }
    }
    if (push(&m->mount_list, -1 - k) != 0)
      return DOUBT;
  }
  /* Parents before children: a stable sort by depth (apply.cpp's). */
  if (!(m->mount_depth = (unsigned *)take(m, (size_t)m->mount_list.cap)))
    return DOUBT;
  for (int i = 0; i < m->mount_list.n; ++i) {
    const int it = m->mount_list.item[i];
    if (it < 0) {
      const char *d = m->e->mounts[-1 - it].key;
      m->mount_depth[i] = clean_depth(d, length(d));
      continue;
    }
    const int d = m->nodes[it].kind == GPUSLICE_FP_JSON_OBJECT ? member(m, it, "destination") : -1;
    size_t n = 0;
    const char *s = kind_of(m, d) == GPUSLICE_FP_JSON_STRING ? content(m, d, &n) : "";
    if (n && m->nodes[d].escaped)
      return DOUBT;
    m->mount_depth[i] = clean_depth(s, n);
  }
  for (int i = 1; i < m->mount_list.n; ++i) {
    const int it = m->mount_list.item[i];
    const unsigned depth = m->mount_depth[i];
    int j = i;
    for (; j > 0 && m->mount_depth[j - 1] > depth; --j) {
      m->mount_list.item[j] = m->mount_list.item[j - 1];
      m->mount_depth[j] = m->mount_depth[j - 1];
    }
    m->mount_list.item[j] = it;
    m->mount_depth[j] = depth;
  }
  return 0;
}

/* The hooks' stages must be absent or empty arrays: whether a hook equal to
 * one already there would be added again is the full program's to judge. */
static int check_hooks(const struct merge *m, int *hooks) {
  *hooks = -1;
  if (!m->e->hook_count)
    return 0;
  *hooks = member(m, 0, "hooks");
  if (*hooks < 0)
    return 0;
  if (m->nodes[*hooks].kind != GPUSLICE_FP_JSON_OBJECT)
    return DOUBT;
  for (int k = 0; k < m->e->hook_count; ++k) {
    const int stage = member(m, *hooks, m->e->hooks[k].key);
    if (stage >= 0 && (m->nodes[stage].kind != GPUSLICE_FP_JSON_ARRAY || m->nodes[stage].children))
      return DOUBT;
  }
  return 0;
}

/* The output: a buffer that says when it was too small. */
struct out {
  char *p;
  size_t cap, n;
  int full;
};

static void put(struct out *o, const char *s, size_t n) {
  if (o->n + n > o->cap) {
    o->full = 1;
    return;
  }
  for (size_t i = 0; i < n; ++i)
    o->p[o->n + i] = s[i];
  o->n += n;
}

static void put_str(struct out *o, const char *s) { put(o, s, length(s)); }

static void put_number(struct out *o, unsigned long long v) {
  char digits[20];
  int n = 0;
  do {
    digits[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  while (n)
    put(o, &digits[--n], 1);
}

static void put_node(struct out *o, const struct merge *m, int n) {
  put(o, m->t + m->nodes[n].start, m->nodes[n].end - m->nodes[n].start);
}

static void put_member_number(struct out *o, const char *key, unsigned long long v) {
  put_str(o, key);
  put_number(o, v);
}

static void put_device(struct out *o, const struct merge *m, int k) {
  const struct gpuslice_fp_device_node *d = &m->e->devices[k];
  const char type[2] = {d->type, 0};
  put_str(o, "{\"path\":\"");
  put_str(o, d->path);
  put_str(o, "\",\"type\":\"");
  put_str(o, type);
  put_member_number(o, "\",\"major\":", d->major);
  put_member_number(o, ",\"minor\":", d->minor);
  if (d->file_mode >= 0)
    put_member_number(o, ",\"fileMode\":", (unsigned long long)d->file_mode);
  const long long uid = d->uid >= 0 ? d->uid : m->uid, gid = d->gid >= 0 ? d->gid : m->gid;
  if (uid >= 0)
    put_member_number(o, ",\"uid\":", (unsigned long long)uid);
  if (gid >= 0)
    put_member_number(o, ",\"gid\":", (unsigned long long)gid);
  put_str(o, "}");
}

static void put_rule(struct out *o, const struct merge *m, int k) {
  const struct gpuslice_fp_device_node *d = &m->e->devices[m->rule_device[k]];
  const char type[2] = {d->type, 0};
  put_str(o, "{\"allow\":true,\"type\":\"");
  put_str(o, type);
  put_member_number(o, "\",\"major\":", d->major);
  put_member_number(o, ",\"minor\":", d->minor);
  put_str(o, ",\"access\":\"");
  put_str(o, d->access);
  put_str(o, "\"}");
}

enum what { ENV, DEVICES, RULES, MOUNTS };

static void put_list(struct out *o, const struct merge *m, const struct list *l, enum what what) {
  put_str(o, "[");
  for (int i = 0; i < l->n; ++i) {
    const int it = l->item[i];
    if (i)
      put_str(o, ",");
    if (it >= 0)
      put_node(o, m, it);
    else if (what == ENV)
      put_str(o, m->e->env[-1 - it].json);
    else if (what == DEVICES)
      put_device(o, m, -1 - it);
    else if (what == RULES)
      put_rule(o, m, -1 - it);
    else
      put_str(o, m->e->mounts[-1 - it].json);
  }
  put_str(o, "]");
}

/* The hooks of one stage, as a new array. */
static void put_stage(struct out *o, const struct merge *m, const char *stage) {
  int first = 1;
  put_str(o, "[");
  for (int k = 0; k < m->e->hook_count; ++k) {
    if (!streq(m->e->hooks[k].key, stage))
      continue;
    if (!first)
      put_str(o, ",");
    put_str(o, m->e->hooks[k].json);
    first = 0;
  }
  put_str(o, "]");
}

/* The stages `hooks` (-1: none) lacks, as members: "STAGE":[...], each after
 * a comma unless it is the object's first member. */
static void put_missing_stages(struct out *o, const struct merge *m, int hooks, int comma) {
  for (int k = 0; k < m->e->hook_count; ++k) {
    const char *stage = m->e->hooks[k].key;
    int earlier = 0;
    for (int j = 0; j < k && !earlier; ++j)
      earlier = streq(m->e->hooks[j].key, stage);
    if (earlier || (hooks >= 0 && member(m, hooks, stage) >= 0))
      continue;
    put_str(o, comma ? ",\"" : "\"");
    put_str(o, stage);
    put_str(o, "\":");
    put_stage(o, m, stage);
    comma = 1;
  }
}

/* What replaces the text's bytes [from, to) (an insertion: from == to). */
enum patch_kind { LIST, STAGE, DEVICES_MEMBER, STAGES_MEMBERS, HOOKS_MEMBER };
struct patch {
  unsigned from, to;
  enum patch_kind kind;
  const struct list *list;
  enum what what;
  int node;
};

#define MAX_PATCHES 16

static int add_patch(struct patch *p, int *n, struct patch x) {
  if (*n >= MAX_PATCHES)
    return DOUBT;
  int i = (*n)++;
  for (; i > 0 && p[i - 1].from > x.from; --i)
    p[i] = p[i - 1];
  p[i] = x;
  return 0;
}

static int replace_list(struct patch *p, int *n, const struct merge *m, int node, const struct list *l, enum what w) {
  const struct patch x = {m->nodes[node].start, m->nodes[node].end, LIST, l, w, node};
  return add_patch(p, n, x);
}

/* Before object's closing brace. */
static int insert_into(struct patch *p, int *n, const struct merge *m, int object, enum patch_kind kind) {
  const struct patch x = {m->nodes[object].end - 1, m->nodes[object].end - 1, kind, 0, ENV, object};
  return add_patch(p, n, x);
}

long gpuslice_fp_apply_edits(const char *text, const struct gpuslice_fp_json_node *nodes, int count,
                             const struct gpuslice_fp_edits *edits, char *out, size_t cap, int *work,
                             size_t work_size) {
  struct merge merge, *const m = &merge;
  m->t = text;
  m->nodes = nodes;
  m->e = edits;
  m->work = work;
  m->work_left = work_size;
  m->new_rules = 0;
  if (count < 1 || nodes[0].kind != GPUSLICE_FP_JSON_OBJECT)
    return DOUBT;
  const int process = member(m, 0, "process"), linux_ = member(m, 0, "linux");
  m->uid = process_id(m, process, "uid");
  m->gid = process_id(m, process, "gid");
  int env, devices, rules, mounts, hooks;
  if (merge_env(m, process, &env) != 0 || merge_devices(m, linux_, &devices, &rules) != 0 ||
      merge_mounts(m, &mounts) != 0 || check_hooks(m, &hooks) != 0)
    return DOUBT;

  struct patch patches[MAX_PATCHES];
  int n = 0, bad = 0;
  if (env >= 0)
    bad |= replace_list(patches, &n, m, env, &m->env_list, ENV);
  if (edits->device_count)
    bad |= devices >= 0 ? replace_list(patches, &n, m, devices, &m->device_list, DEVICES)
                        : insert_into(patches, &n, m, linux_, DEVICES_MEMBER);
  if (rules >= 0 && m->new_rules)
    bad |= replace_list(patches, &n, m, rules, &m->rule_list, RULES);
  if (mounts >= 0)
    bad |= replace_list(patches, &n, m, mounts, &m->mount_list, MOUNTS);
  if (edits->hook_count && hooks < 0)
    bad |= insert_into(patches, &n, m, 0, HOOKS_MEMBER);
  if (hooks >= 0) {
    int missing = 0;
    for (int k = 0; k < edits->hook_count; ++k) {
      const int stage = member(m, hooks, edits->hooks[k].key);
      if (stage < 0) {
        missing = 1;
        continue;
      }
      int earlier = 0;
      for (int j = 0; j < k && !earlier; ++j)
        earlier = streq(edits->hooks[j].key, edits->hooks[k].key);
      if (!earlier) {
        const struct patch x = {nodes[stage].start, nodes[stage].end, STAGE, 0, ENV, stage};
        bad |= add_patch(patches, &n, x);
      }
    }
    if (missing)
      bad |= insert_into(patches, &n, m, hooks, STAGES_MEMBERS);
  }
  if (bad)
    return DOUBT;

  struct out o = {out, cap, 0, 0};
  unsigned at = 0;
  for (int i = 0; i < n; ++i) {
    const struct patch *x = &patches[i];
    put(&o, text + at, x->from - at);
    const int has_members = nodes[x->node].children > 0;
    if (x->kind == LIST) {
      put_list(&o, m, x->list, x->what);
    } else if (x->kind == STAGE) {
      size_t len;
      const char *key = text + nodes[x->node].key_start + 1;
      len = nodes[x->node].key_end - nodes[x->node].key_start - 2;
      for (int k = 0; k < edits->hook_count; ++k)
        if (same(key, len, edits->hooks[k].key)) {
          put_stage(&o, m, edits->hooks[k].key);
          break;
        }
    } else if (x->kind == DEVICES_MEMBER) {
      put_str(&o, has_members ? ",\"devices\":" : "\"devices\":");
      put_list(&o, m, &m->device_list, DEVICES);
    } else if (x->kind == STAGES_MEMBERS) {
      put_missing_stages(&o, m, x->node, has_members);
    } else {
      put_str(&o, has_members ? ",\"hooks\":{" : "\"hooks\":{");
      put_missing_stages(&o, m, -1, 0);
      put_str(&o, "}");
    }
    at = x->to;
  }
  put(&o, text + at, nodes[0].end - at);
  if (o.full)
    return DOUBT;
  return (long)o.n;
}
