// CTC prefix beam search in the log domain, optionally constrained to a
// word list, in memory fixed at creation.
//
// Hypotheses are label prefixes, nodes of a prefix tree kept in a pool: a
// node is (parent, label, step), so a prefix costs one node more than its
// parent. Each beam entry holds a node and the log-probabilities of the
// prefix's paths ending in blank (pb) and in its last label (pnb). Per step,
// with y the step's log-probabilities and l the prefix's last label:
//   P   stays:          pb'(P)   = lse(pb, pnb) + y[blank]
//                       pnb'(P)  = pnb + y[l]                 (l repeated)
//   P+c, c != blank:    pnb'(P+c) += (c == l ? pb : lse(pb, pnb)) + y[c]
// where += is a log-add, and P+c merges with the beam entry that already
// holds P+c, if any. The beam_width best candidates by lse(pb', pnb')
// survive. The pool is compacted in place (live nodes keep their order, so a
// parent always precedes its children) when it cannot hold a step's new
// nodes; its capacity, 1 + beam_width * (max_labels + 2), always suffices:
// after compaction at most beam_width paths of max_labels nodes and
// beam_width single nodes live, and a step adds at most beam_width nodes.
//
// Times: a node records the step its label was emitted at. When, at a later
// step, fresh emissions of that label (extensions of the parent prefix
// merged into the entry) outweigh all the probability the prefix carried
// in, the most probable alignments emit it now: the entry moves to a copy of
// its node stamped with this step, whose parent is the parent prefix's
// current node (the old node stays, with its time, for its children).
//
// Hotwords: a node also holds its prefix's state in the hotwords' automaton
// and the bonus its labels earned (both functions of the label sequence, so
// merged prefixes agree). Candidates are ranked by lse(pb, pnb) + bonus;
// pb and pnb themselves never include it. Without hotwords the bonus is 0
// and the ranking is lse(pb, pnb) exactly. The final result is chosen as if
// the utterance ended with a separator (see BestEntry).

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "ctc_internal.h"

