# Code that runs before the C library starts (gpuslice-runtime's front,
# runtime/front/front.h): freestanding, no stack protector (its canary is in
# TLS), no sanitizer or coverage hook, no loop the compiler turns into a
# memset or strlen call. A test checks that such objects call nothing.
function(gpuslice_freestanding target)
  target_compile_options(${target} PRIVATE -ffreestanding -fno-builtin -fno-stack-protector
                         -fno-stack-clash-protection -fno-sanitize=all -fno-omit-frame-pointer -fvisibility=hidden)
  if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -fno-tree-loop-distribute-patterns)
  elseif(GPUSLICE_FUZZ)
    target_compile_options(${target} PRIVATE -fno-sanitize=fuzzer-no-link)
  endif()
  # one object per file: tests/front_objects.sh checks each
  set_target_properties(${target} PROPERTIES UNITY_BUILD OFF)
endfunction()
