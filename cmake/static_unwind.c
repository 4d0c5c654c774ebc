/* Static helpers (gpuslice_static_binary): the unwinder finds a frame's
 * FDE in the program's .eh_frame_hdr, a sorted table, not in an .eh_frame
 * registered at start-up.
 *
 * Why: for -static, gcc leaves --eh-frame-hdr out and links crtbeginT.o,
 * whose start-up hands the whole .eh_frame to __register_frame_info. The
 * first exception a process throws then makes libgcc count and sort every
 * FDE of the program (some 5,000 in gpuslice-runtime): milliseconds of CPU
 * for each create that fails, and for each error a helper catches on its
 * own. The registration also reads .eh_frame's first page at every start
 * (one page fault more).
 *
 * The link (CMakeLists.txt) adds --eh-frame-hdr and points crtbeginT.o's
 * two calls at these, which register nothing. libgcc then finds the table
 * as in a dynamic program: through _dl_find_object (gcc 12, glibc 2.35) or
 * dl_iterate_phdr, both of which know a static program's own headers. gcc
 * does the same for -static where it is configured to
 * (USE_EH_FRAME_HDR_FOR_STATIC). tests/packaging/check_static_unwind.sh
 * checks the link. */
struct object;

void __wrap___register_frame_info(const void *begin, struct object *ob);
void *__wrap___deregister_frame_info(const void *begin);

void __wrap___register_frame_info(const void *begin, struct object *ob) {
  (void)begin;
  (void)ob;
}

void *__wrap___deregister_frame_info(const void *begin) {
  (void)begin;
  return 0;
}
