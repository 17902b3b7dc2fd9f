// CTC decoders on hand-made score sequences whose answers were worked out by
// hand (in the comments) or by brute force over every alignment (here, in
// test code independent of the decoders).

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "allocation_counter.h"
#include "ctc_internal.h"
#include "tarn/ctc.hpp"

namespace tarn {
namespace {

const std::vector<std::string> kAb = {"<blank>", " ", "a", "b"};

// Letters: blank, space, a-z, apostrophe (tests.goldens' speech labels).
std::vector<std::string> Letters() {
  std::vector<std::string> labels = {"<blank>", " "};
  for (char c = 'a'; c <= 'z'; ++c) labels.push_back(std::string(1, c));
  labels.push_back("'");
  return labels;
}

int IndexOf(const std::vector<std::string>& labels, const std::string& l) {
  return static_cast<int>(std::find(labels.begin(), labels.end(), l) -
                          labels.begin());
}

// One step's scores as log-probabilities: `probs` maps labels to
// probabilities, the rest share what is left.
std::vector<float> Step(const std::vector<std::string>& labels,
                        const std::map<std::string, double>& probs) {
  double total = 0;
  for (const auto& [label, p] : probs) total += p;
  const size_t others = labels.size() - probs.size();
  const double rest = others > 0 ? std::max(1e-12, (1 - total) / others) : 0;
  std::vector<float> step(labels.size());
  for (size_t i = 0; i < labels.size(); ++i) {
    auto it = probs.find(labels[i]);
    step[i] =
        static_cast<float>(std::log(it != probs.end() ? it->second : rest));
  }
  return step;
}

std::unique_ptr<CtcDecoder> Make(const std::vector<std::string>& labels,
                                 uint32_t beam,
                                 std::vector<std::string> words = {},
                                 uint32_t max_labels = 4096) {
  CtcDecoderOptions options;
  options.beam_width = beam;
  options.words = std::move(words);
  options.max_labels = max_labels;
  std::unique_ptr<CtcDecoder> decoder;
  Status status = CtcDecoder::Create(labels, options, &decoder);
  EXPECT_TRUE(status.ok()) << status.message();
  return decoder;
}

CtcHypothesis Decode(CtcDecoder& decoder,
                     const std::vector<std::vector<float>>& steps,
                     bool final = true) {
  decoder.Reset();
  for (const auto& step : steps) {
    Status status = decoder.Step(step.data(), step.size());
    EXPECT_TRUE(status.ok()) << status.message();
  }
  CtcHypothesis result;
  decoder.Result(final, &result);
  return result;
}

// Best label of each step: a, a, _, a, b, b, ' ', b, _ -> "aab b".
TEST(CtcGreedy, CollapsesRepeatsDropsBlanksSplitsWords) {
  const char* path[] = {"a", "a", "<blank>", "a",      "b",
                        "b", " ", "b",       "<blank>"};
  std::vector<std::vector<float>> steps;
  for (const char* best : path) steps.push_back(Step(kAb, {{best, 0.7}}));
  auto decoder = Make(kAb, 0);
  CtcHypothesis h = Decode(*decoder, steps);
  EXPECT_EQ(h.text, "aab b");
  ASSERT_EQ(h.words.size(), 2u);
  EXPECT_EQ(h.words[0].text, "aab");
  EXPECT_EQ(h.words[0].first_step, 0u);  // the first a
  EXPECT_EQ(h.words[0].last_step, 4u);   // the first b
  EXPECT_EQ(h.words[1].text, "b");
  EXPECT_EQ(h.words[1].first_step, 7u);
  EXPECT_EQ(h.words[1].last_step, 7u);
  // Best path probability: 0.7^9.
  EXPECT_NEAR(h.log_score, 9 * std::log(0.7), 1e-5);
  EXPECT_EQ(decoder->steps(), 9u);
}

TEST(CtcGreedy, LeadingTrailingAndDoubledSpacesVanish) {
  const char* path[] = {" ", "a", " ", "<blank>", " ", "b", " "};
  std::vector<std::vector<float>> steps;
  for (const char* best : path) steps.push_back(Step(kAb, {{best, 0.9}}));
  auto decoder = Make(kAb, 1);
  EXPECT_EQ(Decode(*decoder, steps).text, "a b");
}

TEST(CtcGreedy, BlankFoundByNameAnywhere) {
  const std::vector<std::string> labels = {"a", "b", "<blank>", " "};
  auto decoder = Make(labels, 0);
  EXPECT_EQ(decoder->blank(), 2);
  EXPECT_EQ(decoder->separator(), 3);
  std::vector<std::vector<float>> steps = {Step(labels, {{"a", .9}}),
                                           Step(labels, {{"<blank>", .9}}),
                                           Step(labels, {{"a", .9}})};
  EXPECT_EQ(Decode(*decoder, steps).text, "aa");
}

// Labels {_, a}, two steps with p(a) = 0.4, p(_) = 0.6. Best path "__":
// "" with 0.36. Prefixes: P("") = 0.36, P("a") = aa + a_ + _a = 0.16 + 0.24
// + 0.24 = 0.64. Greedy says "", the beam says "a".
TEST(CtcBeam, MostProbableLabellingBeatsBestPath) {
  const std::vector<std::string> labels = {"<blank>", "a"};
  std::vector<std::vector<float>> steps(2, Step(labels, {{"a", 0.4}}));
  auto greedy = Make(labels, 0);
  EXPECT_EQ(Decode(*greedy, steps).text, "");
  auto beam = Make(labels, 4);
  CtcHypothesis h = Decode(*beam, steps);
  EXPECT_EQ(h.text, "a");
  EXPECT_NEAR(h.log_score, std::log(0.64), 1e-6);
}

// Labels {_, a}; p(a) = 0.9, 0.4, 0.9 (blank the rest). Greedy path a_a ->
// "aa". By hand: P("aa") = a_a = .9*.6*.9 = .486; P("a") = aaa .324 + aa_
// .036 + a__ .054 + _aa .036 + __a .054 + _a_ .004 = .508; P("") = .006.
TEST(CtcBeam, RepeatsNeedABlankBetween) {
  const std::vector<std::string> labels = {"<blank>", "a"};
  std::vector<std::vector<float>> steps = {Step(labels, {{"a", 0.9}}),
                                           Step(labels, {{"a", 0.4}}),
                                           Step(labels, {{"a", 0.9}})};
  auto greedy = Make(labels, 0);
  EXPECT_EQ(Decode(*greedy, steps).text, "aa");
  auto beam = Make(labels, 8);
  CtcHypothesis h = Decode(*beam, steps);
  EXPECT_EQ(h.text, "a");
  EXPECT_NEAR(h.log_score, std::log(0.508), 1e-6);
}

// Every labelling's probability by summing over all |labels|^T alignments.
std::map<std::vector<int>, double> BruteForce(
    const std::vector<std::vector<float>>& steps, int blank) {
  std::map<std::vector<int>, double> out;
  const size_t T = steps.size(), V = steps[0].size();
  std::vector<size_t> path(T, 0);
  for (;;) {
    double p = 1;
    std::vector<int> labelling;
    int previous = -1;
    for (size_t t = 0; t < T; ++t) {
      double sum = 0;
      for (float s : steps[t]) sum += std::exp(s);
      p *= std::exp(steps[t][path[t]]) / sum;
      const int l = static_cast<int>(path[t]);
      if (l != blank && l != previous) labelling.push_back(l);
      previous = l;
    }
    out[labelling] += p;
    size_t t = 0;
    while (t < T && ++path[t] == V) path[t++] = 0;
    if (t == T) break;
  }
  return out;
}

std::string Text(const std::vector<std::string>& labels,
                 const std::vector<int>& labelling) {
  std::string text;
  for (int l : labelling) text += labels[l];
  return text;
}

// A beam wide enough to hold every prefix finds the most probable labelling
// and its probability exactly. Labels {_, a, b}: no separator, so every
// labelling is reachable.
TEST(CtcBeam, WideBeamMatchesBruteForce) {
  const std::vector<std::string> labels = {"<blank>", "a", "b"};
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0, 1.5f);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<std::vector<float>> steps(7, std::vector<float>(3));
    for (auto& step : steps) {
      for (float& s : step) s = normal(rng);
    }
    auto all = BruteForce(steps, 0);
    auto best = std::max_element(
        all.begin(), all.end(),
        [](const auto& a, const auto& b) { return a.second < b.second; });
    auto beam = Make(labels, 256);
    CtcHypothesis h = Decode(*beam, steps);
    EXPECT_EQ(h.text, Text(labels, best->first)) << "trial " << trial;
    EXPECT_NEAR(std::exp(h.log_score), best->second, 1e-6) << "trial " << trial;
  }
}

