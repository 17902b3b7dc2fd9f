// tarn._tarn: the nanobind extension behind the Python package `tarn`.
//
// Thin on purpose: each method checks what Python alone knows (a closed
// model, a session busy in another thread), releases the GIL, calls the C++
// API (tarn/tarn.hpp, tarn/recognizer.hpp) and turns a failed Status into the
// tarn.Error subclass for its code, carrying the runtime's message. Arrays
// arrive as float32/int32/int16 C-contiguous numpy arrays (the Python layer,
// python/tarn/_api.py, checks dtypes and shapes and allocates the outputs),
// so nothing is copied on the way in or out.
//
// ModelConfig's fields are read in one place, ConfigDict() below.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#if defined(__GLIBCXX__)
#include <cxxabi.h>
#endif

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "tarn/recognizer.hpp"
#include "tarn/tarn.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

// A failed Status on its way to Python.
struct StatusError {
  tarn::Status status;
};

void Check(const tarn::Status& status) {
  if (!status.ok()) throw StatusError{status};
}

[[noreturn]] void Fail(tarn::StatusCode code, std::string message) {
  throw StatusError{tarn::Status(code, std::move(message))};
}

// The Python exception classes (tarn/_errors.py), by status code.
nb::object ErrorClass(tarn::StatusCode code) {
  nb::module_ errors = nb::module_::import_("tarn._errors");
  return errors.attr("error_for_code")(static_cast<int>(code));
}

template <typename T>
using Array = nb::ndarray<T, nb::c_contig, nb::device::cpu>;

// Threads inside a runtime call, the GIL released. Any still there when
// Python exits (parked, below, or computing) keep their sessions and models,
// which nanobind would report at exit as leaks of the binding's.
std::atomic<int> threads_in_calls{0};

// threading's main thread, the one that finalizes the interpreter at exit
// (read when the module loads).
unsigned long main_thread_ident = 0;

// Releases the GIL for as long as it lives (one runtime call). A thread that
// takes the GIL back while the interpreter finalizes (a daemon thread inside
// a call when Python exits) is ended by CPython with pthread_exit before
// 3.14, whose unwinding through this noexcept destructor, and nanobind's
// frames, aborts the process. Such a thread is parked instead, forever, as
// CPython 3.14 itself does: the process exits around it.
class GilReleased {
 public:
  GilReleased() : state_(PyEval_SaveThread()) { ++threads_in_calls; }
  ~GilReleased() {
    // The finalizing thread itself (the main thread, a __del__ at exit)
    // takes the GIL back as usual: CPython ends only the others.
    if (Finalizing() && !OnMainThread()) Park();
#if defined(__GLIBCXX__)
    // Finalization may begin while this thread waits for the GIL: CPython
    // then ends it from inside PyEval_RestoreThread.
    try {
      PyEval_RestoreThread(state_);
    } catch (abi::__forced_unwind&) {
      Park();
    }
#else
    try {
      PyEval_RestoreThread(state_);
    } catch (...) {  // the forced unwind of pthread_exit, as above
      Park();
    }
#endif
    --threads_in_calls;
  }
  GilReleased(const GilReleased&) = delete;
  GilReleased& operator=(const GilReleased&) = delete;

 private:
  static bool Finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsFinalizing();
#else
    return _Py_IsFinalizing();
#endif
  }
  static bool OnMainThread() {
    return PyThread_get_thread_ident() == main_thread_ident;
  }
  [[noreturn]] static void Park() {
    for (;;) std::this_thread::sleep_for(std::chrono::hours(24));
  }

  PyThreadState* state_;
};

