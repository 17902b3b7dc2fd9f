// The sinusoidal position code, NEON: the driver
// (position-driver.h) compiled for this variant.
#include "kernels/position/position-driver.h"
#include "kernels/variants.h"

namespace tarn {
namespace kernels {
namespace neon {

TARN_KERNELS_DEFINE_POSITION

}  // namespace neon
}  // namespace kernels
}  // namespace tarn
