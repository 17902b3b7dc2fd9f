// LayerNorm and residual add + LayerNorm, AVX2 + FMA: the driver
// (norm-driver.h) over this variant's vector traits.
#include "kernels/norm/norm-driver.h"
#include "kernels/variants.h"
#include "kernels/vector-avx2.h"

namespace tarn {
namespace kernels {
namespace avx2 {

TARN_KERNELS_DEFINE_NORM(Vec)

}  // namespace avx2
}  // namespace kernels
}  // namespace tarn
