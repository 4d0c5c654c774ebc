# One source of truth for where gpuslice is installed: the compiled-in
# defaults of every binary (hook, runtime, interposer, config file) are the
# CMake install dirs of this build, so `cmake --install` with the prefix
# given at configure time gives a node whose programs find each other.
# (A prefix given only at install time, `cmake --install --prefix`, moves
# the files but not the compiled-in paths: give it to `cmake -S . -B ...`.)
include(GNUInstallDirs)

set(GPUSLICE_INTERPOSER_INSTALL_DIR "${CMAKE_INSTALL_LIBDIR}/gpuslice")
set(GPUSLICE_INSTALLED_HOOK "${CMAKE_INSTALL_FULL_BINDIR}/gpuslice-hook")
set(GPUSLICE_INSTALLED_RUNTIME "${CMAKE_INSTALL_FULL_BINDIR}/gpuslice-runtime")
set(GPUSLICE_INSTALLED_INTERPOSER "${CMAKE_INSTALL_FULL_LIBDIR}/gpuslice/libgpuslice-cuda.so")
set(GPUSLICE_INSTALLED_CONFIG "${CMAKE_INSTALL_FULL_SYSCONFDIR}/gpuslice/config.toml")
set(GPUSLICE_INSTALLED_CLI "${CMAKE_INSTALL_FULL_BINDIR}/gpuslice")
set(GPUSLICE_INSTALLED_KUBELET_PLUGIN "${CMAKE_INSTALL_FULL_BINDIR}/gpuslice-kubelet-plugin")
set(GPUSLICE_OCI_HOOKS_INSTALL_DIR "${CMAKE_INSTALL_DATADIR}/containers/oci/hooks.d")
# systemd and udev read their own dirs whatever the prefix (Debian's
# /lib/...; the .rpm passes %{_unitdir} and %{_udevrulesdir}).
set(GPUSLICE_SYSTEMD_UNIT_DIR "/lib/systemd/system" CACHE PATH "where the systemd units go")
set(GPUSLICE_UDEV_RULES_DIR "/lib/udev/rules.d" CACHE PATH "where the udev rules go")

# The version: the project's, plus the git revision in a development build
# (a checkout; a release tarball has no .git). Read at configure time.
# Packages pass theirs (GPUSLICE_VERSION, packaging/build.sh).
set(GPUSLICE_VERSION "" CACHE STRING "version the programs report (default: project version, +git.REV in a checkout)")
set(GPUSLICE_VERSION_STRING "${PROJECT_VERSION}")
if(GPUSLICE_VERSION)
  set(GPUSLICE_VERSION_STRING "${GPUSLICE_VERSION}")
elseif(EXISTS "${PROJECT_SOURCE_DIR}/.git")
  find_program(GPUSLICE_GIT git)
  if(GPUSLICE_GIT)
    execute_process(COMMAND "${GPUSLICE_GIT}" -C "${PROJECT_SOURCE_DIR}" rev-parse --short=12 HEAD
                    OUTPUT_VARIABLE _rev OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
    if(_rc EQUAL 0 AND _rev)
      set(GPUSLICE_VERSION_STRING "${PROJECT_VERSION}+git.${_rev}")
    endif()
  endif()
endif()

set(GPUSLICE_GENERATED_INCLUDE_DIR "${PROJECT_BINARY_DIR}/generated/include")
configure_file("${PROJECT_SOURCE_DIR}/common/install_paths.hpp.in"
               "${GPUSLICE_GENERATED_INCLUDE_DIR}/gpuslice/common/install_paths.hpp" @ONLY)
