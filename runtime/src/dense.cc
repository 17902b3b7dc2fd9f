#include "dense.h"

#include <cassert>
#include <mutex>
#include <string>

namespace tarn {
namespace {

Status InitializeXnnpackOnce() {
  static const xnn_status status = xnn_initialize(/*allocator=*/nullptr);
  if (status != xnn_status_success) {
    return Status(StatusCode::kInternal,
                  "XNNPACK failed to initialize (status " +
                      std::to_string(static_cast<int>(status)) + ")");
  }
  return Status::Ok();
}

}  // namespace

DenseLayer::~DenseLayer() {
  if (op_ != nullptr) xnn_delete_operator(op_);
}

Status DenseLayer::Init(size_t inputs, size_t outputs, const float* weight,
                        const float* bias, float output_min, float output_max) {
  Status status = InitializeXnnpackOnce();
  if (!status.ok()) return status;
  xnn_status created = xnn_create_fully_connected_nc_f32(
      inputs, outputs, /*input_stride=*/inputs, /*output_stride=*/outputs,
      weight, bias, output_min, output_max, /*flags=*/0, &op_);
  if (created != xnn_status_success) {
    op_ = nullptr;
    return Status(StatusCode::kInternal,
                  "XNNPACK could not create a " + std::to_string(inputs) +
                      "->" + std::to_string(outputs) +
                      " fully-connected operator (status " +
                      std::to_string(static_cast<int>(created)) + ")");
  }
  inputs_ = inputs;
  outputs_ = outputs;
  return Status::Ok();
}

void DenseLayer::Run(size_t rows, const float* input, float* output,
                     pthreadpool_t threads) const {
  std::lock_guard<std::mutex> lock(mutex_);
  // Shapes were validated when the model was loaded: these cannot fail.
  xnn_status status =
      xnn_setup_fully_connected_nc_f32(op_, rows, input, output, threads);
  assert(status == xnn_status_success);
  status = xnn_run_operator(op_, threads);
  assert(status == xnn_status_success);
  (void)status;
}

}  // namespace tarn
