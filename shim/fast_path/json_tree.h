/* A JSON text as a tree of spans, for code that runs before the C library
 * (fast_path.h): no allocation, no copy, no decoding. Each value is a node
 * that says where its bytes lie in the text; a member of an object also says
 * where its key lies.
 *
 * Why: a create with devices done by the entry alone (docs/start-overhead.md,
 * "Next") must edit a config.json without the full program, and must never
 * take a text the full program would refuse. So this accepts a subset of what
 * the full program's parser (parse_json, BundleSpec::parse: nlohmann's,
 * strict, a key given twice refused) accepts, and builds the same tree:
 * tests/fuzz/fuzz_fast_path_json.cpp holds it to that. It refuses on doubt,
 * and the caller then hands the text to the full program: a key spelled with
 * an escape (two spellings could name one key), a byte order mark, a number
 * with an exponent or of more than 300 digits (a double nlohmann would find
 * out of range), nesting deeper than asked, more values or members than it
 * has room for. */
#ifndef GPUSLICE_SHIM_FAST_PATH_JSON_TREE_H
#define GPUSLICE_SHIM_FAST_PATH_JSON_TREE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum gpuslice_fp_json_kind {
  GPUSLICE_FP_JSON_OBJECT = 1,
  GPUSLICE_FP_JSON_ARRAY,
  GPUSLICE_FP_JSON_STRING,
  GPUSLICE_FP_JSON_NUMBER,
  GPUSLICE_FP_JSON_TRUE,
  GPUSLICE_FP_JSON_FALSE,
  GPUSLICE_FP_JSON_NULL
};

/* The deepest nesting of objects and arrays the parser takes at all. */
#define GPUSLICE_FP_JSON_MAX_DEPTH 64
/* The most members one object may have (keys given twice are looked for
 * among them, each against those before). */
#define GPUSLICE_FP_JSON_MAX_MEMBERS 512

struct gpuslice_fp_json_node {
  unsigned char kind;    /* enum gpuslice_fp_json_kind */
  unsigned char escaped; /* a string whose bytes hold a backslash escape */
  unsigned start, end;   /* the value's bytes, [start, end): a string's with its quotes */
  /* A member's key, with its quotes, [key_start, key_end); both 0 for a
   * value that is no member. Never escaped (those are refused). */
  unsigned key_start, key_end;
  int parent;            /* -1: the root */
  int first_child, next_sibling; /* -1: none */
  unsigned children;
};

/* Parses text[0..len) into nodes[]: the root is node 0, the rest follow in
 * the order their values begin. The number of nodes, or -1 for a text that
 * is no JSON or that it does not vouch for (above), nested deeper than
 * max_depth (at most GPUSLICE_FP_JSON_MAX_DEPTH), or of more than max_nodes
 * values. */
int gpuslice_fp_json_parse(const char *text, size_t len, struct gpuslice_fp_json_node *nodes, int max_nodes,
                           int max_depth);

/* The member of object node `object` whose key is `key` (spelled as is):
 * its node, or -1. */
int gpuslice_fp_json_member(const char *text, const struct gpuslice_fp_json_node *nodes, int object,
                            const char *key);

/* Whether node n is a string whose value is exactly `s` (no escape in it). */
int gpuslice_fp_json_string_is(const char *text, const struct gpuslice_fp_json_node *nodes, int n, const char *s);

#ifdef __cplusplus
}
#endif

#endif
