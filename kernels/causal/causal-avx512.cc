// One step of causal linear attention for one head, AVX-512F: the driver
// (causal-driver.h) over this variant's vector traits.
#include "kernels/causal/causal-driver.h"
#include "kernels/variants.h"
#include "kernels/vector-avx512.h"

namespace tarn {
namespace kernels {
namespace avx512 {

TARN_KERNELS_DEFINE_CAUSAL(Vec)

}  // namespace avx512
}  // namespace kernels
}  // namespace tarn
