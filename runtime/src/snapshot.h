// The snapshot format, one for every backend: the CPU Session
// (session.cc) and the CUDA BatchSession (runtime/cuda/batch_session.cc)
// write and read exactly these bytes, so a snapshot taken on one restores
// on the other.
//
//   [SnapshotHeader, kSnapshotHeaderBytes] [state, header.state_bytes]
//
// The state is StateLayout's floats as they are in memory (model.h), so only
// machines of the writer's byte order read it back.

#ifndef TARN_RUNTIME_SRC_SNAPSHOT_H_
#define TARN_RUNTIME_SRC_SNAPSHOT_H_

#include <cstddef>
#include <cstdint>

#include "tarn/tarn.hpp"

namespace tarn {

inline constexpr size_t kSnapshotHeaderBytes = 64;

struct SnapshotHeader {
  char magic[8];            // kSnapshotMagic
  uint32_t byte_order;      // kSnapshotByteOrder as the writer stored it
  uint32_t layout_version;  // kStateLayoutVersion (model.h)
  uint64_t model_identity;  // Model::identity()
  uint64_t state_bytes;     // bytes after the header
  uint64_t position;        // steps taken
  uint64_t frames_seen;     // frames received (frame models)
  uint32_t conv_oldest;     // ring index of the oldest convolution input
  uint32_t header_bytes;    // kSnapshotHeaderBytes
  // XXH64 of the header (this field zero) and the state; zero in snapshots
  // written before tarn sealed them, which are read unchecked.
  uint64_t checksum;
};
static_assert(sizeof(SnapshotHeader) == kSnapshotHeaderBytes,
              "a snapshot's header is 64 bytes");

inline constexpr char kSnapshotMagic[8] = {'T', 'A', 'R', 'N',
                                           'S', 'N', 'A', 'P'};
inline constexpr uint32_t kSnapshotByteOrder = 0x01020304;

// What a snapshot must match to be restored into a stream of a model.
struct SnapshotTarget {
  uint64_t model_identity;
  uint32_t layout_version;
  size_t state_bytes;
  // Entries of the convolution ring (conv_kernel - 1, or 1 without one):
  // conv_oldest must be below it.
  size_t conv_past;
  // The most steps a stream can have taken: a learned position table's
  // size, else UINT64_MAX.
  uint64_t max_position;
  // Frame models: a stream's steps follow from its frames
  // (StepsAfterFrames, model.h). Token models (frames false) see none.
  bool frames;
  uint32_t stack_window, stack_hop;
};

// The target of a model of config `c` whose state takes `state_bytes`.
SnapshotTarget MakeSnapshotTarget(uint64_t model_identity,
                                  uint32_t layout_version, size_t state_bytes,
                                  const ModelConfig& c);

// The header of a snapshot of `target`'s state at these counters, its
// checksum still zero.
SnapshotHeader MakeSnapshotHeader(const SnapshotTarget& target,
                                  uint64_t position, uint64_t frames_seen,
                                  uint32_t conv_oldest);

// Sets the checksum of a snapshot whose header and state are in place.
void SealSnapshot(void* snapshot);

// Ok when `buffer` can take a snapshot of `state_bytes` of state.
Status CheckSnapshotBuffer(const void* buffer, size_t size, size_t state_bytes);

// Reads and checks the header of `snapshot` (`size` bytes) against
// `target`: magic, byte order, the checksum over the header and the state
// (before any other field, so that damage is reported as damage), layout
// version, model identity, sizes, the position and frame count (a
// snapshot without a checksum, from before tarn sealed them: every value
// of its state finite).
// On success the state follows at kSnapshotHeaderBytes.
Status ReadSnapshotHeader(const void* snapshot, size_t size,
                          const SnapshotTarget& target, SnapshotHeader* header);

}  // namespace tarn

#endif  // TARN_RUNTIME_SRC_SNAPSHOT_H_
