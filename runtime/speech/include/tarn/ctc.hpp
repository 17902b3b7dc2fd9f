// tarn/ctc.hpp: streaming CTC decoders over a model's per-step scores.
//
// A worked example: greedy decoding of a CTC speech model's steps.
//
//   tarn::CtcDecoderOptions options;           // beam_width 0: greedy
//   std::unique_ptr<tarn::CtcDecoder> decoder;
//   tarn::Status status =
//       tarn::CtcDecoder::Create(model->config().labels, options, &decoder);
//   if (!status.ok()) { ... }
//   ... each time the session steps:
//   status = decoder->Step(logits.data(), logits.size());
//   tarn::CtcHypothesis partial;
//   decoder->Result(/*final=*/false, &partial);   // at any time
//   ... at the end of the utterance:
//   decoder->Result(/*final=*/true, &result);
//   decoder->Reset();                             // next utterance
//
// Labels. `labels` are the model's output labels, one per output. The CTC
// blank is the label "<blank>" (index 0 when no label has that name); the
// label " " (if any) separates words; every other label is text, appended
// verbatim. Words are the runs of text labels between separators.
//
// Decoders. Greedy (beam_width 0 or 1): the best label of each step,
// repeats collapsed, blanks dropped. Prefix beam search (beam_width >= 2):
// CTC prefix beam search in the log domain (Hannun et al. 2014, without a
// language model), keeping the beam_width most probable label prefixes;
// a separator is never the first label of a prefix nor follows another
// separator. With a word list, prefixes are constrained to words of the list
// (a trie over their spellings in the model's labels): a text label may only
// extend a prefix of a listed word, a separator may only end a listed word;
// the final result keeps complete words only, like Vosk's grammars.
//
// Hotwords (soft biasing, beam search only). Phrases of one or more words
// are favoured without forbidding anything else, through an Aho-Corasick
// automaton (a prefix tree with failure links) over their spellings, each
// phrase spelled as separator, words joined by separators, separator: so a
// phrase only matches from the start of a word and is complete only when the
// separator after its last word is emitted. A prefix's state in the
// automaton is a function of its labels (the empty prefix starts after a
// virtual separator), so prefixes that merge share it. The bonus:
//   - A complete phrase is credited where it ends, unless it begins inside
//     (at an inner separator of) a phrase credited before it ended: then
//     its words have earned already. Each label of a credited phrase but
//     its leading separator keeps, for good, the largest boost (nats per
//     label) of the credited phrases over it, once, however many are.
//   - The match is the prefix's longest suffix that begins some phrase and
//     does not begin inside a credited one. Its labels that no credited
//     phrase covers are held at risk, each earning the largest boost of the
//     phrases that begin with the match up to that label; when the match
//     fails, what it held is given back.
// So a phrase inside a longer one's partial match keeps its bonus when the
// longer one fails, and no label earns twice. The bonus enters the beam's
// ranking and pruning only: a hypothesis's reported log_score stays its
// probability without the bonus. The final result is ranked as if a
// separator followed the last label: a phrase that lacks only its closing
// separator is complete, and an unfinished match gives its bonus back.
//
// Times. Steps are counted from creation or Reset(); a word's first and
// last steps are those at which its first and last labels were emitted (for
// the beam search: the latest step at which emitting that label carried
// more probability into the prefix than the prefix already had, i.e. where
// its most probable alignments emit it).
//
// Memory. Everything is allocated by Create(): beam_width hypotheses of at
// most max_labels labels, a prefix tree of fixed capacity that is compacted
// in place when full, the word trie. Step() never allocates; a prefix that
// reaches max_labels stops growing. Result() writes into the caller's
// hypothesis, reusing its strings' capacity. A decoder is used by one thread
// at a time.

#ifndef TARN_CTC_HPP_
#define TARN_CTC_HPP_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tarn/tarn.hpp"

