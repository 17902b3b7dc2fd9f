/* tarn.h: the C API of tarn, linear-attention transformers run as recurrent
 * networks on CPUs. C99; usable from C++.
 *
 * A worked example: load a token model, feed it a prompt, generate greedily,
 * and rewind to a snapshot.
 *
 *   #include <stdio.h>
 *   #include <stdlib.h>
 *   #include "tarn/tarn.h"
 *
 *   tarn_model* model = NULL;
 *   if (tarn_model_load("model.tarn", &model) != TARN_STATUS_OK) {
 *     fprintf(stderr, "%s\n", tarn_last_error());
 *     return 1;
 *   }
 *   tarn_session* session = NULL;
 *   if (tarn_session_create(model, NULL, &session) != TARN_STATUS_OK) { ... }
 *
 *   size_t width = tarn_model_output_size(model);
 *   float* logits = malloc(width * sizeof(float));
 *   int32_t prompt[] = {1, 17, 4, 9};
 *   // All but the last prompt token in parallel chunks, without outputs;
 *   // the last one as a step, whose output predicts the next token.
 *   tarn_session_prefill_tokens(session, prompt, 3, NULL, 0);
 *   tarn_session_step_token(session, prompt[3], logits, width);
 *
 *   size_t snapshot_size = tarn_model_snapshot_bytes(model);
 *   void* snapshot = malloc(snapshot_size);
 *   tarn_session_snapshot(session, snapshot, snapshot_size);
 *   for (int i = 0; i < 20; ++i) {
 *     int32_t next = argmax(logits, width);
 *     if (tarn_session_step_token(session, next, logits, width) !=
 *         TARN_STATUS_OK) { ... }
 *   }
 *   tarn_session_restore(session, snapshot, snapshot_size);  // rewind
 *
 *   free(snapshot);
 *   free(logits);
 *   tarn_session_free(session);
 *   tarn_model_free(model);
 *
 * examples/embed/embed.c is this example complete, with a session in a
 * caller's arena and a batch of streams. Speech recognition is the speech
 * library's (tarn/speech.h); examples/embed/transcribe.c uses it.
 *
 * Errors. Every fallible function returns a tarn_status; TARN_STATUS_OK is
 * 0. On failure, tarn_last_error() returns a message saying what went wrong
 * and where (tensor name, expected vs actual size, token id, ...). No
 * function aborts or lets a C++ exception escape. A call that fails leaves
 * its session as it was.
 *
 * Fallible functions refuse bad input with TARN_STATUS_INVALID_ARGUMENT,
 * never computing on it: a NULL handle or buffer, an output buffer too
 * small or a frame of the wrong size, a token outside [0, vocab_size), and
 * a frame holding NaN or Inf. Frames must be finite at every function
 * that takes them (step, prefill, encode, batch); the message names the
 * frame and the value, and no session moves.
 *
 * Ownership and lifetimes. A tarn_model is immutable once loaded and may be
 * shared by any number of sessions and threads; free it after every session
 * and batch made from it. A tarn_session is one stream's recurrent state and
 * scratch, in one block of tarn_model_session_bytes() bytes that the library
 * allocates at creation, or that the caller provides (an arena): stepping,
 * prefilling, snapshots and batches never allocate. A session is used by one
 * thread at a time (a batch call counts as a use of each session it steps),
 * and so is a tarn_batch: each call works in the batch's one scratch. Every
 * buffer passed in is the caller's and only borrowed for the call.
 *
 * Getters given a NULL handle return 0 (false); free functions accept NULL.
 *
 * Options. Option structs (tarn_load_options, tarn_session_options,
 * tarn_batch_options, and the speech library's in tarn/speech.h) start with
 * struct_size, which their _default() function sets: start from it and change
 * the fields you need. Fields are only ever added at the end, each new
 * version larger than the last (one exception: tarn/speech.h's recognizer
 * options, whose versions 2 and 3 are both 88 bytes on 64-bit platforms),
 * and the library reads the fields that fit in struct_size, the
 * defaults for the rest: a program built against an older tarn.h keeps
 * working with a newer library. The _default() functions are
 * inline, so that they build the struct of the header the program was built
 * with (over the library's _init(), which fills the bytes it is given);
 * objects compiled against a tarn.h from before they were (when the library
 * returned its own struct by value) fail to link and must be rebuilt. The
 * library refuses a struct_size of 0, below the struct's first version, or
 * above 4096 (TARN_STATUS_INVALID_ARGUMENT), and a struct from a newer tarn.h
 * that sets fields the library does not know (TARN_STATUS_UNSUPPORTED).
 *
 * Sizes. Buffers of floats are given with their size in floats; buffers of
 * bytes in bytes. Outputs are written row by row: one row of
 * tarn_model_output_size() floats per step. One rule for every output
 * buffer (step, prefill, encode, batch, snapshot): it must hold at least
 * what the call writes, else the call fails with
 * TARN_STATUS_INVALID_ARGUMENT and moves nothing; the call writes within
 * that many and never past it. Each function says how many that is.
 */

