// cuda_consumer.cc: links tarn's CUDA backend (tarn/cuda.hpp) and prints the
// number of GPUs it sees (0 without one). Built by install_and_consume.sh
// with CMake (tarn::cuda) and with pkg-config (tarn-cuda.pc).

#include <cstdio>

#include "tarn/cuda.hpp"

int main() {
  std::printf("tarn::cuda::DeviceCount(): %d\n", tarn::cuda::DeviceCount());
  return 0;
}
