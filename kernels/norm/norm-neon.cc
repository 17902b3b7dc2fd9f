// LayerNorm and residual add + LayerNorm, NEON: the driver
// (norm-driver.h) over this variant's vector traits.
#include "kernels/norm/norm-driver.h"
#include "kernels/variants.h"
#include "kernels/vector-neon.h"

namespace tarn {
namespace kernels {
namespace neon {

TARN_KERNELS_DEFINE_NORM(Vec)

}  // namespace neon
}  // namespace kernels
}  // namespace tarn