// Everything the runtime's ModelConfig holds, with the enumerations by name.
nb::dict ConfigDict(const tarn::ModelConfig& c) {
  nb::dict d;
  d["input_kind"] = tarn::Name(c.input_kind);
  d["vocab_size"] = c.vocab_size;
  d["embedding_scale"] = c.embedding_scale;
  d["input_dim"] = c.input_dim;
  d["stack_window"] = c.stack_window;
  d["stack_hop"] = c.stack_hop;
  d["input_projection"] = c.input_projection;
  d["input_activation"] = tarn::Name(c.input_activation);
  d["position"] = tarn::Name(c.position);
  d["max_positions"] = c.max_positions;
  d["d_model"] = c.d_model;
  d["num_layers"] = c.num_layers;
  d["num_heads"] = c.num_heads;
  d["d_key"] = c.d_key;
  d["d_value"] = c.d_value;
  d["d_ff"] = c.d_ff;
  d["activation"] = tarn::Name(c.activation);
  d["norm_placement"] = tarn::Name(c.norm_placement);
  d["norm_eps"] = c.norm_eps;
  d["causal"] = c.causal;
  d["feature_map"] = tarn::Name(c.feature_map);
  d["feature_dim"] = c.feature_dim;
  d["attention_eps"] = c.attention_eps;
  d["favor_softmax_temp"] = c.favor_softmax_temp;
  d["favor_stabilize"] = c.favor_stabilize;
  d["conv_kernel"] = c.conv_kernel;
  d["final_norm"] = c.final_norm;
  d["output_dim"] = c.output_dim;
  d["labels"] = c.labels;
  d["position_concat_dim"] = c.position_concat_dim;
  d["output_distribution"] = tarn::Name(c.output_distribution);
  d["output_levels"] = c.output_levels;
  return d;
}

// A speech model's feature recipe (its AudioFrontEnd table), or None for a
// model that takes no audio.
nb::object AudioDict(const tarn::Model& model) {
  tarn::AudioFrontEndConfig a;
  if (!model.audio_front_end(&a).ok()) return nb::none();
  nb::dict d;
  d["sample_rate"] = a.sample_rate;
  d["window_length"] = a.window_length;
  d["hop_length"] = a.hop_length;
  d["fft_size"] = a.fft_size;
  d["num_mel_bins"] = a.num_mel_bins;
  d["low_frequency"] = a.low_frequency;
  d["high_frequency"] = a.high_frequency;
  d["preemphasis"] = a.preemphasis;
  d["remove_dc_offset"] = a.remove_dc_offset;
  d["window"] = tarn::Name(a.window);
  d["log_floor"] = a.log_floor;
  d["feature_mean"] = a.feature_mean;
  d["feature_std"] = a.feature_std;
  d["warp"] = a.warp;
  return d;
}

// A loaded model, shared by the sessions, batches and recognizers made from
// it: closing it drops this handle, and the model is unmapped when the last
// of them is gone.
class PyModel {
 public:
  // int8: "exact" or "dot" (tarn::Int8Compute::kExact, kIntegerDot).
  // path: the file system's bytes (os.fsencode), any name open() takes.
  PyModel(nb::bytes path_bytes, const std::string& int8, bool verify_checksum) {
    const std::string path(path_bytes.c_str(), path_bytes.size());
    tarn::LoadOptions options;
    options.verify_checksum = verify_checksum;
    if (int8 == "dot") {
      options.int8_compute = tarn::Int8Compute::kIntegerDot;
    } else if (int8 != "exact") {
      Fail(tarn::StatusCode::kInvalidArgument,
           "int8 is '" + int8 + "': expected 'exact' or 'dot'");
    }
    std::unique_ptr<tarn::Model> model;
    tarn::Status status;
    {
      GilReleased released;
      status = tarn::Model::Load(path, &model, options);
    }
    Check(status);
    model_ = std::move(model);
    path_ = path;
  }

  std::shared_ptr<const tarn::Model> Get() const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!model_) {
      Fail(tarn::StatusCode::kInvalidArgument,
           "the model " + path_ + " is closed");
    }
    return model_;
  }
  void Close() {
    std::lock_guard<std::mutex> lock(mutex_);
    model_.reset();
  }
  bool closed() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return !model_;
  }
  const std::string& path() const { return path_; }

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const tarn::Model> model_;
  std::string path_;
};

