// Endpoint detection over a stream of model steps, each speech or not.

#ifndef TARN_RUNTIME_RECOGNIZER_ENDPOINTER_H_
#define TARN_RUNTIME_RECOGNIZER_ENDPOINTER_H_

#include <cstdint>

namespace tarn {

class Endpointer {
 public:
  enum class Event {
    kNone,
    kEndpoint,   // speech, then silence_steps steps without speech
    kMaxLength,  // the utterance reached max_steps
    kIdle,       // idle_steps steps and no speech yet
  };

  // Step counts; 0 disables the rule.
  Endpointer(uint64_t silence_steps, uint64_t max_steps, uint64_t idle_steps)
      : silence_steps_(silence_steps),
        max_steps_(max_steps),
        idle_steps_(idle_steps) {}

  // One step of the utterance in progress. After an event other than kNone
  // the caller ends or restarts the utterance and calls Reset().
  Event Step(bool speech) {
    ++steps_;
    if (speech) {
      speech_seen_ = true;
      trailing_silence_ = 0;
    } else {
      ++trailing_silence_;
    }
    if (speech_seen_ && silence_steps_ > 0 &&
        trailing_silence_ >= silence_steps_) {
      return Event::kEndpoint;
    }
    if (max_steps_ > 0 && steps_ >= max_steps_) {
      return speech_seen_ ? Event::kMaxLength : Event::kIdle;
    }
    if (!speech_seen_ && idle_steps_ > 0 && steps_ >= idle_steps_) {
      return Event::kIdle;
    }
    return Event::kNone;
  }

  void Reset() {
    steps_ = 0;
    trailing_silence_ = 0;
    speech_seen_ = false;
  }

  bool speech_seen() const { return speech_seen_; }
  // Steps since the last one with speech (all of them before any).
  uint64_t trailing_silence() const { return trailing_silence_; }

  // Steps until the one that reaches max_steps (that step included);
  // UINT64_MAX without a length limit.
  uint64_t StepsToMaxLength() const {
    return max_steps_ > 0 ? max_steps_ - steps_ : UINT64_MAX;
  }

 private:
  const uint64_t silence_steps_, max_steps_, idle_steps_;
  uint64_t steps_ = 0;
  uint64_t trailing_silence_ = 0;
  bool speech_seen_ = false;
};

}  // namespace tarn

#endif  // TARN_RUNTIME_RECOGNIZER_ENDPOINTER_H_
