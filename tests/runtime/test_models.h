// The models the runtime tests use: golden cases made by the PyTorch
// reference (python3 -m tests.goldens) into $TARN_GOLDENS at test time.

#ifndef TARN_TESTS_RUNTIME_TEST_MODELS_H_
#define TARN_TESTS_RUNTIME_TEST_MODELS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tarn/tarn.hpp"

namespace tarn::testing {

// $TARN_GOLDENS/<name>/model.tarn
std::string GoldenModelPath(const std::string& name);

// Loads a golden model; fails the current test if it cannot. "NAME+dot" is
// NAME's int8 file with Int8Compute::kIntegerDot.
std::unique_ptr<Model> LoadGolden(const std::string& name);

// A file's bytes in 64-byte aligned memory, as Model::FromBuffer needs.
class AlignedBytes {
 public:
  explicit AlignedBytes(const std::string& path);
  explicit AlignedBytes(size_t size);
  uint8_t* data() { return data_.get(); }
  size_t size() const { return size_; }
  void resize(size_t size) { size_ = size; }  // shrink only

 private:
  struct Free {
    void operator()(uint8_t* p) const;
  };
  std::unique_ptr<uint8_t[], Free> data_;
  size_t size_ = 0;
};

// One step's input for any model: a token or a frame, drawn from a seeded
// generator. Returns whether the model stepped (frame stacking may not).
class Stepper {
 public:
  explicit Stepper(Session& session, uint32_t seed = 1);
  bool Step();
  const std::vector<float>& output() const { return output_; }

 private:
  Session& session_;
  uint32_t state_;
  std::vector<float> frame_, output_;
};

}  // namespace tarn::testing

#endif  // TARN_TESTS_RUNTIME_TEST_MODELS_H_
