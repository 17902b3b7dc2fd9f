# Cross-compiling for 64-bit Arm Linux with Debian's g++-aarch64-linux-gnu;
# binaries run on this machine through qemu-user (CMAKE_CROSSCOMPILING_EMULATOR,
# so ctest runs them too).
#   cmake -S . -B build-arm -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(TARN_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${TARN_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${TARN_CROSS_TRIPLE}-g++)

set(CMAKE_FIND_ROOT_PATH /usr/${TARN_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

find_program(TARN_QEMU_AARCH64 qemu-aarch64)
if(TARN_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR
      ${TARN_QEMU_AARCH64} -L /usr/${TARN_CROSS_TRIPLE})
endif()
