/* A library with a soname of its own, for gpuslice-hook update-ldcache to
 * find in a folder of a container's root and put in its ld cache. */
int gpuslice_ldtest_answer(void) { return 42; }
