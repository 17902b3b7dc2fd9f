/* speech.h: the C API of tarn's speech library, streaming recognition.
 * C99; usable from C++. Models, statuses and tarn_last_error() are the
 * core's (tarn/tarn.h); examples/embed/transcribe.c is a complete program.
 *
 * Streaming speech recognition with a speech model (a causal frame model
 * with an audio front end and output labels, e.g. examples/asr's): audio in,
 * words with times out, in memory that does not grow however long the
 * stream. The C face of tarn::Recognizer (tarn/recognizer.hpp, which says
 * how utterances, endpoints and times work). These functions live in the
 * speech library (CMake target tarn::speech, pkg-config tarn-speech), which
 * links the core (tarn/tarn.h, included here).
 *
 *   tarn_recognizer_options options = tarn_recognizer_options_default();
 *   tarn_recognizer* recognizer = NULL;
 *   if (tarn_recognizer_create(model, 16000, &options, &recognizer) !=
 *       TARN_STATUS_OK) { ... }   // not a speech model, another rate, ...
 *   while (... int16_t pcm[n] arrives ...) {
 *     tarn_recognizer_accept_int16(recognizer, pcm, n);
 *     const tarn_recognition_result* result;
 *     while (tarn_recognizer_pop_result(recognizer, &result) ==
 *                TARN_STATUS_OK && result != NULL) {
 *       printf("%s\n", result->text);    // an utterance that ended
 *     }
 *   }
 *   const tarn_recognition_result* last;
 *   tarn_recognizer_final_result(recognizer, &last);   // end of stream
 *   tarn_recognizer_free(recognizer);
 *
 * Results. A tarn_recognition_result and everything it points to belong
 * to the recognizer and stay valid until the next call on it. A recognizer
 * is used by one thread at a time; the model must outlive it. */

#ifndef TARN_SPEECH_H_
#define TARN_SPEECH_H_

#include <stddef.h>
#include <stdint.h>

#include "tarn/tarn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tarn_recognizer tarn_recognizer;

typedef struct tarn_recognizer_options {
  /* sizeof(tarn_recognizer_options), set by
   * tarn_recognizer_options_default(). */
  size_t struct_size;
  /* 0 or 1: greedy decoding; 2 .. 256: prefix beam search. */
  uint32_t beam_width;
  /* Constrains the beam search to these words (beam_width >= 2): word_count
   * strings, borrowed for tarn_recognizer_create() only. NULL/0: no list. */
  const char* const* words;
  size_t word_count;
  /* Non-speech after speech that ends an utterance (an endpoint); 0: never. */
  uint32_t endpoint_silence_ms;
  /* An utterance this long ends, whatever follows; 0: no limit of its own,
   * but an utterance still ends after 4096 model steps (2 min at 30 ms a
   * step), where the decoder's fixed memory ends. Well under a second, it
   * (or reset_after_silence_ms) cuts words before the model emits them. */
  uint32_t max_utterance_ms;
  /* Without speech, the model's state restarts after this much; 0: never. */
  uint32_t reset_after_silence_ms;
  /* Threads for the model's dense layers, [1, 256]. */
  int32_t num_threads;
  /* Beam search pruning: hypotheses this far (natural log) below the best
   * are dropped. */
  float beam_prune;
  /* Added after the first version (a smaller struct_size leaves them at
   * their defaults). Phrases the beam search (beam_width >= 2) favours
   * without forbidding other words, e.g. "turn on the light"
   * (tarn/ctc.hpp, Hotwords): hotword_count strings, borrowed for
   * tarn_recognizer_create() only; NULL/0: none. hotword_boosts: NULL, or
   * hotword_count boosts in nats per label, 0 for hotword_boost. */
  const char* const* hotwords;
  const float* hotword_boosts;
  size_t hotword_count;
  /* The boost of the phrases that give none, nats per label; default 1. */
  float hotword_boost;
  /* Added in the third version. tarn_recognizer_final_result(), and an
   * utterance that reaches max_utterance_ms, first step the model over this
   * much silence, so that an utterance cut right after its last word keeps
   * it (the model emits a word's labels a few steps after its audio); and
   * the next utterance after an endpoint hears up to this much of the
   * trailing non-speech again, so that a word begun as the endpoint fell
   * keeps its start. 0: none; at most 60000; default 300. (It sits in
   * the second version's tail padding, so a struct_size of 88 is read as
   * the third version: a second-version struct must have that padding
   * zeroed, as tarn_recognizer_options_default() leaves it.) */
  uint32_t final_silence_ms;
  /* Added in the fourth version. The speaker's vocal tract warp: 0 (the
   * default), the model's own (none unless it is a speaker's model that
   * stores one); 1, none; or a factor in [0.5, 2], e.g. from
   * tarn_estimate_warp(). Earlier versions get 0. */
  float warp;
} tarn_recognizer_options;

typedef struct tarn_recognized_word {
  const char* word;
  double start; /* seconds since the stream started */
  double end;
} tarn_recognized_word;

typedef struct tarn_recognition_result {
  const char* text; /* the words joined by single spaces; "" for none */
  const tarn_recognized_word* words; /* word_count of them */
  size_t word_count;
  double start; /* the utterance's span, seconds since the stream started */
  double end;
} tarn_recognition_result;

/* As tarn_load_options_init() (tarn/tarn.h), for tarn_recognizer_options. */
void tarn_recognizer_options_init(tarn_recognizer_options* options,
                                  size_t size);