// Scores that spell "cot", with "cat" close behind (o 0.6, a 0.3 at the
// vowel).
std::vector<std::vector<float>> CotNarrowlyOverCat(
    const std::vector<std::string>& labels) {
  return {Step(labels, {{"c", 0.9}}),
          Step(labels, {{"<blank>", 0.9}}),
          Step(labels, {{"o", 0.6}, {"a", 0.3}}),
          Step(labels, {{"<blank>", 0.9}}),
          Step(labels, {{"t", 0.9}}),
          Step(labels, {{"<blank>", 0.9}})};
}

// Word list {cat, dog}. The scores spell "cot" (o 0.6, a 0.3 at the vowel):
// greedy says "cot", the constrained beam "cat" (the only listed word that
// fits: P(cat) is what is left once "cot" is forbidden).
TEST(CtcBeam, WordListCorrectsANearMiss) {
  const auto labels = Letters();
  const auto steps = CotNarrowlyOverCat(labels);
  auto greedy = Make(labels, 0);
  EXPECT_EQ(Decode(*greedy, steps).text, "cot");
  auto unconstrained = Make(labels, 8);
  EXPECT_EQ(Decode(*unconstrained, steps).text, "cot");
  auto constrained = Make(labels, 8, {"cat", "dog"});
  CtcHypothesis h = Decode(*constrained, steps);
  EXPECT_EQ(h.text, "cat");
  ASSERT_EQ(h.words.size(), 1u);
  EXPECT_EQ(h.words[0].first_step, 0u);
  EXPECT_EQ(h.words[0].last_step, 4u);
}

// "dig dog" against {dog, dig-less list}: both words become "dog"; the
// space between them is only allowed after a complete word.
TEST(CtcBeam, WordListAcrossWordBoundaries) {
  const auto labels = Letters();
  std::vector<std::vector<float>> steps;
  for (const char* l : {"d", "i", "g", " ", "d", "o", "g"}) {
    if (std::string(l) == "i") {
      steps.push_back(Step(labels, {{"i", 0.6}, {"o", 0.3}}));
    } else {
      steps.push_back(Step(labels, {{l, 0.9}}));
    }
    steps.push_back(Step(labels, {{"<blank>", 0.9}}));
  }
  auto constrained = Make(labels, 8, {"dog", "cat"});
  CtcHypothesis h = Decode(*constrained, steps);
  EXPECT_EQ(h.text, "dog dog");
  ASSERT_EQ(h.words.size(), 2u);
  EXPECT_EQ(h.words[1].first_step, 8u);
  EXPECT_EQ(h.words[1].last_step, 12u);
}

// The constrained beam with words that share prefixes, checked against the
// brute-force most probable labelling among those the constraint admits:
// listed words separated by single spaces, optionally one trailing space (a
// finished last word), reported without it. Labels {_, ' ', a, b}; words
// {a, ab, ba}.
TEST(CtcBeam, ConstrainedMatchesBruteForce) {
  const std::vector<std::string> words = {"a", "ab", "ba"};
  // The text the labelling reads as, or "?" when the constraint forbids it.
  auto admitted = [&](std::string text) -> std::string {
    if (!text.empty() && text.back() == ' ') text.pop_back();
    if (text.empty()) return text;
    size_t start = 0;
    while (start <= text.size()) {
      size_t end = text.find(' ', start);
      if (end == std::string::npos) end = text.size();
      if (std::find(words.begin(), words.end(),
                    text.substr(start, end - start)) == words.end()) {
        return "?";
      }
      start = end + 1;
    }
    return text;
  };
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0, 2.0f);
  for (int trial = 0; trial < 30; ++trial) {
    std::vector<std::vector<float>> steps(7, std::vector<float>(4));
    for (auto& step : steps) {
      for (float& s : step) s = normal(rng);
    }
    std::string best_text = "?";
    double best_p = -1;
    for (const auto& [labelling, p] : BruteForce(steps, 0)) {
      const std::string text = admitted(Text(kAb, labelling));
      if (text != "?" && p > best_p) {
        best_p = p;
        best_text = text;
      }
    }
    auto beam = Make(kAb, 256, words);
    CtcHypothesis h = Decode(*beam, steps);
    EXPECT_EQ(h.text, best_text) << "trial " << trial;
    EXPECT_NEAR(std::exp(h.log_score), best_p, 1e-6) << "trial " << trial;
  }
}

TEST(CtcBeam, FinalDropsAnUnfinishedWordPartialKeepsIt) {
  const auto labels = Letters();
  std::vector<std::vector<float>> steps;
  for (const char* l : {"d", "o", "g", " ", "c", "a"}) {
    steps.push_back(Step(labels, {{l, 0.9}}));
  }
  auto beam = Make(labels, 8, {"dog", "cat"});
  EXPECT_EQ(Decode(*beam, steps, /*final=*/false).text, "dog ca");
  EXPECT_EQ(Decode(*beam, steps, /*final=*/true).text, "dog");
}

TEST(CtcBeam, UnlistedWordsNeverAppear) {
  const auto labels = Letters();
  std::vector<std::vector<float>> steps;
  for (const char* l : {"x", "y", "z", " ", "q"}) {
    steps.push_back(Step(labels, {{l, 0.97}}));
  }
  auto beam = Make(labels, 8, {"dog", "cat"});
  CtcHypothesis h = Decode(*beam, steps);
  for (const CtcWord& w : h.words) {
    EXPECT_TRUE(w.text == "dog" || w.text == "cat") << w.text;
  }
}

