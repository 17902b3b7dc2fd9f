/* c_only.c MODEL.tarn: the core's C API from a C-only project. A missing
 * file (MODEL's name with a suffix) is refused with TARN_STATUS_IO_ERROR (an
 * exception caught inside the library: the C++ runtime is linked); MODEL loads
 * and steps one token to finite outputs. Exits 0 when all holds, 1 saying why
 * otherwise. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/tarn.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL.tarn\n", argv[0]);
    return 1;
  }
  /* MODEL's name with a suffix no file has. */
  static const char kSuffix[] = ".no-such-file";
  char* missing = malloc(strlen(argv[1]) + sizeof kSuffix);
  if (missing == NULL) return 1;
  strcpy(missing, argv[1]);
  strcat(missing, kSuffix);
  tarn_model* model = NULL;
  tarn_status status = tarn_model_load(missing, &model);
  free(missing);
  if (status != TARN_STATUS_IO_ERROR || model != NULL) {
    fprintf(stderr, "a missing file: %s, expected TARN_STATUS_IO_ERROR\n",
            tarn_status_name(status));
    return 1;
  }
  printf("tarn %s: a missing file is refused: %s\n", tarn_version(),
         tarn_last_error());

  status = tarn_model_load(argv[1], &model);
  if (status != TARN_STATUS_OK) {
    fprintf(stderr, "%s: %s\n", argv[1], tarn_last_error());
    return 1;
  }
  tarn_session* session = NULL;
  if (tarn_session_create(model, NULL, &session) != TARN_STATUS_OK) {
    fprintf(stderr, "tarn_session_create: %s\n", tarn_last_error());
    tarn_model_free(model);
    return 1;
  }
  const size_t width = tarn_model_output_size(model);
  float* outputs = malloc(width * sizeof(float));
  int ok = outputs != NULL && tarn_session_step_token(session, 0, outputs,
                                                      width) == TARN_STATUS_OK;
  for (size_t i = 0; ok && i < width; ++i) {
    /* Finite: not NaN, not infinite (no libm needed). */
    ok = outputs[i] == outputs[i] && outputs[i] - outputs[i] == 0.0f;
  }
  if (ok) {
    printf("stepped token 0: %zu finite outputs, position %llu\n", width,
           (unsigned long long)tarn_session_position(session));
  } else {
    fprintf(stderr, "stepping token 0 failed: %s\n", tarn_last_error());
  }
  free(outputs);
  tarn_session_free(session);
  tarn_model_free(model);
  return ok ? 0 : 1;
}
