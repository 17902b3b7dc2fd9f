// A step's input on the GPU: token embeddings, the position (sinusoidal or a
// learned table), and the frame window of frame models (the latest
// stack_window frames of each stream, oldest first).
#ifndef TARN_KERNELS_CUDA_INPUT_H_
#define TARN_KERNELS_CUDA_INPUT_H_

#include <cstddef>
#include <cstdint>

#include "runtime/cuda/kernels/common.h"

namespace tarn {
namespace cuda {

// x[r] = table[tokens[r]] * scale. table: [vocab][d]; tokens: [rows], each
// already checked to lie in [0, vocab); x: [rows][d].
KernelStatus EmbedTokens(cudaStream_t stream, size_t rows, size_t d,
                         const float* table, const int32_t* tokens, float scale,
                         float* x);

enum class PositionKind : int32_t { kNone = 0, kSinusoidal = 1, kLearned = 2 };

// x[r] += position(positions[r]): sinusoidal (SinusoidalPosition) or row
// positions[r] of table [max_positions][d] (learned; positions already
// checked). x: [rows][d]; positions: [rows].
KernelStatus AddPosition(cudaStream_t stream, size_t rows, size_t d,
                         PositionKind kind, const int64_t* positions,
                         const float* table, float* x);

// For each row r: the window of slot slots[r] (windows + slot * window
// floats, [window][width]) drops its oldest frame and takes frames[r]
// [width] as its newest; if dest[r] >= 0 the new window is also copied to
// stacked[dest[r]] [window * width]. window * width must fit in shared
// memory (12288 floats).
KernelStatus PushFrames(cudaStream_t stream, size_t rows, size_t width,
                        size_t window, const int32_t* slots,
                        const float* frames, const int32_t* dest,
                        float* windows, float* stacked);

}  // namespace cuda
}  // namespace tarn

#endif  // TARN_KERNELS_CUDA_INPUT_H_