// Long random streams through a small prefix pool: the pool compacts and the
// decoder never allocates while stepping.
TEST(CtcBeam, FixedMemoryOverLongStreams) {
  const auto labels = Letters();
  for (bool constrained : {false, true}) {
    auto beam =
        constrained
            ? Make(labels, 16, {"hello", "world", "one", "two", "three"}, 64)
            : Make(labels, 16, {}, 64);
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0, 3.0f);
    std::vector<float> step(labels.size());
    size_t allocations = 0;
    for (int t = 0; t < 20000; ++t) {
      for (float& s : step) s = normal(rng);
      testing::AllocationCounter count;
      ASSERT_TRUE(beam->Step(step.data(), step.size()).ok());
      allocations += count.count();
    }
    EXPECT_EQ(allocations, 0u);
    CtcHypothesis h;
    beam->Result(false, &h);
    size_t letters = 0;
    for (const CtcWord& w : h.words) letters += w.text.size() + 1;
    EXPECT_LE(letters, 64u + 1);
  }
}

// The textbook prefix beam search, written here independently of the
// decoder: prefixes as label vectors in a map, unbounded memory, no word
// list, separator or hotwords; `max_labels` and the pruning as
// CtcDecoderOptions has them. Returns the best labelling and its log-score
// after each step.
std::vector<std::pair<std::vector<int>, double>> ReferenceBeam(
    const std::vector<std::vector<float>>& steps, size_t width,
    size_t max_labels, double prune) {
  std::vector<std::pair<std::vector<int>, double>> bests;
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  auto lse = [](double a, double b) {
    if (a == kNegInf) return b;
    if (b == kNegInf) return a;
    const double m = std::max(a, b);
    return m + std::log1p(std::exp(-std::abs(a - b)));
  };
  struct Scores {
    double pb = kNegInf, pnb = kNegInf;
  };
  std::map<std::vector<int>, Scores> beam = {{{}, Scores{0, kNegInf}}};
  for (const std::vector<float>& step : steps) {
    double max = step[0], sum = 0;
    for (float s : step) max = std::max(max, static_cast<double>(s));
    for (float s : step) sum += std::exp(s - max);
    std::vector<double> y(step.size());
    for (size_t i = 0; i < step.size(); ++i)
      y[i] = step[i] - max - std::log(sum);
    const double threshold = *std::max_element(y.begin(), y.end()) - prune;
    std::map<std::vector<int>, Scores> next;
    for (const auto& [prefix, s] : beam) {
      const double both = lse(s.pb, s.pnb);
      Scores& stay = next[prefix];
      stay.pb = lse(stay.pb, both + y[0]);
      if (!prefix.empty()) stay.pnb = lse(stay.pnb, s.pnb + y[prefix.back()]);
      if (prefix.size() >= max_labels) continue;
      for (size_t c = 1; c < step.size(); ++c) {
        if (y[c] < threshold) continue;
        const bool repeat = !prefix.empty() && prefix.back() == int(c);
        std::vector<int> longer = prefix;
        longer.push_back(static_cast<int>(c));
        Scores& extended = next[longer];
        extended.pnb = lse(extended.pnb, (repeat ? s.pb : both) + y[c]);
      }
    }
    std::vector<std::pair<double, std::vector<int>>> ranked;
    for (const auto& [prefix, s] : next) {
      const double total = lse(s.pb, s.pnb);
      if (total > kNegInf) ranked.push_back({total, prefix});
    }
    std::sort(ranked.begin(), ranked.end(),
              [](const auto& a, const auto& b) { return a.first > b.first; });
    beam.clear();
    for (size_t k = 0; k < std::min(width, ranked.size()); ++k) {
      beam[ranked[k].second] = next[ranked[k].second];
    }
    bests.push_back({ranked[0].second, ranked[0].first});
  }
  return bests;
}

// Long streams through a small prefix tree, compacted every few steps, give
// the reference's labelling and score after every step: compaction keeps
// every path a survivor hangs from, also when one survivor is retimed and
// another hangs from its old node (before that was fixed, trial 360 cut a
// path at step 36). Labels with no separator, so every labelling is
// reachable; a label held for a while, as speech does, makes repeats and
// retiming common.
TEST(CtcBeam, LongStreamsMatchTheReference) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0, 1.5f);
  std::uniform_real_distribution<float> uniform(0, 1);
  for (int trial = 0; trial < 500; ++trial) {
    const size_t vocab = 3 + trial % 4, width = 2 + trial % 7;
    const uint32_t max_labels = trial % 3 == 0 ? 8 : trial % 3 == 1 ? 16 : 30;
    std::vector<std::string> labels = {"<blank>"};
    for (size_t l = 1; l < vocab; ++l)
      labels.push_back(std::string(1, 'a' + l));
    std::vector<std::vector<float>> steps(400, std::vector<float>(vocab));
    size_t held = rng() % vocab;
    for (auto& step : steps) {
      if (uniform(rng) < 0.3f) held = rng() % vocab;
      for (float& s : step) s = normal(rng);
      step[held] += 4 * uniform(rng);
    }
    auto beam = Make(labels, static_cast<uint32_t>(width), {}, max_labels);
    const auto bests = ReferenceBeam(steps, width, max_labels, 20.0);
    CtcHypothesis h;
    for (size_t t = 0; t < steps.size(); ++t) {
      ASSERT_TRUE(beam->Step(steps[t].data(), steps[t].size()).ok());
      beam->Result(false, &h);
      ASSERT_EQ(h.text, Text(labels, bests[t].first))
          << "trial " << trial << " (" << vocab << " labels, beam " << width
          << ", max_labels " << max_labels << "), step " << t;
      ASSERT_NEAR(h.log_score, bests[t].second,
                  1e-9 * std::abs(bests[t].second))
          << "trial " << trial << ", step " << t;
    }
  }
}

TEST(CtcGreedy, NeverAllocatesWhileStepping) {
  const auto labels = Letters();
  auto greedy = Make(labels, 0, {}, 32);
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0, 3.0f);
  std::vector<float> step(labels.size());
  size_t allocations = 0;
  for (int t = 0; t < 5000; ++t) {
    for (float& s : step) s = normal(rng);
    testing::AllocationCounter count;
    ASSERT_TRUE(greedy->Step(step.data(), step.size()).ok());
    allocations += count.count();
  }
  EXPECT_EQ(allocations, 0u);
}

TEST(CtcDecoder, RefusesWhatItCannotDo) {
  const auto labels = Letters();
  std::unique_ptr<CtcDecoder> decoder;
  CtcDecoderOptions options;
  EXPECT_FALSE(CtcDecoder::Create({"<blank>"}, options, &decoder).ok());
  options.words = {"cat"};
  Status s = CtcDecoder::Create(labels, options, &decoder);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("beam"), std::string::npos) << s.message();
  options.beam_width = 4;
  options.words = {"cat", "caf\xc3\xa9"};
  s = CtcDecoder::Create(labels, options, &decoder);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("caf"), std::string::npos) << s.message();
  options.words = {"cat"};
  EXPECT_FALSE(CtcDecoder::Create({"<blank>", "c", "a", "t"}, options, &decoder)
                   .ok());           // no separator
  options.words = {"Cat", " dog "};  // lowered, trimmed
  EXPECT_TRUE(CtcDecoder::Create(labels, options, &decoder).ok());
  options.beam_width = kMaxCtcBeamWidth + 1;
  EXPECT_FALSE(CtcDecoder::Create(labels, options, &decoder).ok());

  options = CtcDecoderOptions();
  ASSERT_TRUE(CtcDecoder::Create(labels, options, &decoder).ok());
  std::vector<float> step(labels.size(), 0.0f);
  EXPECT_FALSE(decoder->Step(step.data(), step.size() - 1).ok());
  step[3] = NAN;
  EXPECT_FALSE(decoder->Step(step.data(), step.size()).ok());
  EXPECT_EQ(decoder->steps(), 0u);
}

