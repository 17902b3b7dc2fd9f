// The read-out of bidirectional linear attention, AVX2, 8 lanes.
#include "kernels/readout/readout-driver.h"
#include "kernels/variants.h"
#include "kernels/vector-avx2.h"

namespace tarn {
namespace kernels {
namespace avx2 {

void ReadOut(size_t C, size_t dv, const float* phi_q, const float* S,
             const float* z, float eps, float* y) {
  readout::ReadOut<Vec>(C, dv, phi_q, S, z, eps, y);
}

}  // namespace avx2
}  // namespace kernels
}  // namespace tarn
