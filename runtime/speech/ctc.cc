// CtcDecoder::Create, the shared pieces, and the greedy decoder.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <string>

#include "ctc_internal.h"

namespace tarn {

namespace ctc {

namespace {

Status Invalid(const std::string& message) {
  return Status(StatusCode::kInvalidArgument, message);
}

bool HasCapitals(const std::vector<std::string>& labels) {
  for (const std::string& label : labels) {
    for (char ch : label) {
      if (ch >= 'A' && ch <= 'Z') return true;
    }
  }
  return false;
}

std::string Trim(const std::string& text) {
  const char* space = " \t\r\n\f\v";
  const size_t begin = text.find_first_not_of(space);
  if (begin == std::string::npos) return "";
  const size_t end = text.find_last_not_of(space);
  return text.substr(begin, end - begin + 1);
}

}  // namespace

Status MakeLabelSet(const std::vector<std::string>& labels, LabelSet* set) {
  if (labels.size() < 2) {
    return Invalid(
        "a CTC decoder needs at least 2 labels (a blank and "
        "text); the model has " +
        std::to_string(labels.size()) +
        (labels.empty() ? " (it was converted without --labels)" : ""));
  }
  if (labels.size() >
      static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return Invalid("too many labels");
  }
  set->labels = labels;
  set->blank = 0;
  set->separator = -1;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] == "<blank>") set->blank = static_cast<int>(i);
  }
  // An empty text label would be a word of no text, or hold off an
  // endpoint; the blank's text is never used (index 0 may be "").
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i].empty() && static_cast<int>(i) != set->blank) {
      return Invalid("label " + std::to_string(i) +
                     " is empty: a CTC label other than the blank is the word "
                     "separator or text");
    }
  }
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] == " " && static_cast<int>(i) != set->blank) {
      set->separator = static_cast<int>(i);
      break;
    }
  }
  return Status::Ok();
}

namespace {

// A character for a message, in quotes, and its bytes unless it is
// printable ASCII: a byte order mark or a control character shows nothing.
std::string Quoted(const std::string& character) {
  std::string out = "\"" + character + "\"";
  const unsigned char first = static_cast<unsigned char>(character[0]);
  if (character.size() == 1 && first >= 0x20 && first < 0x7f) return out;
  out += " (bytes";
  for (const unsigned char byte : character) {
    char hex[4];
    std::snprintf(hex, sizeof hex, " %02X", byte);
    out += hex;
  }
  return out + ")";
}

// Spells words with a label set's text labels, longest label first.
class Speller {
 public:
  explicit Speller(const LabelSet& set) : lower_(!HasCapitals(set.labels)) {
    for (size_t i = 0; i < set.labels.size(); ++i) {
      const int id = static_cast<int>(i);
      if (id == set.blank || id == set.separator || set.labels[i].empty()) {
        continue;
      }
      spelling_.emplace(set.labels[i], id);
      longest_ = std::max(longest_, set.labels[i].size());
    }
  }

  // Lowers ASCII capitals when the labels have none.
  void Normalise(std::string* word) const {
    if (!lower_) return;
    for (char& ch : *word) {
      if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
    }
  }

  // Appends the labels of `word` to *out. Fails, returning the character
  // (the whole UTF-8 sequence) that no label spells and its byte in *at.
  std::string Spell(const std::string& word, std::vector<int32_t>* out,
                    size_t* at) const {
    size_t pos = 0;
    while (pos < word.size()) {
      int32_t label = -1;
      size_t length = std::min(longest_, word.size() - pos);
      for (; length > 0; --length) {
        auto it = spelling_.find(word.substr(pos, length));
        if (it != spelling_.end()) {
          label = it->second;
          break;
        }
      }
      if (label < 0) {
        const unsigned char lead = static_cast<unsigned char>(word[pos]);
        const size_t bytes = lead >= 0xf0   ? 4
                             : lead >= 0xe0 ? 3
                             : lead >= 0xc0 ? 2
                                            : 1;
        *at = pos;
        return word.substr(pos, bytes);
      }
      out->push_back(label);
      pos += length;
    }
    return "";
  }

 private:
  std::map<std::string, int32_t> spelling_;
  size_t longest_ = 0;
  bool lower_ = false;
};

// A hotword phrase's words: its runs of characters between white space.
std::vector<std::string> PhraseWords(const std::string& phrase) {
  std::vector<std::string> words;
  const char* space = " \t\r\n\f\v";
  for (size_t start = 0;;) {
    start = phrase.find_first_not_of(space, start);
    if (start == std::string::npos) return words;
    size_t end = phrase.find_first_of(space, start);
    if (end == std::string::npos) end = phrase.size();
    words.push_back(phrase.substr(start, end - start));
    start = end;
  }
}

std::string HotwordName(const std::vector<CtcHotword>& hotwords, size_t i) {
  return "hotword " + std::to_string(i) + " (\"" + hotwords[i].phrase + "\")";
}

}  // namespace