#ifndef TARN_TARN_H_
#define TARN_TARN_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* --- Status --------------------------------------------------------------- */

typedef enum tarn_status {
  TARN_STATUS_OK = 0,
  TARN_STATUS_INVALID_ARGUMENT = 1, /* a caller's argument is wrong */
  TARN_STATUS_INVALID_MODEL = 2,    /* a model file is damaged */
  TARN_STATUS_UNSUPPORTED = 3,      /* valid, but not for this model/build */
  TARN_STATUS_OUT_OF_RANGE = 4,     /* e.g. past learned positions */
  TARN_STATUS_IO_ERROR = 5,         /* a file could not be read */
  TARN_STATUS_OUT_OF_MEMORY = 6,
  TARN_STATUS_INTERNAL = 7 /* a third-party library failed unexpectedly */
} tarn_status;

/* The message of the last call that failed on the calling thread ("" if
 * none has). Thread-local: calls on other threads do not change it. Valid
 * until the next failing call on this thread. At most 1023 bytes: a longer
 * message (a long path's) keeps its start and its end, " ... " between. */
const char* tarn_last_error(void);

/* "ok", "invalid argument", ...: the status's name. */
const char* tarn_status_name(tarn_status status);

/* The library's version, "major.minor.patch". */
const char* tarn_version(void);

/* The kernel variant models run on in this process: "scalar", "avx2",
 * "avx512" or "neon", the best this CPU supports unless the environment
 * variable TARN_KERNELS forces one. Chosen once, on first use. */
const char* tarn_kernels(void);

/* The integer dot-product kernels of int8 models loaded to quantise their
 * activations (C++ LoadOptions::int8_compute, `tarn ... --int8 dot`):
 * "amx", "avx512vnni", "avxvnni", "avx2", "neondot" or "scalar", the best
 * that tarn_kernels() and this CPU allow. */
const char* tarn_int8_dot_kernels(void);

/* --- Log ------------------------------------------------------------------ */

/* What the library has to say beyond a status: a TARN_KERNELS value it
 * cannot honour (a warning), what a new session holds (debug). */
typedef enum tarn_log_level {
  TARN_LOG_DEBUG = 0,
  TARN_LOG_INFO = 1,
  TARN_LOG_WARNING = 2,
  TARN_LOG_ERROR = 3
} tarn_log_level;

/* `message` is one line without a newline, valid for the call only. Called
 * on whichever thread logs, possibly several at once. */
typedef void (*tarn_log_callback)(tarn_log_level level, const char* message,
                                  void* user_data);

/* Sends every message, at every level, to `callback` with `user_data`, for
 * the whole process (the speech library's too; tarn::SetLogCallback in
 * tarn/tarn.hpp sets the same sink). NULL restores the default, which
 * writes warnings and errors to stderr ("tarn: <message>") and drops the
 * rest. Set it before loading a model to see the kernel selection's
 * warnings. Thread-safe, but not a barrier: a call already logging on
 * another thread may still reach the previous callback after this returns,
 * so keep its user_data alive until such calls are done. */
void tarn_log_set(tarn_log_callback callback, void* user_data);

/* --- Model ---------------------------------------------------------------- */

typedef struct tarn_model tarn_model;

typedef enum tarn_input_kind {
  TARN_INPUT_TOKENS = 0, /* steps take token ids */
  TARN_INPUT_FRAMES = 1  /* steps take frames of tarn_model_frame_size() */
} tarn_input_kind;

/* Maps and validates a .tarn file completely (size, structure, the
 * checksum, every shape). On success *model is the caller's, to free with
 * tarn_model_free(). Its weights are read from the mapping in place until
 * the model and its sessions are freed: meanwhile the file must not be
 * truncated (a step dies of SIGBUS) or rewritten in place (the weights
 * change under the model); renaming a new file over it, or deleting it, is
 * safe. */
tarn_status tarn_model_load(const char* path, tarn_model** model);
/* The same from bytes in memory: 64-byte aligned, alive and unchanged until
 * the model is freed (its weights are read there, in place); `size` is the
 * file's own (bytes past its end fail a schema 2.1 file's checksum). */
