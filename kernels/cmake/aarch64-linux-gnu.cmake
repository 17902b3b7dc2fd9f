# CMake resolves a relative -DCMAKE_TOOLCHAIN_FILE against the source
# directory, which is kernels/ when the kernels are built on their own; this
# forwards `cmake -S kernels -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake`
# to the repository's toolchain file.
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/aarch64-linux-gnu.cmake)
