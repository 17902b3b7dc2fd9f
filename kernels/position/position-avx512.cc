// The sinusoidal position code, AVX-512F: the driver
// (position-driver.h) compiled for this variant.
#include "kernels/position/position-driver.h"
#include "kernels/variants.h"

namespace tarn {
namespace kernels {
namespace avx512 {

TARN_KERNELS_DEFINE_POSITION

}  // namespace avx512
}  // namespace kernels
}  // namespace tarn
