# The interposer is preloaded into arbitrary programs and the fakes stand in
# for a driver: neither may carry sanitizer runtimes (an instrumented
# LD_PRELOAD library breaks uninstrumented hosts). Call in their directories
# to drop the global -fsanitize options there.
function(gpuslice_no_sanitize)
  foreach(_prop COMPILE_OPTIONS LINK_OPTIONS)
    get_directory_property(_opts ${_prop})
    list(FILTER _opts EXCLUDE REGEX "^-fsanitize")
    set_directory_properties(PROPERTIES ${_prop} "${_opts}")
  endforeach()
endfunction()
