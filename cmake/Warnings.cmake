# Warning-free on g++ 11 (Ubuntu 22.04, RHEL 9) and g++ 12 is the rule; CI
# turns warnings into errors (-DGPUSLICE_WERROR=ON, .ci/run), packagers and
# users building with a newer compiler are not stopped by a new warning.
option(GPUSLICE_WERROR "treat warnings as errors (CI)" OFF)
add_compile_options(-Wall -Wextra)
if(GPUSLICE_WERROR)
  add_compile_options(-Werror -Wno-error=deprecated-declarations)
endif()