tarn_status tarn_model_load_from_buffer(const void* data, size_t size,
                                        tarn_model** model);

/* How the dense layers of an int8 file compute (docs/decisions.md, "int8
 * weights"). */
typedef enum tarn_int8_compute {
  /* Activations stay f32 and each int8 weight is widened: the error is the
   * weights' rounding alone, and the model keeps its f32 accuracy. */
  TARN_INT8_EXACT = 0,
  /* Each row of activations is quantised to int8 and multiplied by integer
   * dot products (tarn_int8_dot_kernels()): faster, at the cost of the
   * activations' rounding as well. */
  TARN_INT8_INTEGER_DOT = 1
} tarn_int8_compute;

typedef struct tarn_load_options {
  /* sizeof(tarn_load_options), set by tarn_load_options_default(). */
  size_t struct_size;
  /* Hash the file and compare with the checksum stored in it (the whole
   * file's, schema 2.1; the weights' in an older file); false skips the hash
   * (a model known good, loaded often). */
  bool verify_checksum;
  /* Dense layers of an int8 file, a tarn_int8_compute (an int32_t, so that
   * any value a caller stores is a defined one the library can refuse);
   * other files ignore it. */
  int32_t int8_compute;
} tarn_load_options;

/* Fills the `size` bytes at `options` (size: sizeof *options, in the
 * caller's tarn.h) with the defaults, fields this library does not know
 * zeroed, and sets struct_size to `size`. Does nothing for NULL or a size
 * below struct_size's own or above 4096. */
void tarn_load_options_init(tarn_load_options* options, size_t size);

/* verify_checksum true, int8_compute TARN_INT8_EXACT; struct_size set. */
static inline tarn_load_options tarn_load_options_default(void) {
  tarn_load_options options;
  tarn_load_options_init(&options, sizeof options);
  return options;
}

/* tarn_model_load and tarn_model_load_from_buffer with options (NULL: the
 * defaults, as those two use). */
tarn_status tarn_model_load_with_options(const char* path,
                                         const tarn_load_options* options,
                                         tarn_model** model);
tarn_status tarn_model_load_from_buffer_with_options(
    const void* data, size_t size, const tarn_load_options* options,
    tarn_model** model);
/* Frees a model (NULL is fine). Free its sessions and batches first. */
void tarn_model_free(tarn_model* model);

tarn_input_kind tarn_model_input_kind(const tarn_model* model);
/* Causal models step and prefill; bidirectional ones encode. */
bool tarn_model_is_causal(const tarn_model* model);
/* Token models: ids are in [0, vocab_size). */
uint32_t tarn_model_vocab_size(const tarn_model* model);
/* Frame models: floats per frame; 0 for token models. */
size_t tarn_model_frame_size(const tarn_model* model);
/* Floats of one step's output. */
size_t tarn_model_output_size(const tarn_model* model);
/* How a .tarn file stores a tensor's elements (the converter's --dtype for
 * the matrices; vectors, norms and int8 scales stay f32). */
typedef enum tarn_dtype {
  TARN_DTYPE_F32 = 0,
  TARN_DTYPE_F16 = 1,
  TARN_DTYPE_I8 = 2,
  TARN_DTYPE_BF16 = 3
} tarn_dtype;
/* Bytes of weights as stored in the file, and the part of them stored as
 * `dtype` (0 for a value outside tarn_dtype). */
size_t tarn_model_weight_bytes(const tarn_model* model);
size_t tarn_model_weight_bytes_of(const tarn_model* model, tarn_dtype dtype);
/* A hash of the configuration and weights (not the metadata); snapshots
 * carry it. */
uint64_t tarn_model_identity(const tarn_model* model);
/* The schema version the file was written in; 0.0 for a null model. */
void tarn_model_schema_version(const tarn_model* model, uint32_t* major,
                               uint32_t* minor);
/* Bytes of a session snapshot. */
size_t tarn_model_snapshot_bytes(const tarn_model* model);
/* Learned positions: the most steps a stream takes (step max_positions is
 * TARN_STATUS_OUT_OF_RANGE); 0 where positions are unbounded. */
uint32_t tarn_model_max_positions(const tarn_model* model);
/* What a step's outputs are: logits or features (NONE), or the parameters of
 * a mixture of output_levels discretised logistics (LOGISTIC_MIXTURE, the
 * image model's: 3 floats a component, schema/tarn.fbs). */
typedef enum tarn_output_distribution {
  TARN_OUTPUT_DISTRIBUTION_NONE = 0,
  TARN_OUTPUT_DISTRIBUTION_LOGISTIC_MIXTURE = 1
} tarn_output_distribution;
tarn_output_distribution tarn_model_output_distribution(
    const tarn_model* model);
