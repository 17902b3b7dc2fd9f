// The sinusoidal position code, AVX2: the driver
// (position-driver.h) compiled for this variant.
#include "kernels/position/position-driver.h"
#include "kernels/variants.h"

namespace tarn {
namespace kernels {
namespace avx2 {

TARN_KERNELS_DEFINE_POSITION

}  // namespace avx2
}  // namespace kernels
}  // namespace tarn
