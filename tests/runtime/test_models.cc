#include "test_models.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

namespace tarn::testing {

std::string GoldenModelPath(const std::string& name) {
  const char* dir = std::getenv("TARN_GOLDENS");
  return std::string(dir ? dir : "goldens") + "/" + name + "/model.tarn";
}

std::unique_ptr<Model> LoadGolden(const std::string& name) {
  const std::string dot = "+dot";
  const bool integer_dot =
      name.size() > dot.size() &&
      name.compare(name.size() - dot.size(), dot.size(), dot) == 0;
  LoadOptions options;
  if (integer_dot) options.int8_compute = Int8Compute::kIntegerDot;
  std::unique_ptr<Model> model;
  Status status = Model::Load(
      GoldenModelPath(integer_dot ? name.substr(0, name.size() - dot.size())
                                  : name),
      &model, options);
  EXPECT_TRUE(status.ok()) << status.message();
  return model;
}

void AlignedBytes::Free::operator()(uint8_t* p) const { std::free(p); }

AlignedBytes::AlignedBytes(size_t size)
    : data_(
          static_cast<uint8_t*>(std::aligned_alloc(64, (size + 63) / 64 * 64))),
      size_(size) {}

AlignedBytes::AlignedBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  EXPECT_FALSE(bytes.empty()) << "cannot read " << path;
  size_ = bytes.size();
  data_.reset(
      static_cast<uint8_t*>(std::aligned_alloc(64, (size_ + 63) / 64 * 64)));
  std::copy(bytes.begin(), bytes.end(), data_.get());
}

Stepper::Stepper(Session& session, uint32_t seed)
    : session_(session),
      state_(seed),
      frame_(session.model().frame_size()),
      output_(session.model().output_size()) {}

bool Stepper::Step() {
  // xorshift32: deterministic, allocation-free.
  auto next = [this] {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 17;
    state_ ^= state_ << 5;
    return state_;
  };
  const ModelConfig& c = session_.model().config();
  if (c.input_kind == InputKind::kTokens) {
    Status status =
        session_.StepToken(static_cast<int32_t>(next() % c.vocab_size),
                           output_.data(), output_.size());
    EXPECT_TRUE(status.ok()) << status.message();
    return true;
  }
  for (float& v : frame_)
    v = static_cast<float>(next() % 2001) / 1000.0f - 1.0f;
  bool stepped = false;
  Status status = session_.StepFrame(frame_.data(), frame_.size(),
                                     output_.data(), output_.size(), &stepped);
  EXPECT_TRUE(status.ok()) << status.message();
  return stepped;
}

}  // namespace tarn::testing