/* The levels a mixture's outputs spread over (256 grey levels); 0 for NONE. */
uint32_t tarn_model_output_levels(const tarn_model* model);
/* Metadata entry `index` (0, 1, ... in file order: provenance, an image
 * model's layout): *key and *value point to NUL-terminated UTF-8 in the
 * model's memory, valid while the model lives. TARN_STATUS_OUT_OF_RANGE past
 * the last entry, so a loop from 0 reads them all. */
tarn_status tarn_model_metadata(const tarn_model* model, size_t index,
                                const char** key, const char** value);

/* --- Session -------------------------------------------------------------- */

typedef struct tarn_session tarn_session;

typedef struct tarn_session_options {
  /* sizeof(tarn_session_options), set by tarn_session_options_default(). */
  size_t struct_size;
  /* Threads for the dense layers, [1, 256]; at most one per usable core
   * runs (tarn::SessionOptions::num_threads in tarn/tarn.hpp; after a
   * fork(), one made before it runs on the caller's thread alone). */
  int32_t num_threads;
  /* Most positions one prefill or encode chunk holds, [1, 4096]; the
   * session's scratch grows with it. 1: the smallest session. */
  uint32_t max_prefill_chunk;
} tarn_session_options;

/* As tarn_load_options_init(), for tarn_session_options. */
void tarn_session_options_init(tarn_session_options* options, size_t size);

/* num_threads 1, max_prefill_chunk 64; struct_size set. */
static inline tarn_session_options tarn_session_options_default(void) {
  tarn_session_options options;
  tarn_session_options_init(&options, sizeof options);
  return options;
}

/* Bytes of one session's block for these options (NULL: the defaults); 0
 * for invalid options. An arena for tarn_session_create_in_arena() must hold
 * this many. */
size_t tarn_model_session_bytes(const tarn_model* model,
                                const tarn_session_options* options);

/* A new session (allocated at once, tarn_model_session_bytes() bytes);
 * options NULL: the defaults. Free it with tarn_session_free(). */
tarn_status tarn_session_create(const tarn_model* model,
                                const tarn_session_options* options,
                                tarn_session** session);
/* The same, placed in `arena`: at least tarn_model_session_bytes() bytes,
 * 64-byte aligned, the caller's, untouched by anything else until the
 * session is freed (free a session before creating another in its arena).
 * Creating and using it allocate nothing from the heap but for the message
 * of a refused call, the thread pool with num_threads > 1, and what these
 * functions say they allocate: tarn_session_encode_tokens() and
 * tarn_session_encode_frames() (the sequence's activations) and
 * tarn_session_clone() (the clone). A NULL arena of 0 bytes is
 * tarn_session_create(); of more, it is refused.
 * tarn_session_free() ends the session and leaves the arena to the caller. */
tarn_status tarn_session_create_in_arena(const tarn_model* model,
                                         const tarn_session_options* options,
                                         void* arena, size_t arena_bytes,
                                         tarn_session** session);
/* Ends a session (NULL is fine). */
void tarn_session_free(tarn_session* session);

/* One token: writes tarn_model_output_size() floats into `output`
 * (output_size at least that). */
tarn_status tarn_session_step_token(tarn_session* session, int32_t token,
                                    float* output, size_t output_size);
/* One frame of frame_size floats (finite); output as for a token. With
 * frame stacking the model steps every stack_hop frames; *stepped says
 * whether it did and `output` was written. */
tarn_status tarn_session_step_frame(tarn_session* session, const float* frame,
                                    size_t frame_size, float* output,
                                    size_t output_size, bool* stepped);

/* Feeds `count` tokens as stepping would, in parallel chunks, ending in the
 * state stepping gives, bit for bit. outputs: NULL (none), or at least
 * count x output_size floats for every position's output, apart from the
 * tokens. */
tarn_status tarn_session_prefill_tokens(tarn_session* session,
                                        const int32_t* tokens, size_t count,
                                        float* outputs, size_t outputs_size);
/* The same for frames [frame_count][frame_size]: *steps gets the number of
 * steps taken (tarn_session_steps_for_frames()), outputs NULL or at least
 * steps x output_size floats. */
tarn_status tarn_session_prefill_frames(tarn_session* session,
                                        const float* frames, size_t frame_count,
                                        float* outputs, size_t outputs_size,
                                        size_t* steps);
/* Steps the next frame_count frames would take from the session's state (0
 * for a model that takes tokens). */