// Holds an object's lock for one call: two threads using one session,
// batch or recognizer at once get an error instead of a data race.
class Exclusive {
 public:
  Exclusive(std::mutex& busy, const char* what)
      : lock_(busy, std::try_to_lock) {
    if (!lock_.owns_lock()) {
      Fail(tarn::StatusCode::kInvalidArgument,
           std::string("the ") + what +
               " is in use by another thread; it is used by one thread at a "
               "time (give each thread its own)");
    }
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

// One call of a native object: its lock held, the GIL released while it
// runs, a failure raised as the matching Python error.
template <typename Call>
void Run(std::mutex& busy, const char* what, Call&& call) {
  Exclusive use(busy, what);
  tarn::Status status;
  {
    GilReleased released;
    status = call();
  }
  Check(status);
}

// A session, its model kept alive, and its lock.
class PySession {
 public:
  PySession(std::shared_ptr<const tarn::Model> model,
            std::unique_ptr<tarn::Session> session)
      : model_(std::move(model)), session_(std::move(session)) {}

  PySession(const PyModel& model, int num_threads, uint32_t max_prefill_chunk)
      : model_(model.Get()) {
    tarn::SessionOptions options;
    options.num_threads = num_threads;
    options.max_prefill_chunk = max_prefill_chunk;
    Check(tarn::Session::Create(*model_, options, &session_));
  }

  void StepToken(int32_t token, Array<float> out) {
    Run(busy_, "session",
        [&] { return session_->StepToken(token, out.data(), out.size()); });
  }

  bool StepFrame(Array<const float> frame, Array<float> out) {
    Exclusive use(busy_, "session");
    tarn::Status status;
    bool stepped = false;
    {
      GilReleased released;
      status = session_->StepFrame(frame.data(), frame.size(), out.data(),
                                   out.size(), &stepped);
    }
    Check(status);
    return stepped;
  }

  void PrefillTokens(Array<const int32_t> tokens, nb::object out) {
    Exclusive use(busy_, "session");
    float* outputs = nullptr;
    size_t outputs_size = 0;
    Array<float> out_array;
    if (!out.is_none()) {
      out_array = nb::cast<Array<float>>(out);
      outputs = out_array.data();
      outputs_size = out_array.size();
    }
    tarn::Status status;
    {
      GilReleased released;
      status = session_->PrefillTokens(tokens.data(), tokens.size(), outputs,
                                       outputs_size);
    }
    Check(status);
  }

  size_t PrefillFrames(Array<const float> frames, size_t frame_count,
                       nb::object out) {
    Exclusive use(busy_, "session");
    CheckFrameCount(frames, frame_count);
    float* outputs = nullptr;
    size_t outputs_size = 0;
    Array<float> out_array;
    if (!out.is_none()) {
      out_array = nb::cast<Array<float>>(out);
      outputs = out_array.data();
      outputs_size = out_array.size();
    }
    tarn::Status status;
    size_t steps = 0;
    {
      GilReleased released;
      status = session_->PrefillFrames(frames.data(), frame_count, outputs,
                                       outputs_size, &steps);
    }
    Check(status);
    return steps;
  }

  // Getters take the lock too: they read what a call on another thread,
  // the GIL released, may be writing.
  size_t StepsForFrames(size_t frame_count) const {
    Exclusive use(busy_, "session");
    return session_->StepsForFrames(frame_count);
  }

  void EncodeTokens(Array<const int32_t> tokens, Array<float> out) {
    Run(busy_, "session", [&] {
      return session_->EncodeTokens(tokens.data(), tokens.size(), out.data(),
                                    out.size());
    });
  }

  size_t EncodeFrames(Array<const float> frames, size_t frame_count,
                      Array<float> out) {
    Exclusive use(busy_, "session");
    CheckFrameCount(frames, frame_count);
    tarn::Status status;
    size_t steps = 0;
    {
      GilReleased released;
      status = session_->EncodeFrames(frames.data(), frame_count, out.data(),
                                      out.size(), &steps);
    }
    Check(status);
    return steps;
  }

  // These copy the whole state (megabytes for a large model): the GIL is
  // released while they do.
  void Reset() {
    Run(busy_, "session", [&] {
      session_->Reset();
      return tarn::Status::Ok();
    });
  }

  // Written straight into a new bytes object, which no other thread can
  // see until it is returned.
  nb::bytes Snapshot() {
    Exclusive use(busy_, "session");
    const size_t size = model_->snapshot_bytes();
    PyObject* bytes = PyBytes_FromStringAndSize(nullptr, size);
    if (bytes == nullptr) throw nb::python_error();
    nb::bytes owned = nb::steal<nb::bytes>(bytes);
    char* data = PyBytes_AS_STRING(bytes);
    tarn::Status status;
    {
      GilReleased released;
      status = session_->Snapshot(data, size);
    }
    Check(status);
    return owned;
  }

  // Bytes are immutable: read without the GIL (their address and size
  // taken with it), and without a copy.
  void Restore(nb::bytes snapshot) {
    const char* data = snapshot.c_str();
    const size_t size = snapshot.size();
    Run(busy_, "session", [&] { return session_->Restore(data, size); });
  }

  PySession* Clone() {
    std::unique_ptr<tarn::Session> clone;
    Run(busy_, "session", [&] { return session_->Clone(&clone); });
    return new PySession(model_, std::move(clone));
  }

  // Copies of one layer's S [heads][C][d_value] and z [heads][C].
  nb::tuple AttentionState(uint32_t layer) {
    Exclusive use(busy_, "session");
    const float* S = nullptr;
    const float* z = nullptr;
    Check(session_->AttentionState(layer, &S, &z));
    const tarn::ModelConfig& c = model_->config();
    const size_t heads = c.num_heads, C = c.feature_dim, dv = c.d_value;
    auto copy = [](const float* data, std::vector<size_t> shape) {
      size_t n = 1;
      for (size_t s : shape) n *= s;
      float* owned = new float[n];
      std::copy(data, data + n, owned);
      nb::capsule owner(
          owned, [](void* p) noexcept { delete[] static_cast<float*>(p); });
      return nb::ndarray<nb::numpy, float>(owned, shape.size(), shape.data(),
                                           owner);
    };
    return nb::make_tuple(copy(S, {heads, C, dv}), copy(z, {heads, C}));
  }

  uint64_t position() const {
    Exclusive use(busy_, "session");
    return session_->position();
  }
  tarn::Session* get() { return session_.get(); }
  std::mutex& busy() { return busy_; }

 private:
  // The runtime reads frame_count frames from the array: a count it does not
  // hold (from a caller of this module's own; python/tarn passes
  // len(frames)) is refused before the runtime reads past its end. Token
  // models are the runtime's to refuse.
  void CheckFrameCount(const Array<const float>& frames,
                       size_t frame_count) const {
    const size_t frame = model_->frame_size();
    if (frame != 0 &&
        (frames.size() % frame != 0 || frames.size() / frame != frame_count)) {
      Fail(tarn::StatusCode::kInvalidArgument,
           "frames: the array holds " + std::to_string(frames.size()) +
               " floats, not frame_count " + std::to_string(frame_count) +
               " x frame_size " + std::to_string(frame));
    }
  }

  std::shared_ptr<const tarn::Model> model_;
  std::unique_ptr<tarn::Session> session_;
  mutable std::mutex busy_;
};

class PyBatch {
 public:
  PyBatch(const PyModel& model, uint32_t max_streams, int num_threads)
      : model_(model.Get()) {
    tarn::BatchOptions options;
    options.max_streams = max_streams;
    options.num_threads = num_threads;
    Check(tarn::SessionBatch::Create(*model_, options, &batch_));
  }

  void StepTokens(std::vector<PySession*> sessions, Array<const int32_t> tokens,
                  Array<float> out) {
    Exclusive use(busy_, "session batch");
    if (tokens.size() != sessions.size()) {
      Fail(tarn::StatusCode::kInvalidArgument,
           "StepTokens: " + std::to_string(sessions.size()) + " sessions but " +
               std::to_string(tokens.size()) + " tokens");
    }
    Locks locks(sessions);
    std::vector<tarn::Session*> raw = Raw(sessions);
    tarn::Status status;
    {
      GilReleased released;
      status = batch_->StepTokens(raw.data(), tokens.data(), raw.size(),
                                  out.data(), out.size());
    }
    Check(status);
  }

  std::vector<bool> StepFrames(std::vector<PySession*> sessions,
                               Array<const float> frames, Array<float> out) {
    Exclusive use(busy_, "session batch");
    const size_t frame = model_->frame_size();
    if (frames.size() != sessions.size() * frame) {
      Fail(tarn::StatusCode::kInvalidArgument,
           "StepFrames: " + std::to_string(sessions.size()) +
               " sessions need " + std::to_string(sessions.size()) + " x " +
               std::to_string(frame) + " floats of frames, not " +
               std::to_string(frames.size()));
    }
    Locks locks(sessions);
    std::vector<tarn::Session*> raw = Raw(sessions);
    std::unique_ptr<bool[]> stepped(new bool[raw.size() + 1]());
    tarn::Status status;
    {
      GilReleased released;
      status = batch_->StepFrames(raw.data(), frames.data(), raw.size(),
                                  out.data(), out.size(), stepped.get());
    }
    Check(status);
    return std::vector<bool>(stepped.get(), stepped.get() + raw.size());
  }

  size_t max_streams() const { return batch_->max_streams(); }

 private:
  // Holds every distinct session's lock for one batch call.
  class Locks {
   public:
    explicit Locks(const std::vector<PySession*>& sessions) {
      for (PySession* s : sessions) {
        if (s == nullptr)
          Fail(tarn::StatusCode::kInvalidArgument, "a session is None");
        bool seen = false;
        for (const auto& held : held_) seen |= held.mutex() == &s->busy();
        if (seen) continue;  // the runtime names the duplicate
        std::unique_lock<std::mutex> lock(s->busy(), std::try_to_lock);
        if (!lock.owns_lock()) {
          Fail(tarn::StatusCode::kInvalidArgument,
               "a session of the batch is in use by another thread");
        }
        held_.push_back(std::move(lock));
      }
    }

   private:
    std::vector<std::unique_lock<std::mutex>> held_;
  };

  static std::vector<tarn::Session*> Raw(
      const std::vector<PySession*>& sessions) {
    std::vector<tarn::Session*> raw;
    raw.reserve(sessions.size());
    for (PySession* s : sessions) raw.push_back(s->get());
    return raw;
  }

  std::shared_ptr<const tarn::Model> model_;
  std::unique_ptr<tarn::SessionBatch> batch_;
  // Its scratch is shared by every call: one thread at a time.
  mutable std::mutex busy_;
};

nb::dict ResultDict(const tarn::RecognitionResult& r) {
  nb::list words;
  for (const tarn::RecognizedWord& w : r.words) {
    words.append(nb::make_tuple(w.word, w.start, w.end));
  }
  nb::dict d;
  d["text"] = r.text;
  d["words"] = words;
  d["start"] = r.start;
  d["end"] = r.end;
  return d;
}

class PyRecognizer {
 public:
  PyRecognizer(const PyModel& model, uint32_t beam_width,
               std::vector<std::string> words, uint32_t endpoint_silence_ms,
               uint32_t max_utterance_ms, uint32_t reset_after_silence_ms,
               int num_threads, float beam_prune,
               std::vector<std::pair<std::string, float>> hotwords,
               float hotword_boost, uint32_t final_silence_ms, float warp)
      : model_(model.Get()) {
    tarn::RecognizerOptions options;
    options.beam_width = beam_width;
    options.words = std::move(words);
    options.endpoint_silence_ms = endpoint_silence_ms;
    options.max_utterance_ms = max_utterance_ms;
    options.reset_after_silence_ms = reset_after_silence_ms;
    options.num_threads = num_threads;
    options.beam_prune = beam_prune;
    for (auto& [phrase, boost] : hotwords) {
      options.hotwords.push_back({std::move(phrase), boost});
    }
    options.hotword_boost = hotword_boost;
    options.final_silence_ms = final_silence_ms;
    options.warp = warp;
    Run(busy_, "recognizer", [&] {
      return tarn::Recognizer::Create(*model_, options, &recognizer_);
    });
  }

  // float or int16_t samples.
  template <typename T>
  void Accept(Array<const T> samples) {
    Run(busy_, "recognizer", [&] {
      return recognizer_->AcceptWaveform(samples.data(), samples.size());
    });
  }

  nb::object PopResult() {
    Exclusive use(busy_, "recognizer");
    tarn::RecognitionResult result;
    if (!recognizer_->PopResult(&result)) return nb::none();
    return ResultDict(result);
  }

  nb::dict PartialResult() {
    Exclusive use(busy_, "recognizer");
    return ResultDict(recognizer_->PartialResult());
  }

  nb::dict FinalResult() {
    Exclusive use(busy_, "recognizer");
    const tarn::RecognitionResult* result = nullptr;
    {
      GilReleased released;
      result = &recognizer_->FinalResult();
    }
    return ResultDict(*result);
  }

  void Reset() {
    Exclusive use(busy_, "recognizer");
    recognizer_->Reset();
  }

  void SetWarp(float warp) {
    Exclusive use(busy_, "recognizer");
    Check(recognizer_->SetWarp(warp));
  }

  nb::dict Stats() const {
    tarn::RecognizerStats s;
    {
      Exclusive use(busy_, "recognizer");
      s = recognizer_->stats();
    }
    nb::dict d;
    d["samples"] = s.samples;
    d["steps"] = s.steps;
    d["utterances"] = s.utterances;
    d["audio_seconds"] = s.audio_seconds;
    d["processing_seconds"] = s.processing_seconds;
    d["step_mean_us"] = s.step_mean_us;
    d["step_p99_us"] = s.step_p99_us;
    d["step_p50_us"] = s.step_p50_us;
    d["step_max_us"] = s.step_max_us;
    return d;
  }

  size_t queued_results() const {
    Exclusive use(busy_, "recognizer");
    return recognizer_->queued_results();
  }
  uint32_t sample_rate() const { return recognizer_->sample_rate(); }
  double step_seconds() const { return recognizer_->step_seconds(); }

 private:
  std::shared_ptr<const tarn::Model> model_;
  std::unique_ptr<tarn::Recognizer> recognizer_;
  mutable std::mutex busy_;
};

}  // namespace

// tarn::WarpEstimator; estimate() gives (warp, candidates, scores).
class PyWarpEstimator {
 public:
  PyWarpEstimator(const PyModel& model, std::vector<float> candidates)
      : model_(model.Get()) {
    Run(busy_, "warp estimator", [&] {
      return tarn::WarpEstimator::Create(*model_, candidates, &estimator_);
    });
  }

