/* transcribe.c: speech recognition from C99 through the speech library's C API
 * (tarn/speech.h).
 *
 *   tarn_transcribe_c MODEL.tarn AUDIO.wav [WORDS.txt]
 *
 * Streams AUDIO (any format libsndfile reads, mono, at the model's rate) in
 * 100 ms chunks of 16-bit PCM into a recognizer, prints each utterance that
 * ends at an endpoint with its word times, then the final transcript (all
 * utterances joined) alone on the last line. With WORDS.txt (one word a
 * line, read as `tarn transcribe --words` reads it) it decodes with an 8-wide
 * beam search constrained to those words.
 */

#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/speech.h"

/* kMaxLineBytes: the longest line of a word list, without its '\n'. */
enum { kChunk = 1600, kMaxLineBytes = 256 };

static int fail(const char* what) {
  fprintf(stderr, "%s: %s\n", what, tarn_last_error());
  return 1;
}

typedef struct word_list {
  char** words; /* count strings, each the list's to free */
  size_t count, capacity;
} word_list;

static void free_words(word_list* list) {
  size_t i;
  for (i = 0; i < list->count; ++i) free(list->words[i]);
  free(list->words);
}

/* Reads a word list as `tarn transcribe --words` does: one word a line,
 * blanks around it and blank lines skipped. 0 on success; else 1, after
 * saying why (unreadable, a line over kMaxLineBytes, no words, no memory). */
static int read_words(const char* path, word_list* list) {
  char line[kMaxLineBytes + 2]; /* the line, its newline and a NUL */
  unsigned long number = 0;
  int status = 1;
  FILE* file = fopen(path, "r");
  if (file == NULL) {
    fprintf(stderr, "cannot read the word list %s\n", path);
    return 1;
  }
  while (fgets(line, sizeof line, file) != NULL) {
    char* begin = line;
    size_t length;
    if (++number == 1 && strncmp(line, "\xEF\xBB\xBF", 3) == 0) begin += 3;
    if (strchr(line, '\n') == NULL && !feof(file)) {
      fprintf(stderr, "%s:%lu: a line over %d bytes; one word a line\n", path,
              number, kMaxLineBytes);
      goto done;
    }
    begin += strspn(begin, " \t\r\n");
    length = strlen(begin);
    while (length > 0 && strchr(" \t\r\n", begin[length - 1]) != NULL) --length;
    if (length == 0) continue;
    if (list->count == list->capacity) {
      size_t capacity = list->capacity ? 2 * list->capacity : 256;
      char** grown = realloc(list->words, capacity * sizeof *grown);
      if (grown == NULL) goto out_of_memory;
      list->words = grown;
      list->capacity = capacity;
    }
    if ((list->words[list->count] = malloc(length + 1)) == NULL)
      goto out_of_memory;
    memcpy(list->words[list->count], begin, length);
    list->words[list->count++][length] = '\0';
  }
  if (ferror(file)) {
    fprintf(stderr, "cannot read the word list %s\n", path);
  } else if (list->count == 0) {
    fprintf(stderr, "the word list %s holds no words\n", path);
  } else {
    status = 0;
  }
  goto done;
out_of_memory:
  fprintf(stderr, "%s:%lu: out of memory\n", path, number);
done:
  fclose(file);
  return status;
}

/* libsndfile reads a WAV file whose data chunk was cut short without an
 * error (and counts info.frames from what is there), noting "data :
 * DECLARED (should be PRESENT)" in its log: 1 for such a file, after saying
 * so. Writers that stream a WAV out leave a placeholder size (0 or ~0). */
static int truncated(SNDFILE* audio, const char* path) {
  static char log[16384];
  unsigned long long declared, present;
  const char* line;
  sf_command(audio, SFC_GET_LOG_INFO, log, sizeof log);
  line = strstr(log, "\ndata : ");
  if (line == NULL ||
      sscanf(line + 1, "data : %llu (should be %llu)", &declared, &present) !=
          2 ||
      declared <= present || declared >= 0xFFFFFFF0ull) {
    return 0;
  }
  fprintf(stderr,
          "%s: the file is truncated: its data chunk declares %llu bytes of "
          "audio but only %llu are present\n",
          path, declared, present);
  return 1;
}

static unsigned long le32(const unsigned char* p) {
  return p[0] | p[1] << 8 | (unsigned long)p[2] << 16 |
         (unsigned long)p[3] << 24;
}

/* Whether bytes [at, length) of `file` are whole RIFF chunks (an id of 4
 * printable characters and a size that ends within the file), as a
 * finished file's chunks after its data chunk are; audio is not. */
static int whole_chunks(FILE* file, long at, long length) {
  unsigned char chunk[8];
  int i;
  while (at < length) {
    if (fseek(file, at, SEEK_SET) != 0 || fread(chunk, 1, 8, file) != 8) {
      return 0;
    }
    for (i = 0; i < 4; ++i) {
      if (chunk[i] < 0x20 || chunk[i] > 0x7e) return 0;
    }
    at += 8 + (long)le32(chunk + 4);
    if (at > length) return 0;
    if (at < length && (at & 1)) ++at; /* a pad byte */
  }
  return 1;
}

