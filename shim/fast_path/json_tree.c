/* The fast path's JSON tree (json_tree.h). Freestanding like fast_path.c: no
 * C library, no table in .rodata (a switch could make one: none here), and
 * no recursion (the depth is a bound, the stack of open values an array). */
#include "json_tree.h"

struct parser {
  const unsigned char *t;
  size_t len, i;
};

static int space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static int digit(unsigned char c) { return c >= '0' && c <= '9'; }

static void skip_space(struct parser *p) {
  while (p->i < p->len && space(p->t[p->i]))
    ++p->i;
}

static int in(unsigned char c, unsigned char lo, unsigned char hi) { return c >= lo && c <= hi; }

/* The length of the well-formed UTF-8 sequence at s (RFC 3629: no overlong
 * form, no surrogate, nothing above U+10FFFF), or 0. */
static size_t utf8_length(const unsigned char *s, size_t left) {
  const unsigned char c = s[0];
  if (c < 0x80)
    return 1;
  if (in(c, 0xc2, 0xdf))
    return left >= 2 && in(s[1], 0x80, 0xbf) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    if (left < 3 || !in(s[2], 0x80, 0xbf))
      return 0;
    const unsigned char lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    return in(s[1], lo, hi) ? 3 : 0;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    if (left < 4 || !in(s[2], 0x80, 0xbf) || !in(s[3], 0x80, 0xbf))
      return 0;
    const unsigned char lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    return in(s[1], lo, hi) ? 4 : 0;
  }
  return 0;
}

static int hex4(const unsigned char *s, unsigned *out) {
  unsigned v = 0;
  for (int k = 0; k < 4; ++k) {
    const unsigned char c = s[k];
    unsigned d;
    if (digit(c))
      d = c - '0';
    else if (in(c, 'a', 'f'))
      d = c - 'a' + 10;
    else if (in(c, 'A', 'F'))
      d = c - 'A' + 10;
    else
      return 0;
    v = v * 16 + d;
  }
  *out = v;
  return 1;
}

/* A \u escape at t[i] ('\\'), a surrogate pair as one: its length, or 0. A
 * surrogate that is not a high one followed by a low one is refused, as
 * nlohmann's lexer does. */
static size_t unicode_escape(const struct parser *p, size_t i) {
  unsigned u, low;
  if (i + 6 > p->len || !hex4(p->t + i + 2, &u))
    return 0;
  if (u >= 0xdc00 && u <= 0xdfff)
    return 0;
  if (u < 0xd800 || u > 0xdbff)
    return 6;
  if (i + 12 > p->len || p->t[i + 6] != '\\' || p->t[i + 7] != 'u' || !hex4(p->t + i + 8, &low) || low < 0xdc00 ||
      low > 0xdfff)
    return 0;
  return 12;
}

/* The string at t[i] ('"'): 0 and p->i past its closing quote, *escaped
 * when it holds an escape; -1 for anything else. */
static int scan_string(struct parser *p, int *escaped) {
  size_t i = p->i + 1;
  *escaped = 0;
  while (i < p->len) {
    const unsigned char c = p->t[i];
    if (c == '"') {
      p->i = i + 1;
      return 0;
    }
    if (c < 0x20)
      return -1;
    if (c != '\\') {
      const size_t n = utf8_length(p->t + i, p->len - i);
      if (!n)
        return -1;
      i += n;
      continue;
    }
    *escaped = 1;
    if (i + 1 >= p->len)
      return -1;
    const unsigned char e = p->t[i + 1];
    if (e == 'u') {
      const size_t n = unicode_escape(p, i);
      if (!n)
        return -1;
      i += n;
    } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
      i += 2;
    } else {
      return -1;
    }
  }
  return -1;
}

static void skip_digits(struct parser *p) {
  while (p->i < p->len && digit(p->t[p->i]))
    ++p->i;
}

/* RFC 8259's number at t[i]: 0 and p->i past it, or -1. Also -1 for one
 * with an exponent or more than 300 digits before its point, any of which
 * might overflow a double, which nlohmann refuses: a config.json never
 * needs either. */
static int scan_number(struct parser *p) {
  if (p->i < p->len && p->t[p->i] == '-')
    ++p->i;
  if (p->i >= p->len || !digit(p->t[p->i]))
    return -1;
  const size_t integer = p->i;
  if (p->t[p->i] == '0')
    ++p->i;
  else
    skip_digits(p);
  if (p->i - integer > 300)
    return -1;
  if (p->i < p->len && p->t[p->i] == '.') {
    ++p->i;
    if (p->i >= p->len || !digit(p->t[p->i]))
      return -1;
    skip_digits(p);
  }
  if (p->i < p->len && (p->t[p->i] == 'e' || p->t[p->i] == 'E'))
    return -1;
  return 0;
}

static int scan_word(struct parser *p, const char *word) {
  for (; *word; ++word, ++p->i)
    if (p->i >= p->len || p->t[p->i] != (unsigned char)*word)
      return -1;
  return 0;
}

static int same_bytes(const unsigned char *t, unsigned a_start, unsigned a_end, unsigned b_start, unsigned b_end) {
  if (a_end - a_start != b_end - b_start)
    return 0;
  for (unsigned k = 0; k < a_end - a_start; ++k)
    if (t[a_start + k] != t[b_start + k])
      return 0;
  return 1;
}

/* The key at t[i] of a new member of `object`, then its ':': 0 and the
 * key's span, or -1 (no string, an escape, a key the object has already,
 * too many members). */
