# gpuslice_glibc_floor(target): the target's glibc references are bound to
# the oldest symbol versions (cmake/glibc_floor/glibc_floor.h says why), so
# it loads in container images with glibc >= 2.17. For the C test programs
# that run in such images; the interposer reaches the floor by itself.
set(GPUSLICE_GLIBC_FLOOR 2.17)  # the oldest glibc the interposer loads with

function(gpuslice_glibc_floor target)
  set(_dir ${PROJECT_SOURCE_DIR}/cmake/glibc_floor)
  target_compile_options(${target} PRIVATE -include ${_dir}/glibc_floor.h)
  # libdl.so.2 and libpthread.so.0 hold dlopen and pthread_create before
  # glibc 2.34 (and are empty stubs after): needed even when nothing binds
  # to them at link time, hence no --as-needed for them.
  target_link_options(${target} PRIVATE -Wl,--push-state,--no-as-needed -l:libdl.so.2 -l:libpthread.so.0
                      -Wl,--pop-state)
  get_target_property(_type ${target} TYPE)
  if(_type STREQUAL "EXECUTABLE")
    target_sources(${target} PRIVATE ${_dir}/start.c)
    target_link_options(${target} PRIVATE -Wl,--wrap=__libc_start_main)
  endif()
endfunction()
