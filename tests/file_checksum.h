// Where a schema 2.1 model file keeps its file_checksum, and the checksum a
// writer would have stored: tests and the fuzzer edit files in place and
// stamp them again, so that a load checks the edited values, not the
// checksum.

#ifndef TARN_TESTS_FILE_CHECKSUM_H_
#define TARN_TESTS_FILE_CHECKSUM_H_

#include <cstdint>
#include <cstring>

#include "tarn_generated.h"
#define XXH_INLINE_ALL
#include "xxhash.h"

namespace tarn::testing {

// The file_checksum field of the model in `bytes` (8-byte aligned), or null
// if the bytes are not a verified model or the model has none.
inline uint8_t* FileChecksumField(uint8_t* bytes, size_t size) {
  flatbuffers::Verifier verifier(bytes, size);
  if (!schema::VerifyModelBuffer(verifier)) return nullptr;
  return reinterpret_cast<flatbuffers::Table*>(schema::GetMutableModel(bytes))
      ->GetAddressOf(schema::Model::VT_FILE_CHECKSUM);
}

// Stores the file checksum of the bytes as they are now (XXH64, seed 0, with
// the field's own 8 bytes taken as zero); false if there is no field.
inline bool Restamp(uint8_t* bytes, size_t size) {
  uint8_t* field = FileChecksumField(bytes, size);
  if (field == nullptr) return false;
  std::memset(field, 0, sizeof(uint64_t));
  const uint64_t checksum = XXH64(bytes, size, 0);
  std::memcpy(field, &checksum, sizeof checksum);
  return true;
}

}  // namespace tarn::testing

#endif  // TARN_TESTS_FILE_CHECKSUM_H_