Status WordTrie::Build(const LabelSet& set,
                       const std::vector<std::string>& words) {
  const Speller speller(set);
  Spellings spellings;
  std::vector<int32_t> spelled;
  for (const std::string& raw : words) {
    std::string word = Trim(raw);
    if (word.empty()) continue;
    if (word.find_first_of(" \t") != std::string::npos) {
      return Invalid("word list: \"" + word +
                     "\" holds a space; give one word per entry");
    }
    speller.Normalise(&word);
    spelled.clear();
    size_t at = 0;
    const std::string missing = speller.Spell(word, &spelled, &at);
    if (!missing.empty()) {
      return Invalid("word list: \"" + word +
                     "\" cannot be spelled with "
                     "the model's labels (no label for " +
                     Quoted(missing) + " at byte " + std::to_string(at) + ")");
    }
    if (!spelled.empty()) spellings.Add(spelled);
  }
  if (spellings.size() == 0) return Invalid("the word list holds no words");
  const std::vector<int32_t> node = edges_.Build(spellings);
  is_word_.assign(edges_.nodes(), 0);
  word_count_ = 0;
  for (size_t i = 0; i < spellings.size(); ++i) {
    uint8_t& is_word = is_word_[node[spellings.begin[i + 1] - 1]];
    word_count_ += is_word == 0;
    is_word = 1;
  }
  return Status::Ok();
}

std::vector<int32_t> EdgeLists::Build(const Spellings& spellings) {
  const size_t count = spellings.size();
  auto first = [&](size_t i) {
    return spellings.labels.begin() + spellings.begin[i];
  };
  auto last = [&](size_t i) {
    return spellings.labels.begin() + spellings.begin[i + 1];
  };
  std::vector<uint32_t> order(count);
  for (size_t i = 0; i < count; ++i) order[i] = static_cast<uint32_t>(i);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return std::lexicographical_compare(first(a), last(a), first(b), last(b));
  });
  // In sorted order a node's children appear in increasing label order,
  // each when the first sequence through it does; the nodes on the
  // previous sequence's path are shared up to the common prefix.
  struct Edge {
    int32_t parent, label, child;
  };
  std::vector<Edge> edges;
  std::vector<int32_t> node(spellings.labels.size());
  std::vector<int32_t> path;  // the previous sequence's nodes
  int32_t nodes = 1;
  for (size_t n = 0; n < count; ++n) {
    const size_t i = order[n];
    const auto begin = first(i), end = last(i);
    const size_t length = static_cast<size_t>(end - begin);
    size_t shared = 0;
    if (n > 0) {
      const auto previous = first(order[n - 1]);
      while (shared < path.size() && shared < length &&
             previous[shared] == begin[shared]) {
        ++shared;
      }
    }
    path.resize(shared);
    for (size_t k = shared; k < length; ++k) {
      edges.push_back({k == 0 ? 0 : path[k - 1], begin[k], nodes});
      path.push_back(nodes++);
    }
    std::copy(path.begin(), path.end(), node.begin() + spellings.begin[i]);
  }
  // Grouped by parent, stably: each node's labels stay sorted.
  begin_.assign(static_cast<size_t>(nodes) + 1, 0);
  for (const Edge& e : edges) ++begin_[e.parent + 1];
  for (size_t n = 1; n < begin_.size(); ++n) begin_[n] += begin_[n - 1];
  label_.resize(edges.size());
  child_.resize(edges.size());
  std::vector<uint32_t> next(begin_.begin(), begin_.end() - 1);
  for (const Edge& e : edges) {
    const uint32_t at = next[e.parent]++;
    label_[at] = e.label;
    child_[at] = e.child;
  }
  return node;
}

int32_t EdgeLists::Child(int32_t node, int32_t label) const {
  const int32_t* begin = label_.data() + begin_[node];
  const int32_t* end = label_.data() + begin_[node + 1];
  const int32_t* it = std::lower_bound(begin, end, label);
  if (it == end || *it != label) return -1;
  return child_[it - label_.data()];
}