/* A WAV written as a stream whose sizes were never filled in declares a
 * data chunk of 0 bytes with the audio after it, of which libsndfile reads
 * nothing. 1 for such a file, found by reading its chunks as `tarn
 * transcribe` does, after saying so in its words. */
static int placeholder(const char* path, sf_count_t frames) {
  unsigned char head[12], chunk[8];
  long length, at = 12, follow;
  unsigned long size;
  int found = 0;
  FILE* file;
  if (frames != 0 || (file = fopen(path, "rb")) == NULL) return 0;
  if (fread(head, 1, sizeof head, file) == sizeof head &&
      memcmp(head, "RIFF", 4) == 0 && memcmp(head + 8, "WAVE", 4) == 0 &&
      fseek(file, 0, SEEK_END) == 0 && (length = ftell(file)) > 0) {
    while (fseek(file, at, SEEK_SET) == 0 &&
           fread(chunk, 1, sizeof chunk, file) == sizeof chunk) {
      size = le32(chunk + 4);
      if (memcmp(chunk, "data", 4) == 0) {
        follow = length > at + 8 ? length - at - 8 : 0;
        if (size == 0 && follow > 0 && !whole_chunks(file, at + 8, length)) {
          fprintf(stderr,
                  "%s: its data chunk declares 0 bytes of audio but %ld "
                  "follow (a WAV written as a stream, its sizes never filled "
                  "in); rewrite its header, e.g. sox --ignore-length %s "
                  "OUT.wav\n",
                  path, follow, path);
          found = 1;
        }
        break;
      }
      at += 8 + (long)size + (long)(size & 1);
    }
  }
  fclose(file);
  return found;
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
  static char transcript[65536];
  word_list list = {NULL, 0, 0};
  tarn_model* model = NULL;
  tarn_recognizer* recognizer = NULL;
  tarn_recognizer_options options = tarn_recognizer_options_default();
  const tarn_recognition_result* result = NULL;
  short pcm[kChunk];
  SF_INFO info;
  SNDFILE* audio = NULL;
  sf_count_t got, frames = 0;
  int status = 1;

  if (argc < 3 || argc > 4) {
    fprintf(stderr, "usage: %s MODEL.tarn AUDIO.wav [WORDS.txt]\n", argv[0]);
    return 2;
  }
  if (argc == 4) {
    if (read_words(argv[3], &list) != 0) goto done;
    options.words = (const char* const*)list.words;
    options.word_count = list.count;
    options.beam_width = 8;
  }

  memset(&info, 0, sizeof info);
  audio = sf_open(argv[2], SFM_READ, &info);
  if (audio == NULL) {
    fprintf(stderr, "%s: %s\n", argv[2], sf_strerror(NULL));
    goto done;
  }
  if (info.channels != 1) {
    fprintf(stderr, "%s: %d channels; mono audio only\n", argv[2],
            info.channels);
    goto done;
  }
  if (truncated(audio, argv[2]) || placeholder(argv[2], info.frames)) goto done;
  if (tarn_model_load(argv[1], &model) != TARN_STATUS_OK) {
    fail(argv[1]);
    goto done;
  }
  /* Refused, with a message saying both rates, unless the file's rate is
   * the model's. The words are borrowed for the call only. */
  if (tarn_recognizer_create(model, (uint32_t)info.samplerate, &options,
                             &recognizer) != TARN_STATUS_OK) {
    fail("recognizer");
    goto done;
  }

  while ((got = sf_readf_short(audio, pcm, kChunk)) > 0) {
    frames += got;
    if (tarn_recognizer_accept_int16(recognizer, pcm, (size_t)got) !=
        TARN_STATUS_OK) {
      fail(argv[2]);
      goto done;
    }
    while (tarn_recognizer_pop_result(recognizer, &result) == TARN_STATUS_OK &&
           result != NULL) {
      take(result, transcript, sizeof transcript);
    }
  }
  if (got < 0 || sf_error(audio) != SF_ERR_NO_ERROR || frames < info.frames) {
    fprintf(stderr, "%s: reading failed after %lld of %lld frames: %s\n",
            argv[2], (long long)frames, (long long)info.frames,
            sf_strerror(audio));
    goto done;
  }
  if (tarn_recognizer_final_result(recognizer, &result) != TARN_STATUS_OK) {
    fail("recognizer");
    goto done;
  }
  take(result, transcript, sizeof transcript);
  printf("%s\n", transcript);
  status = 0;

done:
  tarn_recognizer_free(recognizer);
  tarn_model_free(model);
  if (audio != NULL) sf_close(audio);
  free_words(&list);
  return status;
}