// Hotwords. The bonus along a label sequence, as the automaton adds it up
// (after each label in *trace); *end gets the state it ends in.
double Bonus(const ctc::ContextGraph& graph,
             const std::vector<std::string>& labels, const std::string& text,
             std::vector<double>* trace = nullptr, int32_t* end = nullptr) {
  int32_t state = graph.start();
  double bonus = 0;
  for (char ch : text) {
    const int32_t next = graph.Next(state, IndexOf(labels, std::string(1, ch)));
    bonus += graph.Gain(state, next);
    state = next;
    if (trace) trace->push_back(bonus);
  }
  if (end) *end = state;
  return bonus;
}

ctc::ContextGraph Graph(const std::vector<std::string>& labels,
                        const std::vector<CtcHotword>& hotwords,
                        float boost = 1.0f) {
  ctc::LabelSet set;
  EXPECT_TRUE(ctc::MakeLabelSet(labels, &set).ok());
  ctc::ContextGraph graph;
  Status status = graph.Build(set, hotwords, boost);
  EXPECT_TRUE(status.ok()) << status.message();
  return graph;
}

// A text label of no text would decode as an empty word and a double
// space.
TEST(CtcLabels, AnEmptyLabelIsRefused) {
  ctc::LabelSet set;
  const Status status = ctc::MakeLabelSet({"<blank>", " ", "a", "b", ""}, &set);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("label 4 is empty"), std::string::npos)
      << status.message();
  // The blank's text is never used: index 0, the blank where no label is
  // named "<blank>", may be empty.
  EXPECT_TRUE(ctc::MakeLabelSet({"", " ", "a", "b"}, &set).ok());
  EXPECT_EQ(set.blank, 0);
}

// Each label of a phrase earns its boost (the leading separator nothing);
// a failed partial match gives back exactly what it earned; a completed
// phrase keeps its bonus; a match starts only at a word's start.
TEST(CtcHotwords, PartialMatchGivesItsBonusBack) {
  const auto labels = Letters();
  const auto graph = Graph(labels, {{"turn on", 2.0f}, {"the light", 0}});
  // "turn o" earns 2 x 6 (t u r n ' ' o); the f that breaks it, all back.
  std::vector<double> trace;
  EXPECT_EQ(Bonus(graph, labels, "turn of", &trace), 0.0);
  EXPECT_EQ(trace[5], 12.0);
  // "turn on " is complete: 2 x 8; "the l" earns 2 + 1 x 4 more (its t is
  // also the t of "turn on", whose boost is larger), then fails.
  trace.clear();
  EXPECT_EQ(Bonus(graph, labels, "turn on the lamp", &trace), 16.0);
  EXPECT_EQ(trace[7], 16.0);
  EXPECT_EQ(trace[12], 22.0);
  // Not from the middle of a word.
  EXPECT_EQ(Bonus(graph, labels, "return on"), 0.0);
  EXPECT_EQ(Bonus(graph, labels, "return on "), 0.0);
  // A failure keeps the longest suffix that starts a phrase: after
  // " a a a" the match of "a a b" restarts at the second a.
  const auto repeat = Graph(labels, {{"a a b", 0}});
  trace.clear();
  EXPECT_EQ(Bonus(repeat, labels, "a a a b ", &trace), 6.0);
  EXPECT_EQ(trace[3], 4.0);  // "a a " of "a a b"
  EXPECT_EQ(trace[4], 3.0);  // " a a" again: the first a given back
}

// The bonus when `text` ends, as the decoder ranks a final result: as if a
// separator followed.
double FinalBonus(const ctc::ContextGraph& graph,
                  const std::vector<std::string>& labels,
                  const std::string& text) {
  int32_t state = 0;
  const double bonus = Bonus(graph, labels, text, nullptr, &state);
  return bonus + graph.EndGain(state);
}

// A phrase inside a longer one's partial match keeps its bonus when the
// longer one fails, and no label earns twice: a phrase that begins inside
// a credited one (at one of its inner separators) is not credited, and a
// repeated phrase earns once per repetition.
TEST(CtcHotwords, InnerPhrasesKeepTheirBonusAndNoLabelEarnsTwice) {
  const auto labels = Letters();
  // "mom " keeps 3 x 4 when "call mom now" fails at "p"; "call " (5
  // labels at 1) is given back. It used to give back "mom" too, so that
  // adding "call mom now" made "tall mom please" outrank "call mom please".
  const auto mom = Graph(labels, {{"mom", 3.0f}, {"call mom now", 0}});
  std::vector<double> trace;
  EXPECT_EQ(Bonus(mom, labels, "call mom please", &trace), 12.0);
  EXPECT_EQ(trace[8], 17.0);  // "call mom ": 12 kept, 5 held
  EXPECT_EQ(FinalBonus(mom, labels, "tall mom please"), 12.0);
  // The longer phrase complete: "call " at 1, "mom " at its larger 3,
  // "now" at 1.
  EXPECT_EQ(FinalBonus(mom, labels, "call mom now"), 5.0 + 12.0 + 4.0);
  // A repeated phrase: each of its labels once per repetition; one more
  // "ha " is a partial match, given back at the end.
  const auto ha = Graph(labels, {{"ha ha", 0}});
  EXPECT_EQ(FinalBonus(ha, labels, "ha ha"), 6.0);
  EXPECT_EQ(FinalBonus(ha, labels, "ha ha ha"), 6.0);
  EXPECT_EQ(FinalBonus(ha, labels, "ha ha ha ha"), 12.0);
  // "ha ha ha" listed too: its 9 labels, once (it used to earn less than
  // "ha ha" alone gave).
  const auto ha3 = Graph(labels, {{"ha ha", 0}, {"ha ha ha", 0}});
  EXPECT_EQ(FinalBonus(ha3, labels, "ha ha ha"), 9.0);
  // "b c" would begin inside "a b" (at its inner separator): not credited.
  const auto ab = Graph(labels, {{"a b", 0}, {"b c", 0}});
  EXPECT_EQ(FinalBonus(ab, labels, "a b c"), 4.0);
  EXPECT_EQ(FinalBonus(ab, labels, "b c"), 4.0);
  // "b" credited inside the partial "a b x": "b c" may still begin at
  // its start, and adding "b" costs "a b c" nothing.
  const auto bc = Graph(labels, {{"b c", 0}, {"a b x", 0}});
  const auto bcb = Graph(labels, {{"b c", 0}, {"a b x", 0}, {"b", 0}});
  EXPECT_EQ(FinalBonus(bc, labels, "a b c"), 4.0);
  EXPECT_EQ(FinalBonus(bcb, labels, "a b c"), 4.0);
  // A credited phrase's labels earn its own boost, not a larger one of a
  // phrase it only begins.
  const auto light =
      Graph(labels, {{"turn on the light", 3.0f}, {"turn off the light", 0}});
  EXPECT_EQ(FinalBonus(light, labels, "turn off the light"), 19.0);
}