Status ContextGraph::Build(const LabelSet& set,
                           const std::vector<CtcHotword>& hotwords,
                           float default_boost, const WordTrie* words) {
  if (!(default_boost > 0 && default_boost <= kMaxHotwordBoost)) {
    return Invalid("the hotword boost " + std::to_string(default_boost) +
                   " is not a positive number of at most " +
                   std::to_string(kMaxHotwordBoost) + " nats per label");
  }
  const Speller speller(set);
  const int32_t separator = set.separator;
  // The prefix tree: state 0 is the root, before any separator; each
  // phrase is spelled from a separator (the start of a word) to one.
  Spellings spellings;
  std::vector<double> boosts;  // [phrases]
  std::vector<int32_t> spelled;
  for (size_t i = 0; i < hotwords.size(); ++i) {
    const CtcHotword& hotword = hotwords[i];
    const std::string name = HotwordName(hotwords, i);
    if (!(hotword.boost >= 0 && hotword.boost <= kMaxHotwordBoost)) {
      return Invalid(name + ": its boost " + std::to_string(hotword.boost) +
                     " is not a positive number of at most " +
                     std::to_string(kMaxHotwordBoost) + " nats per label");
    }
    spelled.assign(1, separator);
    for (std::string word : PhraseWords(hotword.phrase)) {
      speller.Normalise(&word);
      const size_t at_word = spelled.size();  // where the word's labels begin
      size_t at = 0;
      const std::string missing = speller.Spell(word, &spelled, &at);
      if (!missing.empty()) {
        return Invalid(name +
                       " cannot be spelled with the model's labels (no label "
                       "for " +
                       Quoted(missing) + " in \"" + word + "\")");
      }
      if (words != nullptr && !words->Spells(spelled, at_word)) {
        return Invalid(name + ": \"" + word +
                       "\" is not in the word list, so the phrase could "
                       "never be recognised; add the word to the list or "
                       "drop the phrase");
      }
      spelled.push_back(separator);
    }
    if (spelled.size() == 1) return Invalid(name + " is empty");
    if (spelled.size() > kMaxHotwordLabels) {
      return Invalid(name + " spells to " + std::to_string(spelled.size()) +
                     " labels, separators included; a hotword is a phrase of "
                     "at most " +
                     std::to_string(kMaxHotwordLabels));
    }
    spellings.Add(spelled);
    boosts.push_back(hotword.boost > 0 ? hotword.boost : default_boost);
  }
  const std::vector<int32_t> node = edges_.Build(spellings);
  const size_t states = edges_.nodes();
  // edge_boost: of the label into a state, the largest boost of the
  // phrases through it; phrase_boost: where phrases end, the largest of
  // theirs (-1 elsewhere; every boost is positive by now).
  std::vector<double> edge_boost(states, 0.0), phrase_boost(states, -1.0);
  for (size_t i = 0; i < spellings.size(); ++i) {
    // The leading separator earns nothing: it is no part of the phrase.
    for (size_t k = spellings.begin[i] + 1; k < spellings.begin[i + 1]; ++k) {
      edge_boost[node[k]] = std::max(edge_boost[node[k]], boosts[i]);
    }
    double& end = phrase_boost[node[spellings.begin[i + 1] - 1]];
    end = std::max(end, boosts[i]);
  }
  // Breadth first: parents, depths and the plain Aho-Corasick failure
  // links (the longest proper suffix that is a state).
  std::vector<int32_t> parent(states, 0), depth(states, 0), suffix(states, 0);
  auto follow = [&](int32_t state, int32_t label) {
    for (;;) {
      const int32_t child = edges_.Child(state, label);
      if (child >= 0) return child;
      if (state == 0) return 0;
      state = suffix[state];
    }
  };
  std::vector<int32_t> order(1, 0);
  for (size_t q = 0; q < order.size(); ++q) {
    const int32_t s = order[q];
    for (uint32_t e = edges_.begin(s); e < edges_.begin(s + 1); ++e) {
      const int32_t child = edges_.child(e);
      parent[child] = s;
      depth[child] = depth[s] + 1;
      suffix[child] = s == 0 ? 0 : follow(suffix[s], edges_.label(e));
      order.push_back(child);
    }
  }
  // Each state's path by the rules (tarn/ctc.hpp), which its labels alone
  // decide: the phrases credited along it, what they keep (`kept`) and
  // what the rest of the match holds at risk. Positions count from the
  // path's leading separator, 1.
  fail_.assign(states, 0);
  reached_.assign(states, 0.0);
  at_risk_.assign(states, 0.0);
  std::vector<double> kept(states, 0.0);
  struct Occurrence {
    int32_t begin, end;  // the positions of its separators
  };
  std::vector<Occurrence> credited;
  std::vector<int32_t> path;
  std::vector<double> cover;  // [position]: the largest credited boost
  auto inside = [&](int32_t position, int32_t before) {
    for (const Occurrence& o : credited) {
      if (o.end < before && o.begin < position && position < o.end) {
        return true;
      }
    }
    return false;
  };
  for (size_t q = 1; q < order.size(); ++q) {
    const int32_t s = order[q];
    const int32_t d = depth[s];
    path.assign(d + 1, 0);
    for (int32_t at = s; at != 0; at = parent[at]) path[depth[at]] = at;
    credited.clear();
    cover.assign(d + 1, -1.0);
    for (int32_t j = 2; j <= d; ++j) {
      for (int32_t c = path[j]; c != 0; c = suffix[c]) {
        if (phrase_boost[c] < 0) continue;
        const int32_t begin = j - depth[c] + 1;
        if (inside(begin, j)) continue;  // would earn a credited label again
        credited.push_back({begin, j});
        for (int32_t i = begin + 1; i <= j; ++i) {
          cover[i] = std::max(cover[i], phrase_boost[c]);
        }
      }
    }
    for (int32_t i = 2; i <= d; ++i) {
      if (cover[i] >= 0) {
        kept[s] += cover[i];
      } else {
        at_risk_[s] += edge_boost[path[i]];
      }
    }
    reached_[s] = kept[s] - kept[parent[s]] + at_risk_[s];
    // A failure may restart the match at one of the path's separators, but
    // not at one inside a credited phrase, whose labels have earned.
    int32_t u = suffix[s];
    while (u != 0 && inside(d - depth[u] + 1, d + 1)) u = suffix[u];
    fail_[s] = u;
  }
  separator_ = separator;
  start_ = Next(0, separator);
  return Status::Ok();
}

