// The sinusoidal position code, scalar reference (SSE2 on x86-64: not
// vectorised): the driver (position-driver.h) compiled for this variant.
#include "kernels/position/position-driver.h"
#include "kernels/variants.h"

namespace tarn {
namespace kernels {
namespace scalar {

TARN_KERNELS_DEFINE_POSITION

}  // namespace scalar
}  // namespace kernels
}  // namespace tarn
