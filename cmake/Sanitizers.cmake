# GPUSLICE_SANITIZE=address,undefined builds everything instrumented; CI runs
# the unit tests that way. Recovery is disabled so UBSan findings fail tests.
if(GPUSLICE_SANITIZE)
  set(_san "-fsanitize=${GPUSLICE_SANITIZE}")
  add_compile_options(${_san} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(${_san})
endif()
if(GPUSLICE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "GPUSLICE_FUZZ needs clang (CC=clang CXX=clang++)")
  endif()
  # Every library is built with coverage; the fuzz targets add the driver.
  # CI runs the unit tests of this build too (ASan+UBSan with clang, and no
  # second build of every library); no recovery, so that UBSan findings
  # fail a test or stop a fuzzer.
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=address,undefined)
endif()
