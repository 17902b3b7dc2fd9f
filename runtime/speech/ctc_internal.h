// What the CTC decoders share: the label set, the word trie, log-softmax,
// and turning a label sequence into words.

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

// A trie over the spellings of a word list, in label ids, stored as sorted
// edge lists. Node 0 is the root (the start of a word).
class WordTrie {
 public:
  // Fails naming the first word the labels cannot spell.
  Status Build(const LabelSet& set, const std::vector<std::string>& words);
  // The child of `node` along `label`, or -1.
  int32_t Child(int32_t node, int32_t label) const;
  bool IsWord(int32_t node) const { return is_word_[node] != 0; }
  size_t size() const { return is_word_.size(); }
  size_t word_count() const { return word_count_; }

 private:
  std::vector<uint32_t> edge_begin_;  // [nodes + 1]
  std::vector<int32_t> edge_label_;   // [edges], sorted within a node
  std::vector<int32_t> edge_child_;   // [edges]
  std::vector<uint8_t> is_word_;      // [nodes]
  size_t word_count_ = 0;
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
std::unique_ptr<CtcDecoder> MakeBeamDecoder(LabelSet set,
                                            std::unique_ptr<WordTrie> trie,
                                            const CtcDecoderOptions& options);

}  // namespace tarn::ctc

#endif  // TARN_RUNTIME_DECODE_CTC_INTERNAL_H_
