// One step of causal linear attention for one head, NEON: the driver
// (causal-driver.h) over this variant's vector traits.
#include "kernels/causal/causal-driver.h"
#include "kernels/variants.h"
#include "kernels/vector-neon.h"

namespace tarn {
namespace kernels {
namespace neon {

TARN_KERNELS_DEFINE_CAUSAL(Vec)

}  // namespace neon
}  // namespace kernels
}  // namespace tarn