namespace tarn::ctc {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();
constexpr uint64_t kRootHash = 0x6a09e667f3bcc909ull;

// splitmix64's finaliser over (prefix hash, label): 64-bit identities whose
// collisions, among a beam's few hundred prefixes, are beyond concern.
uint64_t ExtendHash(uint64_t hash, int32_t label) {
  uint64_t z =
      hash + 0x9e3779b97f4a7c15ull * (static_cast<uint64_t>(label) + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

class BeamDecoder final : public CtcDecoder {
 public:
  // The memory these options need, all of it allocated by the constructor.
  static size_t Bytes(const CtcDecoderOptions& options, size_t vocab);

  BeamDecoder(LabelSet set, std::unique_ptr<WordTrie> trie,
              std::unique_ptr<ContextGraph> context,
              const CtcDecoderOptions& options)
      : set_(std::move(set)),
        trie_(std::move(trie)),
        context_(std::move(context)),
        width_(options.beam_width),
        max_labels_(options.max_labels),
        prune_(options.beam_prune),
        vocab_(set_.labels.size()),
        nodes_(1 + size_t{width_} * (max_labels_ + 2)),
        beam_(width_),
        next_beam_(width_),
        candidates_(width_ * vocab_),
        order_(width_ * vocab_),
        extension_(width_ * vocab_),
        remap_(nodes_.size()),
        log_probs_(vocab_),
        path_labels_(max_labels_),
        path_steps_(max_labels_) {
    Reset();
  }

  Status Step(const float* logits, size_t size) override;
  void Result(bool final, CtcHypothesis* hypothesis) const override;

  void Reset() override {
    nodes_[0] =
        Node{-1, -1, 0, 0, 0, kRootHash, context_ ? context_->start() : 0, 0.0};
    node_count_ = 1;
    beam_[0] = Entry{0, 0.0, kNegInf};
    beam_size_ = 1;
    steps_taken_ = 0;
  }

  uint64_t steps() const override { return steps_taken_; }
  int blank() const override { return set_.blank; }
  int separator() const override { return set_.separator; }

 private:
  struct Node {
    int32_t parent;  // -1 for the root (the empty prefix)
    int32_t label;
    int32_t trie;     // word-trie node of the prefix's last word; 0 = root
    uint32_t length;  // labels in the prefix
    uint64_t step;    // the step its label was emitted at (see Times)
    uint64_t hash;    // of the label sequence: a prefix's identity
    int32_t context;  // hotwords' automaton state; 0 without hotwords
    double bonus;     // hotwords' bonus earned by the labels
  };
  struct Entry {
    int32_t node;
    double pb, pnb;
  };
  struct Candidate {
    int32_t entry;    // the beam entry it comes from
    int32_t label;    // -1: that entry's prefix itself; else the extension
    int32_t trie;     // extensions: the new prefix's trie node
    int32_t context;  // the prefix's hotwords state
    double bonus;     // and its bonus
    double pb, pnb;
    double carried;      // beam prefixes: lse(pb, pnb) before merges
    double fresh;        // beam prefixes: merged emissions at this step
    int32_t fresh_from;  // the entry those emissions extend
    double total;        // lse(pb, pnb) + bonus: the rank
  };

  // May prefix `node` be extended by `label`? Sets *trie to the new
  // prefix's trie node.
  bool Allowed(const Node& node, int32_t label, int32_t* trie) const;
  void Compact(size_t selected);
  // The entry to report: the best, or (final, constrained) the best that
  // ends on a complete word; -1 when the beam holds none such.
  int BestEntry(bool final) const;

  const LabelSet set_;
  const std::unique_ptr<WordTrie> trie_;         // null: unconstrained
  const std::unique_ptr<ContextGraph> context_;  // null: no hotwords
  const uint32_t width_;
  const uint32_t max_labels_;
  const double prune_;
  const size_t vocab_;

  std::vector<Node> nodes_;  // [capacity] the prefix tree's pool
  size_t node_count_ = 0;
  std::vector<Entry> beam_;       // [width] best first
  std::vector<Entry> next_beam_;  // [width]
  size_t beam_size_ = 0;
  std::vector<Candidate> candidates_;  // [width * vocab]
  std::vector<int32_t> order_;         // [width * vocab]
  // [width * vocab]: the candidate that holds entry i's prefix extended by
  // label c, or -1.
  std::vector<int32_t> extension_;
  std::vector<int32_t> remap_;  // [capacity] compaction's old -> new index
  std::vector<double> log_probs_;
  mutable std::vector<int32_t> path_labels_;  // [max_labels] for Result()
  mutable std::vector<uint64_t> path_steps_;  // [max_labels]
  uint64_t steps_taken_ = 0;
};

bool BeamDecoder::Allowed(const Node& node, int32_t label,
                          int32_t* trie) const {
  if (node.length >= max_labels_) return false;
  if (label == set_.separator) {
    // Never first, never doubled; with a word list, only after a word.
    if (node.parent < 0 || node.label == set_.separator) return false;
    if (trie_ && !trie_->IsWord(node.trie)) return false;
    *trie = 0;
    return true;
  }
  if (!trie_) {
    *trie = 0;
    return true;
  }
  *trie = trie_->Child(node.trie, label);
  return *trie >= 0;
}

Status BeamDecoder::Step(const float* logits, size_t size) {
  if (logits == nullptr || size != vocab_) {
    return Status(StatusCode::kInvalidArgument,
                  "CTC step: " + std::to_string(logits ? size : 0) +
                      " scores given; the decoder has " +
                      std::to_string(vocab_) + " labels");
  }
  for (size_t i = 0; i < size; ++i) {
    if (!std::isfinite(logits[i])) {
      return Status(StatusCode::kInvalidArgument,
                    "CTC step: score " + std::to_string(i) + " is " +
                        std::to_string(logits[i]));
    }
  }
  const double* y = log_probs_.data();
  const double threshold = LogSoftmax(logits, size, log_probs_.data()) - prune_;
  const int32_t blank = set_.blank;

  // The beam's own prefixes come first: candidate j is entry j.
  size_t count = beam_size_;
  std::fill(extension_.begin(), extension_.begin() + beam_size_ * vocab_, -1);
  for (size_t j = 0; j < beam_size_; ++j) {
    const Entry& e = beam_[j];
    const Node& node = nodes_[e.node];
    Candidate& c = candidates_[j];
    c.entry = static_cast<int32_t>(j);
    c.label = -1;
    c.trie = node.trie;
    c.context = node.context;
    c.bonus = node.bonus;
    c.pb = LogAdd(e.pb, e.pnb) + y[blank];
    c.pnb = node.parent >= 0 ? e.pnb + y[node.label] : kNegInf;
    c.carried = LogAdd(c.pb, c.pnb);
    c.fresh = kNegInf;
    // Entry j holds P+c for the entry i that holds P: note it so that
    // extending i by c merges into j. Prefixes are compared by their label
    // sequence's hash, as one prefix may live in several nodes.
    if (node.parent >= 0) {
      const uint64_t parent_hash = nodes_[node.parent].hash;
      for (size_t i = 0; i < beam_size_; ++i) {
        if (nodes_[beam_[i].node].hash == parent_hash) {
          extension_[i * vocab_ + node.label] = static_cast<int32_t>(j);
          break;
        }
      }
    }
  }
  for (size_t i = 0; i < beam_size_; ++i) {
    const Entry& e = beam_[i];
    const Node& node = nodes_[e.node];
    const double both = LogAdd(e.pb, e.pnb);
    for (size_t label = 0; label < vocab_; ++label) {
      const int32_t c = static_cast<int32_t>(label);
      if (c == blank || y[label] < threshold) continue;
      int32_t trie = 0;
      if (!Allowed(node, c, &trie)) continue;
      const double p = (c == node.label ? e.pb : both) + y[label];
      if (p == kNegInf) continue;
      const int32_t j = extension_[i * vocab_ + label];
      if (j >= 0) {
        Candidate& merged = candidates_[j];
        merged.pnb = LogAdd(merged.pnb, p);
        if (merged.label < 0) {
          merged.fresh = LogAdd(merged.fresh, p);
          merged.fresh_from = static_cast<int32_t>(i);
        }
        continue;
      }
      Candidate& n = candidates_[count];
      n.entry = static_cast<int32_t>(i);
      n.label = c;
      n.trie = trie;
      n.context = node.context;
      n.bonus = node.bonus;
      if (context_) {
        n.context = context_->Next(node.context, c);
        n.bonus += context_->Gain(node.context, n.context);
      }
      n.pb = kNegInf;
      n.pnb = p;
      n.carried = n.fresh = kNegInf;
      extension_[i * vocab_ + label] = static_cast<int32_t>(count);
      ++count;
    }
  }
  size_t live = 0;
  for (size_t k = 0; k < count; ++k) {
    Candidate& c = candidates_[k];
    c.total = LogAdd(c.pb, c.pnb) + c.bonus;
    if (c.total > kNegInf) order_[live++] = static_cast<int32_t>(k);
  }
  const size_t keep = std::min<size_t>(live, width_);
  std::partial_sort(order_.begin(), order_.begin() + keep,
                    order_.begin() + live, [&](int32_t a, int32_t b) {
                      const double ta = candidates_[a].total;
                      const double tb = candidates_[b].total;
                      return ta > tb || (ta == tb && a < b);
                    });
  if (keep == 0) {
    // Every path has probability 0 (a constrained beam that cannot go on):
    // keep the beam as it was.
    ++steps_taken_;
    return Status::Ok();
  }
  size_t new_nodes = 0;
  for (size_t k = 0; k < keep; ++k) {
    const Candidate& c = candidates_[order_[k]];
    new_nodes += c.label >= 0 || c.fresh > c.carried;
  }
  if (node_count_ + new_nodes > nodes_.size()) Compact(keep);

  for (size_t k = 0; k < keep; ++k) {
    const Candidate& c = candidates_[order_[k]];
    int32_t node_index = beam_[c.entry].node;
    if (c.label >= 0) {
      const Node& parent = nodes_[node_index];
      nodes_[node_count_] = Node{node_index,   c.label,
                                 c.trie,       parent.length + 1,
                                 steps_taken_, ExtendHash(parent.hash, c.label),
                                 c.context,    c.bonus};
      node_index = static_cast<int32_t>(node_count_++);
    } else if (c.fresh > c.carried) {
      Node retimed = nodes_[node_index];
      retimed.step = steps_taken_;
      retimed.parent = beam_[c.fresh_from].node;
      nodes_[node_count_] = retimed;
      node_index = static_cast<int32_t>(node_count_++);
    }
    next_beam_[k] = Entry{node_index, c.pb, c.pnb};
  }
  std::swap(beam_, next_beam_);
  beam_size_ = keep;
  ++steps_taken_;
  return Status::Ok();
}

void BeamDecoder::Compact(size_t selected) {
  // Marks: kUnmarked, kAlone (kept, its parent need not be), kOnPath (kept
  // with every ancestor).
  constexpr int32_t kUnmarked = -1, kAlone = -2, kOnPath = 0;
  std::fill(remap_.begin(), remap_.begin() + node_count_, kUnmarked);
  // Mark every node on the path a survivor will hang from: its entry's, or
  // for a survivor about to be retimed, the parent entry's (and its own old
  // node alone, to be copied). A walk goes on through a node marked alone:
  // another survivor may hang from it, and then from its ancestors too.
  auto mark_path = [&](int32_t n) {
    while (n >= 0 && remap_[n] != kOnPath) {
      remap_[n] = kOnPath;
      n = nodes_[n].parent;
    }
  };
  for (size_t k = 0; k < selected; ++k) {
    const Candidate& c = candidates_[order_[k]];
    if (c.label < 0 && c.fresh > c.carried) {
      mark_path(beam_[c.fresh_from].node);
      int32_t& old = remap_[beam_[c.entry].node];
      if (old == kUnmarked) old = kAlone;
    } else {
      mark_path(beam_[c.entry].node);
    }
  }
  size_t kept = 0;
  for (size_t n = 0; n < node_count_; ++n) {
    if (remap_[n] == kUnmarked) continue;
    Node node = nodes_[n];
    // A node marked alone may lose its parent (remapped to kUnmarked): it is
    // only read, then dropped. Parents come first, so a kept parent's mark
    // is already its new index.
    if (node.parent >= 0) node.parent = remap_[node.parent];
    remap_[n] = static_cast<int32_t>(kept);
    nodes_[kept++] = node;
  }
  node_count_ = kept;
  for (size_t i = 0; i < beam_size_; ++i) {
    beam_[i].node = beam_[i].node >= 0 ? remap_[beam_[i].node] : -1;
  }
}

int BeamDecoder::BestEntry(bool final) const {
  if (!final) return 0;
  if (context_) {
    // The utterance ends as if with a separator: a phrase that lacks only
    // its closing separator completes, and unfinished matches give their
    // bonus back.
    int best = -1;
    double best_rank = kNegInf;
    for (size_t i = 0; i < beam_size_; ++i) {
      const Entry& e = beam_[i];
      const Node& node = nodes_[e.node];
      if (trie_ && node.trie != 0 && !trie_->IsWord(node.trie)) continue;
      const double rank =
          LogAdd(e.pb, e.pnb) + node.bonus + context_->EndGain(node.context);
      if (best < 0 || rank > best_rank) {
        best = static_cast<int>(i);
        best_rank = rank;
      }
    }
    return best;
  }
  if (!trie_) return 0;
  for (size_t i = 0; i < beam_size_; ++i) {
    const Node& node = nodes_[beam_[i].node];
    if (node.trie == 0 || trie_->IsWord(node.trie)) return static_cast<int>(i);
  }
  return -1;
}

void BeamDecoder::Result(bool final, CtcHypothesis* hypothesis) const {
  int best = BestEntry(final);
  const bool drop_unfinished = best < 0;
  if (best < 0) best = 0;
  const Entry& e = beam_[best];
  // The path is written from its end; only what the walk wrote is read
  // (`first` is 0 while every path reaches the root, as Compact keeps them).
  const size_t length = nodes_[e.node].length;
  size_t first = length;
  for (int32_t node = e.node; nodes_[node].parent >= 0 && first > 0;
       node = nodes_[node].parent) {
    --first;
    path_labels_[first] = nodes_[node].label;
    path_steps_[first] = nodes_[node].step;
  }
  size_t end = length;
  if (drop_unfinished) {
    while (end > first && path_labels_[end - 1] != set_.separator) --end;
  }
  Assemble(set_, path_labels_.data() + first, path_steps_.data() + first,
           end - first, LogAdd(e.pb, e.pnb), hypothesis);
}

size_t BeamDecoder::Bytes(const CtcDecoderOptions& options, size_t vocab) {
  const size_t width = options.beam_width;
  const size_t capacity = 1 + width * (size_t{options.max_labels} + 2);
  return capacity * (sizeof(Node) + sizeof(int32_t)) +
         width * vocab * (sizeof(Candidate) + 2 * sizeof(int32_t)) +
         2 * width * sizeof(Entry) + vocab * sizeof(double) +
         size_t{options.max_labels} * (sizeof(int32_t) + sizeof(uint64_t));
}

}  // namespace

size_t BeamDecoderBytes(const CtcDecoderOptions& options, size_t vocab) {
  return BeamDecoder::Bytes(options, vocab);
}

std::unique_ptr<CtcDecoder> MakeBeamDecoder(
    LabelSet set, std::unique_ptr<WordTrie> trie,
    std::unique_ptr<ContextGraph> context, const CtcDecoderOptions& options) {
  return std::make_unique<BeamDecoder>(std::move(set), std::move(trie),
                                       std::move(context), options);
}

}  // namespace tarn::ctc
