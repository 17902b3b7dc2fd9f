// LayerNorm and residual add + LayerNorm, scalar: the driver (norm-driver.h)
// one lane at a time, so that every variant computes the scalar variant's
// bits. tests/kernels check it against double precision.
#include "kernels/driver.h"
#include "kernels/norm/norm-driver.h"
#include "kernels/variants.h"

namespace tarn {
namespace kernels {
namespace scalar {

TARN_KERNELS_DEFINE_NORM(ScalarLane)

}  // namespace scalar
}  // namespace kernels
}  // namespace tarn
