# Cross-compiling for 64-bit Arm with Debian's cross toolchain
# (gcc-aarch64-linux-gnu, g++-aarch64-linux-gnu) and the arm64 libraries
# installed through multiarch (libyaml-dev:arm64). The header-only
# dependencies are the build machine's own: the same headers on every
# architecture.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64;-L;/usr/aarch64-linux-gnu)