double LogAdd(double a, double b) {
  if (a < b) std::swap(a, b);
  if (b == -std::numeric_limits<double>::infinity()) return a;
  return a + std::log1p(std::exp(b - a));
}

double LogSoftmax(const float* x, size_t n, double* out) {
  double max = x[0];
  for (size_t i = 1; i < n; ++i) max = std::max(max, static_cast<double>(x[i]));
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += std::exp(x[i] - max);
  const double log_sum = max + std::log(sum);
  double best = -std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < n; ++i) {
    out[i] = x[i] - log_sum;
    best = std::max(best, out[i]);
  }
  return best;
}

void Assemble(const LabelSet& set, const int32_t* labels, const uint64_t* steps,
              size_t n, double log_score, CtcHypothesis* out) {
  out->text.clear();
  out->log_score = log_score;
  size_t count = 0;
  bool in_word = false;
  for (size_t i = 0; i < n; ++i) {
    const int32_t label = labels[i];
    if (label == set.blank) continue;
    if (label == set.separator) {
      in_word = false;
      continue;
    }
    if (!in_word) {
      if (count == out->words.size()) out->words.emplace_back();
      CtcWord& word = out->words[count++];
      word.text.clear();
      word.first_step = steps[i];
      if (!out->text.empty()) out->text += ' ';
      in_word = true;
    }
    CtcWord& word = out->words[count - 1];
    word.text += set.labels[label];
    word.last_step = steps[i];
    out->text += set.labels[label];
  }
  out->words.resize(count);
}

namespace {

class GreedyDecoder final : public CtcDecoder {
 public:
  GreedyDecoder(LabelSet set, const CtcDecoderOptions& options)
      : set_(std::move(set)),
        labels_(options.max_labels),
        steps_(options.max_labels),
        log_probs_(set_.labels.size()) {}

  Status Step(const float* logits, size_t size) override {
    if (logits == nullptr || size != set_.labels.size()) {
      return Invalid("CTC step: " + std::to_string(logits ? size : 0) +
                     " scores given; the decoder has " +
                     std::to_string(set_.labels.size()) + " labels");
    }
    size_t best = 0;
    for (size_t i = 0; i < size; ++i) {
      if (!std::isfinite(logits[i])) {
        return Invalid("CTC step: score " + std::to_string(i) + " is " +
                       std::to_string(logits[i]));
      }
      if (logits[i] > logits[best]) best = i;
    }
    LogSoftmax(logits, size, log_probs_.data());
    log_score_ += log_probs_[best];
    const int32_t label = static_cast<int32_t>(best);
    if (label != set_.blank && label != previous_ && count_ < labels_.size()) {
      labels_[count_] = label;
      steps_[count_] = steps_taken_;
      ++count_;
    }
    previous_ = label;
    ++steps_taken_;
    return Status::Ok();
  }

