/* model_sizes MODEL.tarn: a model's sizes as the C API gives them, one
 * "name value" a line. tests/golden/test_runtime_goldens.py compares what
 * `tarn info` prints with them (it finds this program beside the CLI). */

#include <stdio.h>

#include "tarn/tarn.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL.tarn\n", argv[0]);
    return 2;
  }
  tarn_model* model = NULL;
  if (tarn_model_load(argv[1], &model) != TARN_STATUS_OK) {
    fprintf(stderr, "error: %s\n", tarn_last_error());
    return 1;
  }
  tarn_session_options smallest = tarn_session_options_default();
  smallest.max_prefill_chunk = 1;
  printf("session_bytes %zu\n", tarn_model_session_bytes(model, NULL));
  printf("session_bytes_chunk_1 %zu\n",
         tarn_model_session_bytes(model, &smallest));
  printf("snapshot_bytes %zu\n", tarn_model_snapshot_bytes(model));
  tarn_model_free(model);
  return 0;
}
