/* The check macro of the interposer test programs: reports a failed
 * condition with a message and counts it; main returns 1 when any failed. */
#ifndef GPUSLICE_TEST_CHECK_H
#define GPUSLICE_TEST_CHECK_H

#include <stdio.h>

static int failures;
#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s: check failed: %s: ", CHECK_PROGRAM, #cond);                             \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fprintf(stderr, "\n");                                                                       \
      failures++;                                                                                  \
    }                                                                                              \
  } while (0)

#endif
