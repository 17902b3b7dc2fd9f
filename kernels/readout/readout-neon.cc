// The read-out of bidirectional linear attention, NEON, 4 lanes.
#include "kernels/readout/readout-driver.h"
#include "kernels/variants.h"
#include "kernels/vector-neon.h"

namespace tarn {
namespace kernels {
namespace neon {

void ReadOut(size_t C, size_t dv, const float* phi_q, const float* S,
             const float* z, float eps, float* y) {
  readout::ReadOut<Vec>(C, dv, phi_q, S, z, eps, y);
}

}  // namespace neon
}  // namespace kernels
}  // namespace tarn