// Decoding: "ha ha", then a weak " ha" (each label 0.2 against the blank's
// 0.78). The hotword "ha ha" must not buy the repetition: its labels earned
// once already. "call" narrowly beats "tall" (c 0.55, t 0.4): the hotwords
// "mom" and "call mom now" must not turn it round.
TEST(CtcHotwords, CreditedLabelsDoNotBuyAnotherWord) {
  const auto labels = Letters();
  std::vector<std::vector<float>> steps;
  for (char ch : std::string("ha ha")) {
    steps.push_back(Step(labels, {{std::string(1, ch), 0.95}}));
    steps.push_back(Step(labels, {{"<blank>", 0.95}}));
  }
  for (const char* l : {" ", "h", "a"})
    steps.push_back(Step(labels, {{l, 0.2}, {"<blank>", 0.78}}));
  for (int i = 0; i < 3; ++i)
    steps.push_back(Step(labels, {{"<blank>", 0.98}}));
  CtcDecoderOptions options;
  options.beam_width = 8;
  std::unique_ptr<CtcDecoder> decoder;
  ASSERT_TRUE(CtcDecoder::Create(labels, options, &decoder).ok());
  EXPECT_EQ(Decode(*decoder, steps).text, "ha ha");
  options.hotwords = {{"ha ha", 0}};
  ASSERT_TRUE(CtcDecoder::Create(labels, options, &decoder).ok());
  EXPECT_EQ(Decode(*decoder, steps).text, "ha ha");

  steps.clear();
  steps.push_back(Step(labels, {{"c", 0.55}, {"t", 0.40}}));
  steps.push_back(Step(labels, {{"<blank>", 0.95}}));
  for (char ch : std::string("all mom please")) {
    steps.push_back(Step(labels, {{std::string(1, ch), 0.95}}));
    steps.push_back(Step(labels, {{"<blank>", 0.95}}));
  }
  options.hotwords = {{"mom", 0}, {"call mom now", 0}};
  ASSERT_TRUE(CtcDecoder::Create(labels, options, &decoder).ok());
  EXPECT_EQ(Decode(*decoder, steps).text, "call mom please");
}

// "cot" narrowly beats "cat" (o 0.6, a 0.3); the hotword "cat" turns it
// round, and the reported score is still P(cat) without any bonus. Words
// the scores make sure of are not forbidden.
TEST(CtcHotwords, BoostedPhraseWinsWhereItNarrowlyLost) {
  const auto labels = Letters();
  const auto steps = CotNarrowlyOverCat(labels);
  auto plain = Make(labels, 8);
  EXPECT_EQ(Decode(*plain, steps).text, "cot");
  CtcDecoderOptions options;
  options.beam_width = 8;
  options.hotwords = {{"cat", 0}};
  std::unique_ptr<CtcDecoder> boosted;
  ASSERT_TRUE(CtcDecoder::Create(labels, options, &boosted).ok());
  const CtcHypothesis h = Decode(*boosted, steps);
  EXPECT_EQ(h.text, "cat");
  // Up to what each beam let go of (the rest of the labels share 0.1).
  auto only_cat = Make(labels, 8, {"cat"});
  EXPECT_NEAR(h.log_score, Decode(*only_cat, steps).log_score, 1e-5);
  // A boost too small to outweigh a factor of 2 over 4 labels.
  options.hotwords = {{"cat", 0.1f}};
  ASSERT_TRUE(CtcDecoder::Create(labels, options, &boosted).ok());
  EXPECT_EQ(Decode(*boosted, steps).text, "cot");
  // With a word list too.
  options.hotwords = {{"cat", 0}};
  options.words = {"cat", "cot", "dog"};
  ASSERT_TRUE(CtcDecoder::Create(labels, options, &boosted).ok());
  EXPECT_EQ(Decode(*boosted, steps).text, "cat");
  options.words.clear();
  // Clear speech of another word stays that word.
  std::vector<std::vector<float>> dog;
  for (const char* l : {"d", "o", "g"}) {
    dog.push_back(Step(labels, {{l, 0.95}}));
    dog.push_back(Step(labels, {{"<blank>", 0.95}}));
  }
  ASSERT_TRUE(CtcDecoder::Create(labels, options, &boosted).ok());
  EXPECT_EQ(Decode(*boosted, dog).text, "dog");
  // Partial results rank by the bonus so far; the final one gives back an
  // unfinished match ("cat" of "catalog", too long to end in time).
  options.hotwords = {{"catalog", 2.0f}};
  ASSERT_TRUE(CtcDecoder::Create(labels, options, &boosted).ok());
  EXPECT_EQ(Decode(*boosted, steps).text, "cot");
}

// Phrases' total bonus when the text ends (as if with a separator), by an
// independent definition: scanning the words left to right, each place
// where a phrase's words begin earns boost x (its labels + 1), and the scan
// skips past it. Valid for phrases none of which can overlap another.
double ReferenceBonus(const std::string& text,
                      const std::vector<CtcHotword>& hotwords) {
  std::vector<std::string> words;
  std::string word;
  for (char ch : text + " ") {
    if (ch == ' ') {
      if (!word.empty()) words.push_back(word);
      word.clear();
    } else {
      word += ch;
    }
  }
  double bonus = 0;
  for (size_t i = 0; i < words.size();) {
    size_t advance = 1;
    for (const CtcHotword& h : hotwords) {
      std::string joined;
      size_t k = i;
      for (; k < words.size() && joined.size() < h.phrase.size(); ++k) {
        joined += (joined.empty() ? "" : " ") + words[k];
      }
      if (joined == h.phrase) {
        bonus += h.boost * (h.phrase.size() + 1);
        advance = k - i;
        break;
      }
    }
    i += advance;
  }
  return bonus;
}

// A beam wide enough to hold every prefix picks the labelling that
// maximises log P + bonus (prefixes merge as they go), over every
// labelling the beam can form (no leading or doubled separator).
TEST(CtcHotwords, WideBeamMatchesBruteForce) {
  const std::vector<CtcHotword> hotwords = {{"ab", 1.0f}, {"b a", 0.7f}};
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0, 1.5f);
  CtcDecoderOptions options;
  options.beam_width = kMaxCtcBeamWidth;
  options.hotwords = hotwords;
  std::unique_ptr<CtcDecoder> beam;
  ASSERT_TRUE(CtcDecoder::Create(kAb, options, &beam).ok());
  int changed = 0;
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<std::vector<float>> steps(5, std::vector<float>(4));
    for (auto& step : steps) {
      for (float& s : step) s = normal(rng);
    }
    double best_rank = -INFINITY, best_p = 0;
    std::vector<int> best, most_probable;
    double most_p = -1;
    for (const auto& [labelling, p] : BruteForce(steps, 0)) {
      bool formable = labelling.empty() || labelling[0] != 1;
      for (size_t i = 1; i < labelling.size(); ++i) {
        formable &= !(labelling[i] == 1 && labelling[i - 1] == 1);
      }
      if (!formable) continue;
      const double rank =
          std::log(p) + ReferenceBonus(Text(kAb, labelling), hotwords);
      if (rank > best_rank) {
        best_rank = rank;
        best = labelling;
        best_p = p;
      }
      if (p > most_p) {
        most_p = p;
        most_probable = labelling;
      }
    }
    changed += best != most_probable;
    std::string expected = Text(kAb, best);
    while (!expected.empty() && expected.back() == ' ') expected.pop_back();
    const CtcHypothesis h = Decode(*beam, steps);
    EXPECT_EQ(h.text, expected) << "trial " << trial;
    EXPECT_NEAR(std::exp(h.log_score), best_p, 1e-6) << "trial " << trial;
  }
  EXPECT_GT(changed, 0);  // the hotwords mattered somewhere
}

