// Loads a model through the core alone and steps it: what an app that
// add_subdirectory()s tarn gets.
//
//   step_model TOKEN_MODEL.tarn

#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "tarn/tarn.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: step_model TOKEN_MODEL.tarn\n");
    return 2;
  }
  std::unique_ptr<tarn::Model> model;
  tarn::Status status = tarn::Model::Load(argv[1], &model);
  std::unique_ptr<tarn::Session> session;
  if (status.ok()) {
    status = tarn::Session::Create(*model, tarn::SessionOptions(), &session);
  }
  std::vector<float> output(model ? model->output_size() : 0);
  const int32_t vocab =
      model ? static_cast<int32_t>(model->config().vocab_size) : 1;
  for (int32_t step = 0; status.ok() && step < 8; ++step) {
    status = session->StepToken(step % vocab, output.data(), output.size());
  }
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    return 1;
  }
  double sum = 0;
  for (float v : output) sum += v;
  std::printf("8 steps, %zu outputs, sum %.6g\n", output.size(), sum);
  return 0;
}