  void Result(bool, CtcHypothesis* hypothesis) const override {
    Assemble(set_, labels_.data(), steps_.data(), count_, log_score_,
             hypothesis);
  }

  void Reset() override {
    count_ = 0;
    previous_ = -1;
    steps_taken_ = 0;
    log_score_ = 0;
  }

  uint64_t steps() const override { return steps_taken_; }
  int blank() const override { return set_.blank; }
  int separator() const override { return set_.separator; }

 private:
  const LabelSet set_;
  std::vector<int32_t> labels_;  // [max_labels] emitted labels
  std::vector<uint64_t> steps_;  // [max_labels] the step of each
  std::vector<double> log_probs_;
  size_t count_ = 0;
  int32_t previous_ = -1;
  uint64_t steps_taken_ = 0;
  double log_score_ = 0;
};

}  // namespace

std::unique_ptr<CtcDecoder> MakeGreedyDecoder(
    LabelSet set, const CtcDecoderOptions& options) {
  return std::make_unique<GreedyDecoder>(std::move(set), options);
}

}  // namespace ctc

Status CtcDecoder::Create(const std::vector<std::string>& labels,
                          const CtcDecoderOptions& options,
                          std::unique_ptr<CtcDecoder>* decoder) {
  if (decoder == nullptr) {
    return Status(StatusCode::kInvalidArgument, "decoder is null");
  }
  ctc::LabelSet set;
  Status status = ctc::MakeLabelSet(labels, &set);
  if (!status.ok()) return status;
  if (options.beam_width > kMaxCtcBeamWidth) {
    return Status(StatusCode::kInvalidArgument,
                  "beam width " + std::to_string(options.beam_width) +
                      " is above the maximum, " +
                      std::to_string(kMaxCtcBeamWidth));
  }
  if (options.max_labels == 0 || options.max_labels > (1u << 24)) {
    return Status(StatusCode::kInvalidArgument,
                  "max_labels " + std::to_string(options.max_labels) +
                      " is outside [1, 2^24]");
  }
  if (!(options.beam_prune > 0)) {
    return Status(StatusCode::kInvalidArgument, "beam_prune must be positive");
  }
  if (options.beam_width <= 1) {
    if (!options.words.empty()) {
      return Status(StatusCode::kInvalidArgument,
                    "a word list needs the beam search (beam width >= 2); "
                    "greedy decoding cannot be constrained");
    }
    if (!options.hotwords.empty()) {
      return Status(StatusCode::kInvalidArgument,
                    "hotwords need the beam search (beam width >= 2); "
                    "greedy decoding cannot favour phrases");
    }
    *decoder = ctc::MakeGreedyDecoder(std::move(set), options);
    return Status::Ok();
  }
  const size_t bytes = ctc::BeamDecoderBytes(options, set.labels.size());
  if (bytes > kMaxCtcDecoderBytes) {
    return Status(
        StatusCode::kInvalidArgument,
        "a beam of " + std::to_string(options.beam_width) + " over " +
            std::to_string(set.labels.size()) + " labels with max_labels " +
            std::to_string(options.max_labels) + " needs " +
            std::to_string(bytes >> 20) + " MiB of decoder memory; at most " +
            std::to_string(kMaxCtcDecoderBytes >> 20) +
            " MiB: a narrower beam, or a smaller max_labels "
            "(shorter utterances)");
  }
  std::unique_ptr<ctc::WordTrie> trie;
  if (!options.words.empty()) {
    if (set.separator < 0) {
      return Status(StatusCode::kInvalidArgument,
                    "a word list needs a word separator label (\" \"); the "
                    "model's labels have none");
    }
    trie = std::make_unique<ctc::WordTrie>();
    status = trie->Build(set, options.words);
    if (!status.ok()) return status;
  }
  std::unique_ptr<ctc::ContextGraph> context;
  if (!options.hotwords.empty()) {
    if (set.separator < 0) {
      return Status(StatusCode::kInvalidArgument,
                    "hotwords need a word separator label (\" \"); the "
                    "model's labels have none");
    }
    context = std::make_unique<ctc::ContextGraph>();
    status = context->Build(set, options.hotwords, options.hotword_boost,
                            trie.get());
    if (!status.ok()) return status;
  }
  *decoder = ctc::MakeBeamDecoder(std::move(set), std::move(trie),
                                  std::move(context), options);
  return Status::Ok();
}

}  // namespace tarn