// The hotwords' bonus by the rules of tarn/ctc.hpp (Hotwords), written over
// strings, independently of the automaton. A phrase is spelled as a
// separator, its words joined by single separators, a separator; the text
// is read after a virtual separator, and positions count in it from that
// one, 0. After each label, every phrase whose spelling ends there is
// credited, unless it begins strictly inside a phrase credited before
// (found by trying every phrase at every end); each label of a credited
// phrase but its leading separator keeps the largest boost of the credited
// phrases over it. The match is the longest suffix that begins a phrase's
// spelling and does not begin strictly inside a credited phrase (found by
// trying every suffix); its labels that no credited phrase covers, after its
// leading separator, each hold the largest boost of the phrases whose
// spelling begins with the match up to that label. The bonus after some
// text is what is kept plus what the match holds; at the end of the text,
// as if a separator followed, only what is kept.
class ReferenceHotwords {
 public:
  ReferenceHotwords(const std::vector<CtcHotword>& hotwords,
                    double default_boost) {
    for (const CtcHotword& h : hotwords) {
      std::string spelling = " ", word;
      for (char ch : h.phrase + " ") {
        if (std::isspace(static_cast<unsigned char>(ch))) {
          if (!word.empty()) spelling += word + " ";
          word.clear();
        } else {
          word +=
              static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        }
      }
      spellings_.push_back(spelling);
      boosts_.push_back(h.boost > 0 ? h.boost : default_boost);
    }
  }

  // The bonus after each label of `text` (and the match there), and at its
  // end.
  double Bonus(const std::string& text, std::vector<double>* trace = nullptr,
               std::vector<std::string>* matches = nullptr) const {
    std::string seen = " ";
    std::vector<Credited> credited;
    for (char ch : text) {
      seen += ch;
      Credit(seen, &credited);
      const std::string match = Match(seen, credited);
      if (trace) trace->push_back(Kept(credited) + Held(seen, match, credited));
      if (matches) matches->push_back(match);
    }
    Credit(seen + " ", &credited);
    return Kept(credited);
  }

  // The phrases as spelled: " w1 w2 ... ".
  const std::vector<std::string>& spellings() const { return spellings_; }

 private:
  struct Credited {
    size_t begin, end;  // positions of its first and last separators
    double boost;
  };
  static bool Inside(size_t position, size_t before,
                     const std::vector<Credited>& credited) {
    for (const Credited& c : credited) {
      if (c.end < before && c.begin < position && position < c.end) return true;
    }
    return false;
  }
  // Credits the phrases that end at seen's last label.
  void Credit(const std::string& seen, std::vector<Credited>* credited) const {
    const size_t end = seen.size() - 1;
    for (size_t i = 0; i < spellings_.size(); ++i) {
      const std::string& spelling = spellings_[i];
      if (spelling.size() > seen.size() ||
          seen.compare(seen.size() - spelling.size(), spelling.size(),
                       spelling) != 0) {
        continue;
      }
      const size_t begin = seen.size() - spelling.size();
      if (!Inside(begin, end, *credited))
        credited->push_back({begin, end, boosts_[i]});
    }
  }
  static double Cover(size_t position, const std::vector<Credited>& credited) {
    double largest = -1;
    for (const Credited& c : credited) {
      if (c.begin < position && position <= c.end)
        largest = std::max(largest, c.boost);
    }
    return largest;
  }
  static double Kept(const std::vector<Credited>& credited) {
    size_t last = 0;
    for (const Credited& c : credited) last = std::max(last, c.end);
    double kept = 0;
    for (size_t position = 1; position <= last; ++position)
      kept += std::max(0.0, Cover(position, credited));
    return kept;
  }
  bool Begins(const std::string& u, size_t phrase) const {
    return spellings_[phrase].compare(0, u.size(), u) == 0;
  }
  std::string Match(const std::string& seen,
                    const std::vector<Credited>& credited) const {
    for (size_t k = 0; k < seen.size(); ++k) {
      if (Inside(k, seen.size() - 1, credited)) continue;
      const std::string suffix = seen.substr(k);
      for (size_t i = 0; i < spellings_.size(); ++i) {
        if (Begins(suffix, i)) return suffix;
      }
    }
    return "";
  }
  double Held(const std::string& seen, const std::string& match,
              const std::vector<Credited>& credited) const {
    const size_t first = seen.size() - match.size();
    double held = 0;
    for (size_t n = 2; n <= match.size(); ++n) {
      if (Cover(first + n - 1, credited) >= 0) continue;
      double largest = 0;
      for (size_t i = 0; i < spellings_.size(); ++i) {
        if (Begins(match.substr(0, n), i))
          largest = std::max(largest, boosts_[i]);
      }
      held += largest;
    }
    return held;
  }

  std::vector<std::string> spellings_;
  std::vector<double> boosts_;
};

std::vector<std::string> SplitWords(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  for (char ch : text + " ") {
    if (ch == ' ') {
      if (!word.empty()) words.push_back(word);
      word.clear();
    } else {
      word += ch;
    }
  }
  return words;
}

std::string JoinWords(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& word : words)
    text += (text.empty() ? "" : " ") + word;
  return text;
}

// Labels blank, separator, a, b, c: short words over three letters, so that
// random phrases overlap, repeat words and share labels.
const std::vector<std::string> kAbc = {"<blank>", " ", "a", "b", "c"};

std::string RandomWord(std::mt19937& rng) {
  std::string word;
  for (uint32_t k = 0, n = 1 + rng() % 2; k < n; ++k) word += "abc"[rng() % 3];
  return word;
}

