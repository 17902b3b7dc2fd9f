// LayerNorm and residual add + LayerNorm, AVX-512F: the driver
// (norm-driver.h) over this variant's vector traits.
#include "kernels/norm/norm-driver.h"
#include "kernels/variants.h"
#include "kernels/vector-avx512.h"

namespace tarn {
namespace kernels {
namespace avx512 {

TARN_KERNELS_DEFINE_NORM(Vec)

}  // namespace avx512
}  // namespace kernels
}  // namespace tarn
