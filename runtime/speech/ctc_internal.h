// What the CTC decoders share: the label set, the word trie, the hotwords'
// automaton, log-softmax, and turning a label sequence into words.

#ifndef TARN_RUNTIME_DECODE_CTC_INTERNAL_H_
#define TARN_RUNTIME_DECODE_CTC_INTERNAL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tarn/ctc.hpp"

namespace tarn::ctc {

struct LabelSet {
  std::vector<std::string> labels;
  int blank = 0;
  int separator = -1;  // -1: none
};

Status MakeLabelSet(const std::vector<std::string>& labels, LabelSet* set);

// Label sequences one after another: sequence i is
// labels[begin[i], begin[i + 1]).
struct Spellings {
  std::vector<int32_t> labels;
  std::vector<size_t> begin{0};
  void Add(const std::vector<int32_t>& spelling) {
    labels.insert(labels.end(), spelling.begin(), spelling.end());
    begin.push_back(labels.size());
  }
  size_t size() const { return begin.size() - 1; }
};

// A prefix tree's edges, as one sorted list per node: a few bytes an edge,
// however many labels there are.
class EdgeLists {
 public:
  // The prefix tree of `spellings`, node 0 its root, built from the
  // sequences sorted (no per-node map: 12 bytes an edge while it builds).
  // Returns, for each label of spellings.labels, the node it leads to.
  std::vector<int32_t> Build(const Spellings& spellings);
  size_t nodes() const { return begin_.size() - 1; }
  // The child of `node` along `label`, or -1.
  int32_t Child(int32_t node, int32_t label) const;
  // Edges [begin(node), begin(node + 1)): their labels and children.
  uint32_t begin(int32_t node) const { return begin_[node]; }
  int32_t label(uint32_t edge) const { return label_[edge]; }
  int32_t child(uint32_t edge) const { return child_[edge]; }

 private:
  std::vector<uint32_t> begin_;  // [nodes + 1]
  std::vector<int32_t> label_;   // [edges], sorted within a node
  std::vector<int32_t> child_;   // [edges]
};

// A trie over the spellings of a word list, in label ids. Node 0 is the
// root (the start of a word).
class WordTrie {
 public:
  // Fails naming the first word the labels cannot spell.
  Status Build(const LabelSet& set, const std::vector<std::string>& words);
  // Whether labels [begin, end()) of `spelled` are a word of the list.
  bool Spells(const std::vector<int32_t>& spelled, size_t begin) const {
    int32_t node = 0;
    for (size_t k = begin; k < spelled.size() && node >= 0; ++k) {
      node = Child(node, spelled[k]);
    }
    return node >= 0 && IsWord(node);
  }
  // The child of `node` along `label`, or -1.
  int32_t Child(int32_t node, int32_t label) const {
    return edges_.Child(node, label);
  }
  bool IsWord(int32_t node) const { return is_word_[node] != 0; }
  size_t size() const { return is_word_.size(); }
  size_t word_count() const { return word_count_; }

 private:
  EdgeLists edges_;
  std::vector<uint8_t> is_word_;  // [nodes]
  size_t word_count_ = 0;
};

// The hotwords' Aho-Corasick automaton (tarn/ctc.hpp, Hotwords): the
// phrases' prefix tree and each state's failure state (its longest proper
// suffix that is a state and does not begin inside a phrase its path
// credits), so its memory grows with the phrases' labels, not with the
// label set. A hypothesis's bonus is the sum of the gains of the transitions
// its labels took. A state's path alone decides what its credited phrases
// keep and what its match holds at risk, because a failure never cuts a
// credited phrase; Gain() of a transition is what the new state's phrases
// kept beyond its parent's, plus what it holds, minus what the old state
// held: a failed match gives its bonus back exactly, and a credited phrase
// keeps it.
class ContextGraph {
 public:
  // Fails naming the first phrase (and its index) that is empty or that the
  // labels cannot spell, or a boost that is negative or not finite.
  // With `words`, also fails naming the first hotword with a word the list
  // lacks (the beam could never emit it).
  Status Build(const LabelSet& set, const std::vector<CtcHotword>& hotwords,
               float default_boost, const WordTrie* words = nullptr);
  // The state of the empty prefix: just after a (virtual) separator.
  int32_t start() const { return start_; }
  // The state after `label` (not the blank) from `state`: its child along
  // the label, else its failure state's, and so on up to the root.
  int32_t Next(int32_t state, int32_t label) const {
    for (;;) {
      const int32_t child = edges_.Child(state, label);
      if (child >= 0) return child;
      if (state == 0) return 0;
      state = fail_[state];
    }
  }
  // The change of the bonus along state -> Next(state, label).
  double Gain(int32_t state, int32_t next) const {
    return reached_[next] - at_risk_[state];
  }
  // The change of the bonus when the utterance ends in `state`, as if with
  // a separator: a phrase that lacks only that completes, anything still
  // at risk after it is given back.
  double EndGain(int32_t state) const {
    const int32_t closed = Next(state, separator_);
    return Gain(state, closed) - at_risk_[closed];
  }
  size_t size() const { return at_risk_.size(); }

 private:
  int32_t start_ = 0;
  int32_t separator_ = 0;
  EdgeLists edges_;
  std::vector<int32_t> fail_;  // [states]
  // [states]: what the phrases the state credits keep beyond those its
  // parent credits, plus at_risk_.
  std::vector<double> reached_;
  // [states]: the bonus its match holds at risk.
  std::vector<double> at_risk_;
};

// out[i] = x[i] - logsumexp(x), in double; returns max_i out[i].
double LogSoftmax(const float* x, size_t n, double* out);

// log(exp(a) + exp(b)), exact at -inf.
double LogAdd(double a, double b);

// Fills `out` from labels[0..n) emitted at steps[0..n): words split at the
// separator, empty words skipped, text joined by single spaces. Reuses the
// capacity of out's strings and vector.
void Assemble(const LabelSet& set, const int32_t* labels, const uint64_t* steps,
              size_t n, double log_score, CtcHypothesis* out);

std::unique_ptr<CtcDecoder> MakeGreedyDecoder(LabelSet set,
                                              const CtcDecoderOptions& options);
// The memory a beam decoder of these options over `vocab` labels holds.
size_t BeamDecoderBytes(const CtcDecoderOptions& options, size_t vocab);
// `context` null: no hotwords.
std::unique_ptr<CtcDecoder> MakeBeamDecoder(
    LabelSet set, std::unique_ptr<WordTrie> trie,
    std::unique_ptr<ContextGraph> context, const CtcDecoderOptions& options);

}  // namespace tarn::ctc

#endif  // TARN_RUNTIME_DECODE_CTC_INTERNAL_H_