  // float or int16_t samples.
  template <typename T>
  void Accept(Array<const T> samples) {
    Run(busy_, "warp estimator", [&] {
      return estimator_->AcceptWaveform(samples.data(), samples.size());
    });
  }

  void EndUtterance() {
    Run(busy_, "warp estimator", [&] { return estimator_->EndUtterance(); });
  }

  std::tuple<float, std::vector<float>, std::vector<double>> Estimate() {
    tarn::WarpEstimate estimate;
    Run(busy_, "warp estimator",
        [&] { return estimator_->Estimate(&estimate); });
    return {estimate.warp, estimate.candidates, estimate.scores};
  }

 private:
  std::shared_ptr<const tarn::Model> model_;
  std::unique_ptr<tarn::WarpEstimator> estimator_;
  mutable std::mutex busy_;
};

NB_MODULE(_tarn, m) {
  m.doc() = "tarn's C++ runtime; use the package `tarn`, not this module.";

  // Threads still inside calls at exit keep their objects: no leak of the
  // binding's for nanobind's exit handler to report. It was registered
  // when this module's nanobind state was made, and exit handlers run last
  // registered first: this runs before it.
  main_thread_ident = nb::cast<unsigned long>(
      nb::module_::import_("threading").attr("main_thread")().attr("ident"));
  Py_AtExit([] {
    if (threads_in_calls > 0) nb::set_leak_warnings(false);
  });

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const StatusError& e) {
      nb::object cls = ErrorClass(e.status.code());
      // Messages quote file names as the file system's bytes, which need
      // not be UTF-8: PyErr_SetString would raise with no message at all.
      const std::string& message = e.status.message();
      nb::object text = nb::steal(PyUnicode_DecodeUTF8(
          message.data(), static_cast<Py_ssize_t>(message.size()),
          "backslashreplace"));
      if (text) PyErr_SetObject(cls.ptr(), text.ptr());  // else MemoryError
    }
  });

  nb::class_<PyModel>(m, "Model")
      .def(nb::init<nb::bytes, const std::string&, bool>(), "path"_a, "int8"_a,
           "verify_checksum"_a)
      .def("close", &PyModel::Close)
      .def_prop_ro("closed", &PyModel::closed)
      .def_prop_ro("path", &PyModel::path)
      .def("config",
           [](const PyModel& m) { return ConfigDict(m.Get()->config()); })
      .def("audio", [](const PyModel& m) { return AudioDict(*m.Get()); })
      .def("output_size",
           [](const PyModel& m) { return m.Get()->output_size(); })
      .def("frame_size", [](const PyModel& m) { return m.Get()->frame_size(); })
      .def("parameter_count",
           [](const PyModel& m) { return m.Get()->parameter_count(); })
      .def("weight_bytes",
           [](const PyModel& m) { return m.Get()->weight_bytes(); })
      .def("weight_bytes_by_dtype",
           [](const PyModel& m) {
             nb::dict bytes;
             for (tarn::DType dtype : tarn::kDTypes) {
               const size_t n = m.Get()->weight_bytes(dtype);
               if (n > 0) bytes[tarn::Name(dtype)] = n;
             }
             return bytes;
           })
      .def(
          "session_bytes",
          [](const PyModel& m, uint32_t max_prefill_chunk) {
            tarn::SessionOptions options;
            options.max_prefill_chunk = max_prefill_chunk;
            return m.Get()->session_bytes(options);
          },
          "max_prefill_chunk"_a)
      .def("snapshot_bytes",
           [](const PyModel& m) { return m.Get()->snapshot_bytes(); })
      .def("identity", [](const PyModel& m) { return m.Get()->identity(); })
      .def("schema_version",
           [](const PyModel& m) {
             const tarn::SchemaVersion v = m.Get()->schema_version();
             return nb::make_tuple(v.major, v.minor);
           })
      .def("metadata", [](const PyModel& m) {
        nb::dict d;
        for (const auto& [key, value] : m.Get()->metadata())
          d[key.c_str()] = value;
        return d;
      });

  nb::class_<PySession>(m, "Session")
      .def(nb::init<const PyModel&, int, uint32_t>(), "model"_a,
           "num_threads"_a, "max_prefill_chunk"_a)
      .def("step_token", &PySession::StepToken, "token"_a, "out"_a)
      .def("step_frame", &PySession::StepFrame, "frame"_a, "out"_a)
      .def("prefill_tokens", &PySession::PrefillTokens, "tokens"_a,
           "out"_a.none())
      .def("prefill_frames", &PySession::PrefillFrames, "frames"_a,
           "frame_count"_a, "out"_a.none())
      .def("steps_for_frames", &PySession::StepsForFrames, "frame_count"_a)
      .def("encode_tokens", &PySession::EncodeTokens, "tokens"_a, "out"_a)
      .def("encode_frames", &PySession::EncodeFrames, "frames"_a,
           "frame_count"_a, "out"_a)
      .def("reset", &PySession::Reset)
      .def("snapshot", &PySession::Snapshot)
      .def("restore", &PySession::Restore, "snapshot"_a)
      .def("clone", &PySession::Clone, nb::rv_policy::take_ownership)
      .def("attention_state", &PySession::AttentionState, "layer"_a)
      .def_prop_ro("position", &PySession::position);

  nb::class_<PyBatch>(m, "SessionBatch")
      .def(nb::init<const PyModel&, uint32_t, int>(), "model"_a,
           "max_streams"_a, "num_threads"_a)
      .def("step_tokens", &PyBatch::StepTokens, "sessions"_a, "tokens"_a,
           "out"_a)
      .def("step_frames", &PyBatch::StepFrames, "sessions"_a, "frames"_a,
           "out"_a)
      .def_prop_ro("max_streams", &PyBatch::max_streams);

  m.attr("DEFAULT_HOTWORD_BOOST") = tarn::kDefaultHotwordBoost;
  m.def("default_warp_candidates", &tarn::DefaultWarpCandidates);
  nb::class_<PyWarpEstimator>(m, "WarpEstimator")
      .def(nb::init<const PyModel&, std::vector<float>>(), "model"_a,
           "candidates"_a)
      .def("accept_float", &PyWarpEstimator::Accept<float>, "samples"_a)
      .def("accept_int16", &PyWarpEstimator::Accept<int16_t>, "samples"_a)
      .def("end_utterance", &PyWarpEstimator::EndUtterance)
      .def("estimate", &PyWarpEstimator::Estimate);
  nb::class_<PyRecognizer>(m, "Recognizer")
      .def(nb::init<const PyModel&, uint32_t, std::vector<std::string>,
                    uint32_t, uint32_t, uint32_t, int, float,
                    std::vector<std::pair<std::string, float>>, float, uint32_t,
                    float>(),
           "model"_a, "beam_width"_a, "words"_a, "endpoint_silence_ms"_a,
           "max_utterance_ms"_a, "reset_after_silence_ms"_a, "num_threads"_a,
           "beam_prune"_a, "hotwords"_a, "hotword_boost"_a,
           "final_silence_ms"_a, "warp"_a)
      .def("accept_float", &PyRecognizer::Accept<float>, "samples"_a)
      .def("accept_int16", &PyRecognizer::Accept<int16_t>, "samples"_a)
      .def("pop_result", &PyRecognizer::PopResult)
      .def("partial_result", &PyRecognizer::PartialResult)
      .def("final_result", &PyRecognizer::FinalResult)
      .def("reset", &PyRecognizer::Reset)
      .def("set_warp", &PyRecognizer::SetWarp, "warp"_a)
      .def("stats", &PyRecognizer::Stats)
      .def_prop_ro("queued_results", &PyRecognizer::queued_results)
      .def_prop_ro("sample_rate", &PyRecognizer::sample_rate)
      .def_prop_ro("step_seconds", &PyRecognizer::step_seconds);
}
