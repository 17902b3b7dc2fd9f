// One step of causal linear attention for one head, AVX2 + FMA: the driver
// (causal-driver.h) over this variant's vector traits.
#include "kernels/causal/causal-driver.h"
#include "kernels/variants.h"
#include "kernels/vector-avx2.h"

namespace tarn {
namespace kernels {
namespace avx2 {

TARN_KERNELS_DEFINE_CAUSAL(Vec)

}  // namespace avx2
}  // namespace kernels
}  // namespace tarn
