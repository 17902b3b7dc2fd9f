// The snapshot format's header: written and checked here for every backend.

#include "snapshot.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

#include "model.h"
#include "xxhash.h"

namespace tarn {

SnapshotTarget MakeSnapshotTarget(uint64_t model_identity,
                                  uint32_t layout_version, size_t state_bytes,
                                  const ModelConfig& c) {
  return SnapshotTarget{model_identity,
                        layout_version,
                        state_bytes,
                        c.conv_kernel > 1 ? c.conv_kernel - 1 : size_t{1},
                        c.position == Position::kLearned
                            ? uint64_t{c.max_positions}
                            : std::numeric_limits<uint64_t>::max(),
                        c.input_kind == InputKind::kFrames,
                        c.stack_window,
                        c.stack_hop};
}

SnapshotHeader MakeSnapshotHeader(const SnapshotTarget& target,
                                  uint64_t position, uint64_t frames_seen,
                                  uint32_t conv_oldest) {
  SnapshotHeader header = {};
  std::memcpy(header.magic, kSnapshotMagic, sizeof header.magic);
  header.byte_order = kSnapshotByteOrder;
  header.layout_version = target.layout_version;
  header.model_identity = target.model_identity;
  header.state_bytes = target.state_bytes;
  header.position = position;
  header.frames_seen = frames_seen;
  header.conv_oldest = conv_oldest;
  header.header_bytes = kSnapshotHeaderBytes;
  return header;
}

namespace {

// XXH64 of a snapshot's header with a zero checksum, then its state.
uint64_t Checksum(const uint8_t* snapshot, size_t state_bytes) {
  SnapshotHeader header;
  std::memcpy(&header, snapshot, sizeof header);
  header.checksum = 0;
  XXH64_state_t hash;
  XXH64_reset(&hash, 0);
  XXH64_update(&hash, &header, sizeof header);
  XXH64_update(&hash, snapshot + kSnapshotHeaderBytes, state_bytes);
  return XXH64_digest(&hash);
}

}  // namespace

void SealSnapshot(void* snapshot) {
  auto* bytes = static_cast<uint8_t*>(snapshot);
  SnapshotHeader header;
  std::memcpy(&header, bytes, sizeof header);
  header.checksum = Checksum(bytes, header.state_bytes);
  std::memcpy(bytes, &header, sizeof header);
}

Status CheckSnapshotBuffer(const void* buffer, size_t size,
                           size_t state_bytes) {
  if (buffer == nullptr || size < kSnapshotHeaderBytes + state_bytes) {
    return Status(StatusCode::kInvalidArgument,
                  "snapshot buffer holds " + std::to_string(buffer ? size : 0) +
                      " bytes; this model's snapshots take " +
                      std::to_string(kSnapshotHeaderBytes + state_bytes));
  }
  return Status::Ok();
}

Status ReadSnapshotHeader(const void* snapshot, size_t size,
                          const SnapshotTarget& target,
                          SnapshotHeader* header) {
  if (snapshot == nullptr && size > 0) {
    return Status(
        StatusCode::kInvalidArgument,
        "the snapshot is null (" + std::to_string(size) + " bytes said)");
  }
  if (snapshot == nullptr || size < sizeof *header) {
    return Status(
        StatusCode::kInvalidArgument,
        "not a tarn snapshot: " + std::to_string(snapshot ? size : 0) +
            " bytes, shorter than a snapshot header");
  }
  std::memcpy(header, snapshot, sizeof *header);
  if (std::memcmp(header->magic, kSnapshotMagic, sizeof header->magic) != 0) {
    return Status(StatusCode::kInvalidArgument,
                  "not a tarn snapshot: it does not start with 'TARNSNAP'");
  }
  if (header->byte_order != kSnapshotByteOrder) {
    return Status(StatusCode::kUnsupported,
                  "snapshot was written on a machine of the other byte order");
  }
  // The checksum covers the header, so it is checked before any field is
  // read (as a model file's is before its version): a flipped bit is damage,
  // not a newer layout or another model's snapshot. That takes a sealed
  // snapshot as long as its header says; one of another size is refused
  // below for its size.
  const auto* bytes = static_cast<const uint8_t*>(snapshot);
  if (header->checksum != 0 &&
      header->state_bytes == size - kSnapshotHeaderBytes &&
      header->checksum != Checksum(bytes, header->state_bytes)) {
    return Status(StatusCode::kInvalidArgument,
                  "snapshot is damaged: its bytes do not match its checksum");
  }
  const uint32_t version = header->layout_version;
  if (version != target.layout_version) {
    return Status(StatusCode::kUnsupported,
                  "snapshot has state layout version " +
                      std::to_string(version) + "; this runtime reads " +
                      std::to_string(target.layout_version) +
                      (version > target.layout_version
                           ? ": it comes from a newer tarn, upgrade this one"
                           : ": it comes from an older tarn, whose state "
                             "this one cannot continue; start the stream "
                             "afresh"));
  }
  if (header->model_identity != target.model_identity) {
    char message[160];
    std::snprintf(message, sizeof message,
                  "snapshot belongs to another model (identity %016llx; this "
                  "model is %016llx)",
                  static_cast<unsigned long long>(header->model_identity),
                  static_cast<unsigned long long>(target.model_identity));
    return Status(StatusCode::kInvalidArgument, message);
  }
  const size_t expected = kSnapshotHeaderBytes + target.state_bytes;
  if (header->header_bytes != kSnapshotHeaderBytes ||
      header->state_bytes != target.state_bytes) {
    return Status(StatusCode::kInvalidArgument,
                  "snapshot is damaged: its header says " +
                      std::to_string(header->header_bytes) + " + " +
                      std::to_string(header->state_bytes) +
                      " bytes; this model's snapshots are " +
                      std::to_string(kSnapshotHeaderBytes) + " + " +
                      std::to_string(target.state_bytes));
  }
  if (size != expected) {
    return Status(StatusCode::kInvalidArgument,
                  "snapshot size is " + std::to_string(size) +
                      " bytes; this model's snapshots are " +
                      std::to_string(expected) +
                      " (give the snapshot's bytes, no more and no fewer)");
  }
  if (header->conv_oldest >= target.conv_past) {
    return Status(StatusCode::kInvalidArgument,
                  "snapshot is damaged: its convolution ring index " +
                      std::to_string(header->conv_oldest) +
                      " is out of range; the ring holds " +
                      std::to_string(target.conv_past));
  }
  const uint64_t seen = header->frames_seen;
  const uint64_t steps =
      target.frames
          ? StepsAfterFrames(seen, target.stack_window, target.stack_hop)
          : header->position;
  if ((!target.frames && seen != 0) || steps != header->position) {
    return Status(
        StatusCode::kInvalidArgument,
        "snapshot is damaged: it is at step " +
            std::to_string(header->position) + " after " +
            std::to_string(seen) + " frames, which " +
            (target.frames ? "take " + std::to_string(steps) + " steps"
                           : std::string("a token model never sees")));
  }
  if (header->position > target.max_position) {
    return Status(StatusCode::kInvalidArgument,
                  "snapshot is damaged: it is at step " +
                      std::to_string(header->position) +
                      ", past the model's learned positions (" +
                      std::to_string(target.max_position) + ")");
  }
  // No stream takes 2^62 steps or frames (146,000 years at one a
  // microsecond); past that, stepping would wrap the counters (a hop of 4
  // or more frames keeps the steps of 2^64 - 1 frames under 2^62).
  if (header->position > (uint64_t{1} << 62)) {
    return Status(StatusCode::kInvalidArgument,
                  "snapshot is damaged: it is at step " +
                      std::to_string(header->position) + ", past 2^62");
  }
  if (seen > (uint64_t{1} << 62)) {
    return Status(StatusCode::kInvalidArgument,
                  "snapshot is damaged: it has seen " + std::to_string(seen) +
                      " frames, past 2^62");
  }
  if (header->checksum == 0) {
    // Unsealed: at least every value of the state must be a number.
    const uint8_t* state = bytes + kSnapshotHeaderBytes;
    for (size_t i = 0; i < target.state_bytes / sizeof(float); ++i) {
      float value;
      std::memcpy(&value, state + i * sizeof value, sizeof value);
      if (!std::isfinite(value)) {
        return Status(StatusCode::kInvalidArgument,
                      "snapshot is damaged: value " + std::to_string(i) +
                          " of its state is " + std::to_string(value) +
                          " (it has no checksum; every value must be finite)");
      }
    }
  }
  return Status::Ok();
}

}  // namespace tarn