/* Greedy, endpoints after 500 ms, utterances at most 30 s, a restart after
 * 2 s without speech, one thread, beam_prune 20, no hotwords (boost 1),
 * 300 ms of final silence, the model's warp (0); struct_size set. */
static inline tarn_recognizer_options tarn_recognizer_options_default(void) {
  tarn_recognizer_options options;
  tarn_recognizer_options_init(&options, sizeof options);
  return options;
}

/* A new recognizer for audio at `sample_rate` Hz, which must be the model's
 * (tarn_recognizer_sample_rate(); nothing is resampled); options NULL: the
 * defaults. Fails for a model that cannot listen (no audio front end, no
 * labels, not causal) and for options the decoder refuses. Free it with
 * tarn_recognizer_free(). */
tarn_status tarn_recognizer_create(const tarn_model* model,
                                   uint32_t sample_rate,
                                   const tarn_recognizer_options* options,
                                   tarn_recognizer** recognizer);
void tarn_recognizer_free(tarn_recognizer* recognizer);

/* Feeds `count` mono samples, any number per call: floats in [-1, 1), or
 * 16-bit PCM. Fails for a sample that is not finite or beyond +-64 (16-bit
 * PCM passed as floats), naming it and consuming nothing. */
tarn_status tarn_recognizer_accept_float(tarn_recognizer* recognizer,
                                         const float* samples, size_t count);
tarn_status tarn_recognizer_accept_int16(tarn_recognizer* recognizer,
                                         const int16_t* samples, size_t count);

/* The oldest utterance that ended at an endpoint and was not yet popped:
 * *result points to it, or is NULL when none is queued. Drain the queue
 * after every accept: one call over a long stretch of audio may end several
 * utterances. */
tarn_status tarn_recognizer_pop_result(tarn_recognizer* recognizer,
                                       const tarn_recognition_result** result);
/* Utterances queued for tarn_recognizer_pop_result(). */
size_t tarn_recognizer_queued_results(const tarn_recognizer* recognizer);

/* The utterance in progress, as decoded so far. */
tarn_status tarn_recognizer_partial_result(
    tarn_recognizer* recognizer, const tarn_recognition_result** result);

/* Ends the utterance in progress (end of stream) and gives its result;
 * queued results are not included (pop them first). The clock runs on. */
tarn_status tarn_recognizer_final_result(
    tarn_recognizer* recognizer, const tarn_recognition_result** result);

/* Back to a new recognizer's state: audio, queue and clock cleared. */
void tarn_recognizer_reset(tarn_recognizer* recognizer);

/* The speaker's vocal tract warp (tarn_recognizer_options.warp) from the
 * next frame on, e.g. once tarn_estimate_warp() has heard enough of the
 * speaker; call it between utterances. 0: the model's own. Fails, changing
 * nothing, for a warp outside [0.5, 2]. tarn_recognizer_reset() keeps the
 * warp. */
tarn_status tarn_recognizer_set_warp(tarn_recognizer* recognizer, float warp);

/* The audio rate the model's front end takes, Hz. */
uint32_t tarn_recognizer_sample_rate(const tarn_recognizer* recognizer);
/* Seconds of audio per model step. */
double tarn_recognizer_step_seconds(const tarn_recognizer* recognizer);

/* Speaker adaptation (tarn/recognizer.hpp, EstimateWarp): *warp gets the
 * vocal tract warp, of 0.85, 0.9, ..., 1.15, under which the model is most
 * confident of a speaker's utterance_count utterances (utterances[i]: floats
 * in [-1, 1) at the model's rate, sample_counts[i] of them), for
 * tarn_recognizer_options.warp. A few minutes of speech make it reliable. */
tarn_status tarn_estimate_warp(const tarn_model* model,
                               const float* const* utterances,
                               const size_t* sample_counts,
                               size_t utterance_count, float* warp);

/* The same estimate fed as the audio arrives (tarn/recognizer.hpp,
 * WarpEstimator), so that the speaker's audio need not be kept: the model
 * runs once per candidate warp alongside. tarn_warp_estimator_estimate()
 * at any point gives what tarn_estimate_warp() gives for the utterances so
 * far, the current one as it stands. Free it with
 * tarn_warp_estimator_free(); the model must outlive it. */
typedef struct tarn_warp_estimator tarn_warp_estimator;
tarn_status tarn_warp_estimator_create(const tarn_model* model,
                                       tarn_warp_estimator** estimator);
void tarn_warp_estimator_free(tarn_warp_estimator* estimator);
/* More of the current utterance, at the model's rate: floats in [-1, 1), or
 * 16-bit PCM. Fails for a sample that is not finite or beyond +-64,
 * consuming nothing. */
tarn_status tarn_warp_estimator_accept_float(tarn_warp_estimator* estimator,
                                             const float* samples,
                                             size_t count);
tarn_status tarn_warp_estimator_accept_int16(tarn_warp_estimator* estimator,
                                             const int16_t* samples,
                                             size_t count);
/* The samples after this start another utterance. */
tarn_status tarn_warp_estimator_end_utterance(tarn_warp_estimator* estimator);
/* *warp: the estimate over everything heard; fails before the first model
 * step (stack_window frames of one utterance: 1,680 samples for the bundled
 * model). */
tarn_status tarn_warp_estimator_estimate(tarn_warp_estimator* estimator,
                                         float* warp);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TARN_SPEECH_H_ */
