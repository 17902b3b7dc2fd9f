// The read-out of bidirectional linear attention, AVX-512F, 16 lanes.
#include "kernels/readout/readout-driver.h"
#include "kernels/variants.h"
#include "kernels/vector-avx512.h"

namespace tarn {
namespace kernels {
namespace avx512 {

void ReadOut(size_t C, size_t dv, const float* phi_q, const float* S,
             const float* z, float eps, float* y) {
  readout::ReadOut<Vec>(C, dv, phi_q, S, z, eps, y);
}

}  // namespace avx512
}  // namespace kernels
}  // namespace tarn