size_t tarn_session_steps_for_frames(const tarn_session* session,
                                     size_t frame_count);

/* Bidirectional models: every position's output for a whole sequence, in
 * O(count). outputs: at least count x output_size floats. Allocates
 * count x (d_model + heads x C) floats for the call. */
tarn_status tarn_session_encode_tokens(tarn_session* session,
                                       const int32_t* tokens, size_t count,
                                       float* outputs, size_t outputs_size);
/* The same for frames; *steps gets the number of outputs. */
tarn_status tarn_session_encode_frames(tarn_session* session,
                                       const float* frames, size_t frame_count,
                                       float* outputs, size_t outputs_size,
                                       size_t* steps);

/* Back to a new session's state. */
void tarn_session_reset(tarn_session* session);
/* Steps taken since creation or the last reset. */
uint64_t tarn_session_position(const tarn_session* session);

/* Writes the session's state (tarn_model_snapshot_bytes() bytes; size at
 * least that): a header with the model's identity, the state layout version
 * and a checksum, then the state. */
tarn_status tarn_session_snapshot(const tarn_session* session, void* buffer,
                                  size_t size);
/* Replaces the session's state with a snapshot's (size: exactly
 * tarn_model_snapshot_bytes()); refuses one of another model or state
 * layout, or a damaged one. Continuing is then bit-identical to continuing
 * the session snapshotted when both models were loaded with the same
 * int8_compute (a snapshot restores across int8 modes too, and continues
 * with the restoring model's rounding). */
tarn_status tarn_session_restore(tarn_session* session, const void* snapshot,
                                 size_t size);
/* A new session (allocated, same options) in this one's state. */
tarn_status tarn_session_clone(const tarn_session* session,
                               tarn_session** clone);

/* --- Batch ---------------------------------------------------------------- */

/* Steps many sessions of one model in one call, the dense layers as
 * matrix-matrix products; each session's state is updated in place, with
 * results bit-identical to stepping it alone. A batch holds no stream's
 * state, only the scratch its calls work in: it is used by one thread at a
 * time (one batch per thread that steps sessions). */
typedef struct tarn_batch tarn_batch;

typedef struct tarn_batch_options {
  /* sizeof(tarn_batch_options), set by tarn_batch_options_default(). */
  size_t struct_size;
  /* Most sessions per call, [1, 4096]. */
  uint32_t max_streams;
  /* Threads for the dense layers, [1, 256]; at most one per usable core
   * runs (tarn::SessionOptions::num_threads in tarn/tarn.hpp; after a
   * fork(), one made before it runs on the caller's thread alone). */
  int32_t num_threads;
} tarn_batch_options;

/* As tarn_load_options_init(), for tarn_batch_options. */
void tarn_batch_options_init(tarn_batch_options* options, size_t size);

/* max_streams 16, num_threads 1; struct_size set. */
static inline tarn_batch_options tarn_batch_options_default(void) {
  tarn_batch_options options;
  tarn_batch_options_init(&options, sizeof options);
  return options;
}
/* Bytes of one batch's block (options NULL: the defaults); 0 if invalid or
 * for a bidirectional model, which makes no batch. */
size_t tarn_model_batch_bytes(const tarn_model* model,
                              const tarn_batch_options* options);

/* TARN_STATUS_UNSUPPORTED for a bidirectional model: it cannot be stepped. */
tarn_status tarn_batch_create(const tarn_model* model,
                              const tarn_batch_options* options,
                              tarn_batch** batch);
/* In a caller's arena, as tarn_session_create_in_arena(). */
tarn_status tarn_batch_create_in_arena(const tarn_model* model,
                                       const tarn_batch_options* options,
                                       void* arena, size_t arena_bytes,
                                       tarn_batch** batch);
void tarn_batch_free(tarn_batch* batch);

/* Steps sessions[i] with tokens[i], i < count (distinct sessions of the
 * batch's model, count <= max_streams); outputs: at least count x
 * output_size floats, row i session i's. Everything is checked first: on an
 * error no session has moved. */
tarn_status tarn_batch_step_tokens(tarn_batch* batch,
                                   tarn_session* const* sessions,
                                   const int32_t* tokens, size_t count,
                                   float* outputs, size_t outputs_size);
/* Feeds frames [count][frame_size], frame i to sessions[i]; stepped[i] says
 * whether session i stepped and row i of outputs was written. */
tarn_status tarn_batch_step_frames(tarn_batch* batch,
                                   tarn_session* const* sessions,
                                   const float* frames, size_t count,
                                   float* outputs, size_t outputs_size,
                                   bool* stepped);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TARN_TARN_H_ */