namespace tarn {

inline constexpr uint32_t kMaxCtcBeamWidth = 256;
// The most memory a decoder may hold, all of it allocated up front: a
// prefix tree of beam width x max_labels nodes (52 bytes each) and beam
// width x labels candidates (about 80 bytes each).
inline constexpr size_t kMaxCtcDecoderBytes = size_t{4} << 30;
// The boost per label of a hotword that names none, in nats.
inline constexpr float kDefaultHotwordBoost = 1.0f;
// The largest boost per label, in nats: far beyond any useful one (a label's
// log-probabilities span a few tens of nats), and far from where the beam
// search's sums would lose the log-probabilities beside the bonus.
inline constexpr float kMaxHotwordBoost = 100.0f;
// The most labels a hotword may spell to, its separators included: a
// hotword is a phrase, and the automaton's build time grows with the cube
// of a phrase's length (a repetitive phrase of 4,800 labels took 14 s).
inline constexpr size_t kMaxHotwordLabels = 256;

struct CtcHotword {
  // Words separated by spaces (runs of white space count as one), spelled
  // with the model's text labels; ASCII letters are lowered when the labels
  // have no capitals.
  std::string phrase;
  // Added to a hypothesis's log-probability per label of the phrase it
  // matches, in nats; 0: CtcDecoderOptions::hotword_boost.
  float boost = 0;
};

struct CtcDecoderOptions {
  // 0 or 1: greedy; 2 .. kMaxCtcBeamWidth: prefix beam search.
  uint32_t beam_width = 0;
  // Beam search only: when not empty, hypotheses are made of these words
  // (each spelled with the model's text labels; ASCII letters are lowered
  // when the labels have no capitals). Duplicates are ignored. A word has
  // one spelling, taking the longest label that matches at each point:
  // with labels that overlap ("th" beside "t" and "h"), its other
  // spellings are not in the list.
  std::vector<std::string> words;
  // The longest hypothesis, in labels; bounds the decoder's memory.
  uint32_t max_labels = 4096;
  // Beam search: at each step, labels whose log-probability is below the
  // step's best by more than this are not tried as extensions.
  float beam_prune = 20.0f;
  // Beam search only: phrases to favour (see Hotwords above); with or
  // without a word list.
  std::vector<CtcHotword> hotwords;
  // The boost of the hotwords that give none: in (0, kMaxHotwordBoost].
  float hotword_boost = kDefaultHotwordBoost;
};

struct CtcWord {
  std::string text;
  uint64_t first_step = 0;  // step of its first label
  uint64_t last_step = 0;   // step of its last label
};

struct CtcHypothesis {
  std::string text;  // the words joined by single spaces
  std::vector<CtcWord> words;
  // Log-probability: of the best path (greedy), of the prefix (beam; any
  // hotword bonus excluded).
  double log_score = 0;
};

class CtcDecoder {
 public:
  // Fails for fewer than 2 labels, an empty label other than the blank, a
  // beam width above kMaxCtcBeamWidth, a
  // word list or hotwords with greedy decoding or without a separator
  // label, a word or hotword that the labels cannot spell (the message names
  // it and the character), an empty hotword, one longer than
  // kMaxHotwordLabels labels, a hotword with a word that
  // the word list lacks (it could never be emitted), a boost that is
  // negative, not finite or above kMaxHotwordBoost, or a beam search that
  // would need more than kMaxCtcDecoderBytes.
  static Status Create(const std::vector<std::string>& labels,
                       const CtcDecoderOptions& options,
                       std::unique_ptr<CtcDecoder>* decoder);
  virtual ~CtcDecoder() = default;

  // Consumes one step's scores: labels.size() logits (or log-probabilities;
  // a log-softmax is applied). Fails, changing nothing, for a wrong size or
  // a value that is not finite.
  virtual Status Step(const float* logits, size_t size) = 0;

  // The best hypothesis so far. final: as at the end of the utterance (with
  // a word list, only hypotheses that end on a complete word compete, and
  // an unfinished last word is dropped when none does).
  virtual void Result(bool final, CtcHypothesis* hypothesis) const = 0;

  // Back to the state of a new decoder (an utterance starts).
  virtual void Reset() = 0;

  // Steps since creation or Reset().
  virtual uint64_t steps() const = 0;

  // The blank's index, and the separator's (-1 when there is none).
  virtual int blank() const = 0;
  virtual int separator() const = 0;
};

}  // namespace tarn

#endif  // TARN_CTC_HPP_
