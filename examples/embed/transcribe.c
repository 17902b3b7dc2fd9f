/* transcribe.c: speech recognition from C99 through the speech library's C API
 * (tarn/speech.h).
 *
 *   tarn_transcribe_c MODEL.tarn AUDIO.wav [WORDS.txt]
 *
 * Streams AUDIO (any format libsndfile reads, mono, at the model's rate) in
 * 100 ms chunks of 16-bit PCM into a recognizer, prints each utterance that
 * ends at an endpoint with its word times, then the final transcript (all
 * utterances joined) alone on the last line. With WORDS.txt (one word a
 * line) it decodes with an 8-wide beam search constrained to those words.
 */

#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/speech.h"

enum { kChunk = 1600, kMaxWords = 1024, kMaxWordBytes = 64 };

static int fail(const char* what) {
  fprintf(stderr, "%s: %s\n", what, tarn_last_error());
  return 1;
}

/* Prints one utterance's words and times; appends its text to transcript. */
static void take(const tarn_recognition_result* result, char* transcript,
                 size_t capacity) {
  size_t i;
  if (result->word_count == 0) return;
  for (i = 0; i < result->word_count; ++i) {
    printf("%s%s [%.2f-%.2f]", i ? " " : "", result->words[i].word,
           result->words[i].start, result->words[i].end);
  }
  printf("\n");
  if (transcript[0] != '\0')
    strncat(transcript, " ", capacity - strlen(transcript) - 1);
  strncat(transcript, result->text, capacity - strlen(transcript) - 1);
}

int main(int argc, char** argv) {
  static char word_storage[kMaxWords][kMaxWordBytes];
  static const char* words[kMaxWords];
  static char transcript[65536];
  tarn_model* model = NULL;
  tarn_recognizer* recognizer = NULL;
  tarn_recognizer_options options = tarn_recognizer_options_default();
  const tarn_recognition_result* result = NULL;
  short pcm[kChunk];
  SF_INFO info;
  SNDFILE* audio;
  sf_count_t got;

  if (argc < 3 || argc > 4) {
    fprintf(stderr, "usage: %s MODEL.tarn AUDIO.wav [WORDS.txt]\n", argv[0]);
    return 2;
  }
  if (argc == 4) {
    FILE* list = fopen(argv[3], "r");
    if (list == NULL) {
      fprintf(stderr, "cannot open word list %s\n", argv[3]);
      return 1;
    }
    while (options.word_count < kMaxWords &&
           fscanf(list, "%63s", word_storage[options.word_count]) == 1) {
      words[options.word_count] = word_storage[options.word_count];
      ++options.word_count;
    }
    fclose(list);
    options.words = words;
    options.beam_width = 8;
  }

  memset(&info, 0, sizeof info);
  audio = sf_open(argv[2], SFM_READ, &info);
  if (audio == NULL) {
    fprintf(stderr, "%s: %s\n", argv[2], sf_strerror(NULL));
    return 1;
  }
  if (info.channels != 1) {
    fprintf(stderr, "%s: %d channels; mono audio only\n", argv[2],
            info.channels);
    sf_close(audio);
    return 1;
  }
  if (tarn_model_load(argv[1], &model) != TARN_STATUS_OK) {
    sf_close(audio);
    return fail(argv[1]);
  }
  /* Refused, with a message saying both rates, unless the file's rate is
   * the model's. */
  if (tarn_recognizer_create(model, (uint32_t)info.samplerate, &options,
                             &recognizer) != TARN_STATUS_OK) {
    sf_close(audio);
    tarn_model_free(model);
    return fail("recognizer");
  }

  while ((got = sf_readf_short(audio, pcm, kChunk)) > 0) {
    if (tarn_recognizer_accept_int16(recognizer, pcm, (size_t)got) !=
        TARN_STATUS_OK) {
      break;
    }
    while (tarn_recognizer_pop_result(recognizer, &result) == TARN_STATUS_OK &&
           result != NULL) {
      take(result, transcript, sizeof transcript);
    }
  }
  sf_close(audio);
  if (got > 0) { /* accept failed */
    int status = fail(argv[2]);
    tarn_recognizer_free(recognizer);
    tarn_model_free(model);
    return status;
  }
  if (tarn_recognizer_final_result(recognizer, &result) == TARN_STATUS_OK) {
    take(result, transcript, sizeof transcript);
  }
  printf("%s\n", transcript);

  tarn_recognizer_free(recognizer);
  tarn_model_free(model);
  return 0;
}
