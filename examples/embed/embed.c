/* embed.c: tarn from C99, the worked example of tarn/tarn.h made complete.
 *
 *   tarn_embed MODEL.tarn
 *
 * For a causal token model whose outputs are its tokens' logits: a session
 * in memory this program owns (tarn allocates nothing for it), a prompt
 * prefilled in parallel chunks, greedy generation, a snapshot to rewind to, a
 * clone, and two streams stepped as one batch. Prints what it did; exits 0
 * when every check holds, 1 (saying why) otherwise. */

#define _POSIX_C_SOURCE 200112L /* posix_memalign */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/tarn.h"

enum { kGenerated = 10 };

static int failed(tarn_status status, const char* what) {
  if (status == TARN_STATUS_OK) return 0;
  fprintf(stderr, "%s: %s: %s\n", what, tarn_status_name(status),
          tarn_last_error());
  return 1;
}

static int32_t argmax(const float* x, size_t n) {
  size_t best = 0;
  for (size_t i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return (int32_t)best;
}

/* Greedy generation: `count` tokens, each the argmax of the last output. */
static int generate(tarn_session* session, float* logits, size_t width,
                    int32_t* tokens, int count) {
  for (int i = 0; i < count; ++i) {
    tokens[i] = argmax(logits, width);
    if (failed(tarn_session_step_token(session, tokens[i], logits, width),
               "step")) {
      return 1;
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL.tarn\n", argv[0]);
    return 2;
  }
  /* Everything this program owns, freed at `done` whichever way it ends (the
   * free functions accept NULL). */
  tarn_model* model = NULL;
  tarn_session *session = NULL, *clone = NULL;
  tarn_batch* batch = NULL;
  void *arena = NULL, *snapshot = NULL;
  float *logits = NULL, *saved_logits = NULL, *rows = NULL;
  int exit_code = 1;

  printf("tarn %s\n", tarn_version());
  if (failed(tarn_model_load(argv[1], &model), "load")) goto done;
  const size_t width = tarn_model_output_size(model);
  const uint32_t vocab = tarn_model_vocab_size(model);
  if (tarn_model_input_kind(model) != TARN_INPUT_TOKENS ||
      !tarn_model_is_causal(model)) {
    fprintf(stderr, "%s: this example needs a causal token model\n", argv[1]);
    goto done;
  }
  if (width != vocab) { /* e.g. a mixture's parameters, or no head at all */
    fprintf(stderr,
            "%s: its outputs are %zu floats a step, not a logit for each of "
            "its %u tokens; this example generates from logits\n",
            argv[1], width, (unsigned)vocab);
    goto done;
  }

  /* The session's whole memory, sized before creation, and the buffers. */
  tarn_session_options options = tarn_session_options_default();
  options.max_prefill_chunk = 16;
  const size_t arena_bytes = tarn_model_session_bytes(model, &options);
  const size_t snapshot_bytes = tarn_model_snapshot_bytes(model);
  if (posix_memalign(&arena, 64, arena_bytes) != 0) arena = NULL;
  snapshot = malloc(snapshot_bytes);
  logits = malloc(width * sizeof(float));
  saved_logits = malloc(width * sizeof(float));
  rows = malloc(2 * width * sizeof(float));
  if (arena == NULL || snapshot == NULL || logits == NULL ||
      saved_logits == NULL || rows == NULL) {
    fprintf(stderr, "out of memory\n");
    goto done;
  }
  if (failed(tarn_session_create_in_arena(model, &options, arena, arena_bytes,
                                          &session),
             "create")) {
    goto done;
  }
  printf("session of %zu bytes in the caller's arena\n", arena_bytes);

  /* The prompt but its last token as one prefill, the last token as a step:
   * its output predicts what follows. */
  int32_t prompt[40];
  const size_t prompt_size = sizeof prompt / sizeof prompt[0];
  for (size_t i = 0; i < prompt_size; ++i)
    prompt[i] = (int32_t)((7 * i + 3) % vocab);
  if (failed(tarn_session_prefill_tokens(session, prompt, prompt_size - 1, NULL,
                                         0),
             "prefill") ||
      failed(tarn_session_step_token(session, prompt[prompt_size - 1], logits,
                                     width),
             "step")) {
    goto done;
  }
  printf("prompt of %zu tokens: position %llu\n", prompt_size,
         (unsigned long long)tarn_session_position(session));

  /* Snapshot, generate, rewind, generate again: the same tokens. */
  memcpy(saved_logits, logits, width * sizeof(float));
  int32_t first[kGenerated], again[kGenerated];
  if (failed(tarn_session_snapshot(session, snapshot, snapshot_bytes),
             "snapshot") ||
      generate(session, logits, width, first, kGenerated) ||
      failed(tarn_session_restore(session, snapshot, snapshot_bytes),
             "restore")) {
    goto done;
  }
  memcpy(logits, saved_logits, width * sizeof(float));
  if (generate(session, logits, width, again, kGenerated)) goto done;
  printf("generated:");
  for (int i = 0; i < kGenerated; ++i) printf(" %d", first[i]);
  printf("\n");
  if (memcmp(first, again, sizeof first) != 0) {
    fprintf(stderr, "restoring the snapshot did not rewind the session\n");
    goto done;
  }
  printf("rewound to the snapshot: the same %d tokens again\n", kGenerated);

  /* Two streams, the session and a clone of it, stepped as one batch; then
   * the clone rewound and stepped alone: the same row. */
  tarn_batch_options batch_options = tarn_batch_options_default();
  batch_options.max_streams = 2;
  if (failed(tarn_session_snapshot(session, snapshot, snapshot_bytes),
             "snapshot") ||
      failed(tarn_session_clone(session, &clone), "clone") ||
      failed(tarn_batch_create(model, &batch_options, &batch), "batch")) {
    goto done;
  }
  tarn_session* streams[2] = {clone, session};
  const int32_t next[2] = {first[0], (first[0] + 1) % (int32_t)vocab};
  if (failed(tarn_batch_step_tokens(batch, streams, next, 2, rows, 2 * width),
             "batch step") ||
      failed(tarn_session_restore(clone, snapshot, snapshot_bytes),
             "restore") ||
      failed(tarn_session_step_token(clone, next[0], logits, width), "step")) {
    goto done;
  }
  if (memcmp(logits, rows, width * sizeof(float)) != 0) {
    fprintf(stderr, "a batch row differs from stepping alone\n");
    goto done;
  }
  printf("batch of 2 streams at position %llu: row 0 as stepped alone\n",
         (unsigned long long)tarn_session_position(session));

  /* Errors come back as statuses with a message. */
  tarn_status status = tarn_session_step_token(session, -1, logits, width);
  printf("token -1: %s (%s)\n", tarn_status_name(status), tarn_last_error());
  if (status == TARN_STATUS_INVALID_ARGUMENT) exit_code = 0;

done:
  free(rows);
  free(saved_logits);
  free(snapshot);
  free(logits);
  tarn_batch_free(batch);
  tarn_session_free(clone);
  tarn_session_free(session); /* ends the session; the arena is ours */
  free(arena);
  tarn_model_free(model);
  return exit_code;
}