// One to four phrases of one to three words, each new one made from an
// earlier one where there is one: a prefix of it (whole words, or the first
// word cut short), it followed by more words, its last words followed by
// others (an overlap), a word of it repeated, or the same phrase again;
// boosts in quarters of a nat, 0 (the default) among them; now and then a
// capital or a doubled space, which the automaton's spelling undoes.
std::vector<CtcHotword> RandomHotwords(std::mt19937& rng) {
  std::vector<CtcHotword> hotwords;
  for (uint32_t count = 1 + rng() % 4; hotwords.size() < count;) {
    std::vector<std::string> words;
    if (hotwords.empty() || rng() % 6 == 0) {
      for (uint32_t k = 0, n = 1 + rng() % 3; k < n; ++k)
        words.push_back(RandomWord(rng));
    } else {
      const auto other =
          SplitWords(ReferenceHotwords({hotwords[rng() % hotwords.size()]}, 1)
                         .spellings()[0]);
      const size_t n = other.size();
      switch (rng() % 5) {
        case 0:  // a prefix
          words.assign(other.begin(), other.begin() + 1 + rng() % n);
          if (words.size() == n && words.back().size() > 1)
            words.back().pop_back();
          break;
        case 1:  // longer
          words = other;
          words.push_back(RandomWord(rng));
          break;
        case 2:  // overlapping
          words.assign(other.begin() + rng() % n, other.end());
          words.push_back(RandomWord(rng));
          break;
        case 3: {  // a word repeated
          words = other;
          const size_t at = rng() % n;
          words.insert(words.begin() + at, words[at]);
          break;
        }
        default:  // the same phrase, maybe another boost
          words = other;
      }
      if (words.size() > 3) words.erase(words.begin(), words.end() - 3);
    }
    std::string phrase = JoinWords(words);
    if (rng() % 8 == 0) {
      phrase[0] = static_cast<char>(std::toupper(phrase[0]));
      const size_t space = phrase.find(' ');
      if (space != std::string::npos) phrase.insert(space, " ");
    }
    hotwords.push_back({phrase, 0.25f * (rng() % 9)});
  }
  return hotwords;
}

// A text the beam search can form (no leading or doubled separator), mostly
// of the phrases' words: words, whole phrases and random words, cut at a
// random length of at most 14 labels (maybe inside a word, or after a
// separator).
std::string RandomText(std::mt19937& rng,
                       const std::vector<std::string>& spellings) {
  std::vector<std::string> words;
  for (uint32_t k = 0, n = rng() % 5; k < n; ++k) {
    const auto phrase = SplitWords(spellings[rng() % spellings.size()]);
    switch (rng() % 3) {
      case 0:
        words.insert(words.end(), phrase.begin(), phrase.end());
        break;
      case 1:
        words.push_back(phrase[rng() % phrase.size()]);
        break;
      default:
        words.push_back(RandomWord(rng));
    }
  }
  std::string text = JoinWords(words) + " ";
  if (text == " ") return "";
  return text.substr(0, std::min<size_t>(14, rng() % (text.size() + 1)));
}

std::string Describe(const std::vector<CtcHotword>& hotwords) {
  std::string out;
  for (const CtcHotword& h : hotwords)
    out += " [" + h.phrase + ":" + std::to_string(h.boost) + "]";
  return out;
}

// The automaton (Next, Gain, EndGain) against the reference over seeded
// random phrase sets: the bonus after every label and at the end of each
// text, and one state per match (prefixes that merge share a state).
TEST(CtcHotwords, AutomatonFollowsTheRulesOverRandomPhrases) {
  // The reference on PartialMatchGivesItsBonusBack's worked examples.
  const ReferenceHotwords turn_on({{"turn on", 2.0f}, {"the light", 0}}, 1);
  std::vector<double> trace;
  EXPECT_EQ(turn_on.Bonus("turn of", &trace), 0.0);
  EXPECT_EQ(trace[5], 12.0);
  trace.clear();
  EXPECT_EQ(turn_on.Bonus("turn on the lamp", &trace), 16.0);
  EXPECT_EQ(trace[12], 22.0);
  EXPECT_EQ(turn_on.Bonus("return on"), 0.0);
  trace.clear();
  EXPECT_EQ(ReferenceHotwords({{"a a b", 0}}, 1).Bonus("a a a b ", &trace),
            6.0);
  EXPECT_EQ(trace[3], 4.0);
  EXPECT_EQ(trace[4], 3.0);

  std::mt19937 rng(13);
  constexpr float kDefaultBoost = 1.5f;
  int given_back = 0, kept = 0, completed_by_end = 0, prefixes = 0,
      overlaps = 0;
  for (int set = 0; set < 300; ++set) {
    const std::vector<CtcHotword> hotwords = RandomHotwords(rng);
    const ReferenceHotwords reference(hotwords, kDefaultBoost);
    const ctc::ContextGraph graph = Graph(kAbc, hotwords, kDefaultBoost);
    for (const std::string& a : reference.spellings()) {
      for (const std::string& b : reference.spellings()) {
        // a begins b; a's end (from one of its separators) begins b.
        prefixes += a.size() < b.size() && b.compare(0, a.size(), a) == 0;
        for (size_t k = 1; k + 1 < a.size(); ++k) {
          overlaps += a[k] == ' ' && b.compare(0, a.size() - k, a, k) == 0;
        }
      }
    }
    std::map<std::string, int32_t> state_of = {{" ", graph.start()}};
    std::map<int32_t, std::string> match_of = {{graph.start(), " "}};
    for (int t = 0; t < 20; ++t) {
      const std::string text = RandomText(rng, reference.spellings());
      SCOPED_TRACE("set " + std::to_string(set) + Describe(hotwords) +
                   ", text \"" + text + "\"");
      std::vector<double> expected;
      std::vector<std::string> matches;
      const double at_end = reference.Bonus(text, &expected, &matches);
      int32_t state = graph.start();
      double bonus = 0;
      for (size_t i = 0; i < text.size(); ++i) {
        const int32_t next =
            graph.Next(state, IndexOf(kAbc, std::string(1, text[i])));
        bonus += graph.Gain(state, next);
        state = next;
        ASSERT_NEAR(bonus, expected[i], 1e-9) << "after label " << i;
        ASSERT_EQ(state_of.emplace(matches[i], state).first->second, state)
            << "match \"" << matches[i] << "\" after label " << i;
        ASSERT_EQ(match_of.emplace(state, matches[i]).first->second, matches[i])
            << "state " << state << " after label " << i;
        given_back += i > 0 && expected[i] < expected[i - 1];
      }
      ASSERT_NEAR(bonus + graph.EndGain(state), at_end, 1e-9) << "at the end";
      kept += at_end > 0;
      completed_by_end += at_end > (text.empty() ? 0 : expected.back());
    }
  }
  // Every rule was exercised.
  EXPECT_GT(prefixes, 100);    // (phrase pairs) one begins another
  EXPECT_GT(overlaps, 200);    // one's last words begin another, or itself
  EXPECT_GT(given_back, 500);  // (labels) a failed match
  EXPECT_GT(kept, 1000);       // (texts) a bonus at the end
  EXPECT_GT(completed_by_end, 300);  // the end completes a phrase
}