static int scan_key(struct parser *p, const struct gpuslice_fp_json_node *nodes, int object, unsigned *start,
                    unsigned *end) {
  int escaped;
  if (p->i >= p->len || p->t[p->i] != '"' || nodes[object].children >= GPUSLICE_FP_JSON_MAX_MEMBERS)
    return -1;
  *start = (unsigned)p->i;
  if (scan_string(p, &escaped) != 0 || escaped)
    return -1;
  *end = (unsigned)p->i;
  for (int m = nodes[object].first_child; m >= 0; m = nodes[m].next_sibling)
    if (same_bytes(p->t, nodes[m].key_start, nodes[m].key_end, *start, *end))
      return -1;
  skip_space(p);
  if (p->i >= p->len || p->t[p->i] != ':')
    return -1;
  ++p->i;
  skip_space(p);
  return 0;
}

int gpuslice_fp_json_parse(const char *text, size_t len, struct gpuslice_fp_json_node *nodes, int max_nodes,
                           int max_depth) {
  struct parser p = {(const unsigned char *)text, len, 0};
  /* The last child of each open object or array, innermost last. */
  int last[GPUSLICE_FP_JSON_MAX_DEPTH];
  int depth = 0, count = 0, parent = -1;
  unsigned key_start = 0, key_end = 0;
  if (max_depth > GPUSLICE_FP_JSON_MAX_DEPTH || len >= 0x7fffffffu)
    return -1;
  skip_space(&p);
  for (;;) {
    /* A value at p.i, a member of `parent` (its key in key_start/end). */
    if (count >= max_nodes || p.i >= len)
      return -1;
    const int n = count++;
    struct gpuslice_fp_json_node *v = &nodes[n];
    v->start = (unsigned)p.i;
    v->escaped = 0;
    v->key_start = key_start;
    v->key_end = key_end;
    v->parent = parent;
    v->first_child = v->next_sibling = -1;
    v->children = 0;
    if (parent >= 0) {
      if (last[depth - 1] < 0)
        nodes[parent].first_child = n;
      else
        nodes[last[depth - 1]].next_sibling = n;
      last[depth - 1] = n;
      ++nodes[parent].children;
    }
    key_start = key_end = 0;
    const unsigned char c = p.t[p.i];
    if (c == '{' || c == '[') {
      if (depth >= max_depth)
        return -1;
      v->kind = c == '{' ? GPUSLICE_FP_JSON_OBJECT : GPUSLICE_FP_JSON_ARRAY;
      last[depth++] = -1;
      parent = n;
      ++p.i;
      skip_space(&p);
      if (p.i < len && p.t[p.i] == (c == '{' ? '}' : ']')) {
        v->end = (unsigned)++p.i;
        --depth;
        parent = v->parent;
      } else if (c == '{') {
        if (scan_key(&p, nodes, n, &key_start, &key_end) != 0)
          return -1;
        continue;
      } else {
        continue;
      }
    } else if (c == '"') {
      int escaped;
      if (scan_string(&p, &escaped) != 0)
        return -1;
      v->kind = GPUSLICE_FP_JSON_STRING;
      v->escaped = (unsigned char)escaped;
    } else if (c == '-' || digit(c)) {
      if (scan_number(&p) != 0)
        return -1;
      v->kind = GPUSLICE_FP_JSON_NUMBER;
    } else if (c == 't' || c == 'f' || c == 'n') {
      v->kind = c == 't' ? GPUSLICE_FP_JSON_TRUE : c == 'f' ? GPUSLICE_FP_JSON_FALSE : GPUSLICE_FP_JSON_NULL;
      if (scan_word(&p, c == 't' ? "true" : c == 'f' ? "false" : "null") != 0)
        return -1;
    } else {
      return -1;
    }
    if (v->kind != GPUSLICE_FP_JSON_OBJECT && v->kind != GPUSLICE_FP_JSON_ARRAY)
      v->end = (unsigned)p.i;
    /* After a complete value: a comma and the next, or the end of its parent. */
    for (;;) {
      skip_space(&p);
      if (parent < 0)
        return p.i == len ? count : -1;
      if (p.i >= len)
        return -1;
      const int object = nodes[parent].kind == GPUSLICE_FP_JSON_OBJECT;
      if (p.t[p.i] == ',') {
        ++p.i;
        skip_space(&p);
        if (object && scan_key(&p, nodes, parent, &key_start, &key_end) != 0)
          return -1;
        break;
      }
      if (p.t[p.i] != (object ? '}' : ']'))
        return -1;
      nodes[parent].end = (unsigned)++p.i;
      --depth;
      parent = nodes[parent].parent;
    }
  }
}

int gpuslice_fp_json_member(const char *text, const struct gpuslice_fp_json_node *nodes, int object,
                            const char *key) {
  if (object < 0 || nodes[object].kind != GPUSLICE_FP_JSON_OBJECT)
    return -1;
  for (int m = nodes[object].first_child; m >= 0; m = nodes[m].next_sibling) {
    const char *k = text + nodes[m].key_start + 1;
    const unsigned n = nodes[m].key_end - nodes[m].key_start - 2;
    unsigned i = 0;
    while (i < n && key[i] && k[i] == key[i])
      ++i;
    if (i == n && !key[i])
      return m;
  }
  return -1;
}

int gpuslice_fp_json_string_is(const char *text, const struct gpuslice_fp_json_node *nodes, int n, const char *s) {
  if (n < 0 || nodes[n].kind != GPUSLICE_FP_JSON_STRING || nodes[n].escaped)
    return 0;
  const unsigned len = nodes[n].end - nodes[n].start - 2;
  unsigned i = 0;
  while (i < len && s[i] && text[nodes[n].start + 1 + i] == s[i])
    ++i;
  return i == len && !s[i];
}
