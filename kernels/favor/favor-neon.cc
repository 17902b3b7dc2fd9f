// favor+ random features of one row, NEON, 4 lanes.
#include "kernels/favor/favor-driver.h"
#include "kernels/variants.h"
#include "kernels/vector-neon.h"

namespace tarn {
namespace kernels {
namespace neon {

void FavorFeatures(size_t heads, size_t d_key, size_t C, const float* x,
                   const float* omega, float softmax_temp, bool stabilize,
                   float* phi) {
  favor::FavorFeatures<Vec>(heads, d_key, C, x, omega, softmax_temp, stabilize,
                            ExpShifted, phi);
}

}  // namespace neon
}  // namespace kernels
}  // namespace tarn