// A beam wide enough to hold every prefix (at most 232 prefixes of 4 labels
// are formable: all are kept until the last step) against every labelling
// of 5 steps over 5 labels, with random phrase sets as above and, in half
// the trials, a word list: the labelling that maximises log P + the
// reference's bonus at the end, among those the beam can form and, with a
// word list, whose words are all listed; its text and probability.
TEST(CtcHotwords, WideBeamMatchesBruteForceOverRandomPhrases) {
  std::mt19937 rng(17);
  std::normal_distribution<float> normal(0, 1.5f);
  int changed = 0, with_words = 0;
  for (int trial = 0; trial < 300; ++trial) {
    CtcDecoderOptions options;
    options.beam_width = kMaxCtcBeamWidth;
    options.max_labels = 8;
    options.hotwords = RandomHotwords(rng);
    options.hotword_boost = 1.5f;
    const ReferenceHotwords reference(options.hotwords, options.hotword_boost);
    if (rng() % 2) {
      for (uint32_t k = 0, n = 2 + rng() % 4; k < n; ++k) {
        const auto phrase = SplitWords(
            reference.spellings()[rng() % reference.spellings().size()]);
        options.words.push_back(rng() % 2 ? phrase[rng() % phrase.size()]
                                          : RandomWord(rng));
      }
      // Every hotword's words: the decoder refuses one it could never emit.
      for (const std::string& spelling : reference.spellings()) {
        for (const std::string& word : SplitWords(spelling))
          options.words.push_back(word);
      }
      ++with_words;
    }
    std::vector<std::vector<float>> steps(5, std::vector<float>(kAbc.size()));
    for (auto& step : steps) {
      for (float& s : step) s = normal(rng);
    }
    double best_rank = -INFINITY, best_p = 0, most_p = -1;
    std::string best, most_probable;
    for (const auto& [labelling, p] : BruteForce(steps, 0)) {
      const std::string text = Text(kAbc, labelling);
      if (text.find("  ") != std::string::npos || text[0] == ' ') continue;
      bool listed = true;
      for (const std::string& word : SplitWords(text)) {
        listed &= options.words.empty() ||
                  std::find(options.words.begin(), options.words.end(), word) !=
                      options.words.end();
      }
      if (!listed) continue;
      std::string trimmed = text;
      if (!trimmed.empty() && trimmed.back() == ' ') trimmed.pop_back();
      const double rank = std::log(p) + reference.Bonus(text);
      if (rank > best_rank) {
        best_rank = rank;
        best_p = p;
        best = trimmed;
      }
      if (p > most_p) {
        most_p = p;
        most_probable = trimmed;
      }
    }
    changed += best != most_probable;
    std::unique_ptr<CtcDecoder> beam;
    Status status = CtcDecoder::Create(kAbc, options, &beam);
    ASSERT_TRUE(status.ok()) << status.message();
    const CtcHypothesis h = Decode(*beam, steps);
    std::string words;
    for (const std::string& w : options.words) words += " " + w;
    EXPECT_EQ(h.text, best) << "trial " << trial << Describe(options.hotwords)
                            << ", words" << words;
    // (BruteForce sums float exponentials.)
    EXPECT_NEAR(h.log_score, std::log(best_p), 1e-6) << "trial " << trial;
  }
  EXPECT_GT(changed, 75);  // the hotwords mattered
  EXPECT_GT(with_words, 100);
}

TEST(CtcHotwords, RefusesWhatItCannotDo) {
  const auto labels = Letters();
  std::unique_ptr<CtcDecoder> decoder;
  CtcDecoderOptions options;
  options.hotwords = {{"turn on", 0}};
  Status s = CtcDecoder::Create(labels, options, &decoder);  // greedy
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("beam"), std::string::npos) << s.message();
  options.beam_width = 4;
  EXPECT_TRUE(CtcDecoder::Create(labels, options, &decoder).ok());
  options.hotwords = {{"turn on", 0}, {"caf\xc3\xa9 au lait", 0}};
  s = CtcDecoder::Create(labels, options, &decoder);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("hotword 1"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("\"\xc3\xa9\""), std::string::npos) << s.message();
  options.hotwords = {{"  \t", 0}};
  s = CtcDecoder::Create(labels, options, &decoder);
  EXPECT_NE(s.message().find("empty"), std::string::npos) << s.message();
  options.hotwords = {{"on", -1.0f}};
  EXPECT_FALSE(CtcDecoder::Create(labels, options, &decoder).ok());
  options.hotwords = {{"on", NAN}};
  EXPECT_FALSE(CtcDecoder::Create(labels, options, &decoder).ok());
  options.hotwords = {{"on", 0}};
  options.hotword_boost = 0;
  EXPECT_FALSE(CtcDecoder::Create(labels, options, &decoder).ok());
  options.hotword_boost = INFINITY;
  EXPECT_FALSE(CtcDecoder::Create(labels, options, &decoder).ok());
  // Boosts past kMaxHotwordBoost (1e20 swamped the beam's sums: an
  // unfinished match then kept its bonus).
  options.hotword_boost = kMaxHotwordBoost;
  EXPECT_TRUE(CtcDecoder::Create(labels, options, &decoder).ok());
  options.hotword_boost = 1e20f;
  s = CtcDecoder::Create(labels, options, &decoder);
  EXPECT_NE(s.message().find("at most 100"), std::string::npos) << s.message();
  options.hotword_boost = 1;
  options.hotwords = {{"on", 101.0f}};
  s = CtcDecoder::Create(labels, options, &decoder);
  EXPECT_NE(s.message().find("hotword 0"), std::string::npos) << s.message();
  options.hotwords = {{"on", 0}};
  EXPECT_FALSE(  // no separator
      CtcDecoder::Create({"<blank>", "o", "n"}, options, &decoder).ok());
  // A word the word list lacks could never be emitted: the phrase would
  // silently never match.
  options.words = {"turn", "on", "the", "light"};
  options.hotwords = {{"turn on", 0}, {"What time is it", 0}};
  s = CtcDecoder::Create(labels, options, &decoder);
  EXPECT_NE(s.message().find("hotword 1 (\"What time is it\"): \"what\" is "
                             "not in the word list"),
            std::string::npos)
      << s.message();
  options.words = {"turn", "on", "what", "time", "is", "it"};
  EXPECT_TRUE(CtcDecoder::Create(labels, options, &decoder).ok());
  options.words = {"turn", "on", "what", "time", "is", "i"};  // a prefix only
  EXPECT_FALSE(CtcDecoder::Create(labels, options, &decoder).ok());
  options.words.clear();
  // A phrase of kMaxHotwordLabels labels, its separators included (here
  // one word of kMaxHotwordLabels - 2 letters), and one more.
  const std::string phrase(kMaxHotwordLabels - 2, 'a');
  options.hotwords = {{phrase, 0}};
  EXPECT_TRUE(CtcDecoder::Create(labels, options, &decoder).ok());
  options.hotwords = {{"on", 0}, {phrase + "b", 0}};
  s = CtcDecoder::Create(labels, options, &decoder);
  EXPECT_NE(s.message().find("hotword 1 "), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("at most 256"), std::string::npos) << s.message();
  options.hotwords = {{"Turn  ON", 0}};  // lowered, spaces collapsed
  EXPECT_TRUE(CtcDecoder::Create(labels, options, &decoder).ok());
  // A beam whose prefix tree would not fit kMaxCtcDecoderBytes is refused
  // by name (256 x 2^24 labels needed 206 GB and threw std::bad_alloc).
  options.beam_width = kMaxCtcBeamWidth;
  options.max_labels = 1u << 24;
  s = CtcDecoder::Create(labels, options, &decoder);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("a beam of 256 over 29 labels with max_labels "
                             "16777216 needs"),
            std::string::npos)
      << s.message();
  options.max_labels = 4096;
  EXPECT_TRUE(CtcDecoder::Create(labels, options, &decoder).ok());
}

}  // namespace
}  // namespace tarn
