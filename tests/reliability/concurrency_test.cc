// Many threads, one Model: each thread runs its own sessions (and its own
// SessionBatch) on a model they all share, and every stream's outputs must
// equal, bit for bit, those of the same stream run alone. Built and run under
// ThreadSanitizer by scripts/test.sh (TARN_SANITIZE=thread), where a data race
// fails the test.
//
// Models: the fuzzers' tiny seeds (every kind: tokens, stacked frames,
// favor+, convolution, learned positions) and, when $TARN_GOLDENS holds
// them, the golden token and speech models, whose widths take the dense
// kernels' full-block paths.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tarn/tarn.hpp"

namespace tarn {
namespace {

// One stream's inputs, fixed by its seed: tokens or frames.
class Stream {
 public:
  Stream(const Model& model, uint32_t seed) : model_(model), state_(seed | 1) {}

  // Feeds `steps` inputs; returns every output the session produced.
  std::vector<float> Run(Session& session, int steps) {
    const ModelConfig& c = model_.config();
    std::vector<float> outputs, output(model_.output_size()),
        frame(model_.frame_size());
    for (int i = 0; i < steps; ++i) {
      Status status;
      bool stepped = true;
      if (c.input_kind == InputKind::kTokens) {
        status = session.StepToken(static_cast<int32_t>(Next() % c.vocab_size),
                                   output.data(), output.size());
      } else {
        for (float& v : frame)
          v = static_cast<float>(Next() % 2001) / 1000.0f - 1.0f;
        status = session.StepFrame(frame.data(), frame.size(), output.data(),
                                   output.size(), &stepped);
      }
      if (!status.ok()) {
        ADD_FAILURE() << status.message();
        break;
      }
      if (stepped) outputs.insert(outputs.end(), output.begin(), output.end());
    }
    return outputs;
  }

 private:
  uint32_t Next() {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 17;
    state_ ^= state_ << 5;
    return state_;
  }
  const Model& model_;
  uint32_t state_;
};

std::vector<std::string> ModelPaths() {
  std::vector<std::string> paths;
  for (const char* seed :
       {"tokens_elu_post_sinusoidal", "tokens_relu_pre_gelu_learned",
        "tokens_favor_stabilize_two_layers", "tokens_f16_no_head",
        "frames_projected_conv_labels", "frames_stacked_relu", "speech"}) {
    paths.push_back(std::filesystem::path(TARN_FUZZ_SEEDS) /
                    (std::string(seed) + ".tarn"));
  }
  if (const char* goldens = std::getenv("TARN_GOLDENS")) {
    for (const char* name : {"tokens", "speech"}) {
      const std::string path =
          std::string(goldens) + "/" + name + "/model.tarn";
      if (std::ifstream(path)) paths.push_back(path);
    }
  }
  return paths;
}

std::unique_ptr<Model> LoadModel(const std::string& path) {
  std::unique_ptr<Model> model;
  Status status = Model::Load(path, &model);
  EXPECT_TRUE(status.ok()) << status.message();
  return model;
}

// Steps short enough for ThreadSanitizer (5-15x slower) on the golden
// models, and within a learned position table.
int StepsFor(const Model& model, int wanted = 200) {
  const ModelConfig& c = model.config();
  int steps = c.d_model > 16 ? std::min(wanted, 60) : wanted;
  if (c.position == Position::kLearned)
    steps = std::min<int>(steps, static_cast<int>(c.max_positions));
  return steps;
}

constexpr int kThreads = 4;
constexpr int kSessionsPerThread = 2;

TEST(Concurrency, SessionsOnOneModelMatchTheSameStreamsRunAlone) {
  for (const std::string& path : ModelPaths()) {
    SCOPED_TRACE(path);
    std::unique_ptr<Model> model = LoadModel(path);
    ASSERT_TRUE(model);
    const int steps = StepsFor(*model);
    const int streams = kThreads * kSessionsPerThread;

    std::vector<std::vector<float>> alone(streams);
    for (int s = 0; s < streams; ++s) {
      std::unique_ptr<Session> session;
      ASSERT_TRUE(Session::Create(*model, SessionOptions(), &session).ok());
      alone[s] = Stream(*model, 1000 + s).Run(*session, steps);
      ASSERT_FALSE(alone[s].empty());
    }

    // Each thread interleaves its sessions a few steps at a time, so that
    // steps of different sessions overlap in every order.
    std::vector<std::vector<float>> together(streams);
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        std::vector<std::unique_ptr<Session>> sessions(kSessionsPerThread);
        std::vector<Stream> inputs;
        for (int j = 0; j < kSessionsPerThread; ++j) {
          Status status =
              Session::Create(*model, SessionOptions(), &sessions[j]);
          if (!status.ok()) {
            ADD_FAILURE() << status.message();
            return;
          }
          inputs.emplace_back(*model, 1000 + t * kSessionsPerThread + j);
        }
        ready.fetch_add(1);
        while (ready.load() < kThreads) std::this_thread::yield();
        for (int done = 0; done < steps; done += 5) {
          for (int j = 0; j < kSessionsPerThread; ++j) {
            std::vector<float> part =
                inputs[j].Run(*sessions[j], std::min(5, steps - done));
            auto& out = together[t * kSessionsPerThread + j];
            out.insert(out.end(), part.begin(), part.end());
          }
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    for (int s = 0; s < streams; ++s)
      EXPECT_EQ(together[s], alone[s]) << "stream " << s;
  }
}

// Models loaded and sessions created, stepped and freed on many threads at
// once, from the first call in the process (the kernel table's
// initialisation races here if anywhere); then each model's stream run
// alone, which every thread's outputs must equal bit for bit.
TEST(Concurrency, LoadCreateStepFreeFromManyThreadsAtOnce) {
  const std::vector<std::string> paths = ModelPaths();
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  // outputs[t][k]: thread t's outputs of paths[k].
  std::vector<std::vector<std::vector<float>>> outputs(
      kThreads, std::vector<std::vector<float>>(paths.size()));
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      for (size_t i = 0; i < paths.size(); ++i) {
        const size_t k = (i + t) % paths.size();
        std::unique_ptr<Model> model = LoadModel(paths[k]);
        if (!model) return;
        std::unique_ptr<Session> session;
        if (!Session::Create(*model, SessionOptions(), &session).ok()) {
          ADD_FAILURE() << "Session::Create failed";
          return;
        }
        outputs[t][k] = Stream(*model, 7).Run(*session, StepsFor(*model, 20));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  for (size_t k = 0; k < paths.size(); ++k) {
    SCOPED_TRACE(paths[k]);
    std::unique_ptr<Model> model = LoadModel(paths[k]);
    ASSERT_TRUE(model);
    std::unique_ptr<Session> session;
    ASSERT_TRUE(Session::Create(*model, SessionOptions(), &session).ok());
    const std::vector<float> alone =
        Stream(*model, 7).Run(*session, StepsFor(*model, 20));
    ASSERT_FALSE(alone.empty());
    for (int t = 0; t < kThreads; ++t)
      EXPECT_EQ(outputs[t][k], alone) << "thread " << t;
  }
}

// A session with its own thread pool (num_threads = 2) beside a
// single-threaded one on the same model, on a token and a frame model.
// pthreadpool's workers spin while they wait: kept short for small machines.
TEST(Concurrency, ThreadPoolSessionBesideAnother) {
  const std::vector<std::string> paths = ModelPaths();
  for (const std::string& path : {paths.front(), paths.back()}) {
    SCOPED_TRACE(path);
    std::unique_ptr<Model> model = LoadModel(path);
    ASSERT_TRUE(model);
    const int steps = StepsFor(*model, 30);
    std::unique_ptr<Session> reference;
    ASSERT_TRUE(Session::Create(*model, SessionOptions(), &reference).ok());
    const std::vector<float> expected =
        Stream(*model, 5).Run(*reference, steps);

    std::vector<std::vector<float>> got(2);
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t) {
      threads.emplace_back([&, t] {
        SessionOptions options;
        options.num_threads = t + 1;
        std::unique_ptr<Session> session;
        Status status = Session::Create(*model, options, &session);
        if (!status.ok()) {
          ADD_FAILURE() << status.message();
          return;
        }
        got[t] = Stream(*model, 5).Run(*session, steps);
      });
    }
    for (std::thread& thread : threads) thread.join();
    // Threads split the dense layers' output rows, never a dot product: the
    // sums are the same, in the same order.
    for (int t = 0; t < 2; ++t)
      EXPECT_EQ(got[t], expected) << (t + 1) << " threads";
  }
}

// Batched calls: each thread steps its own streams through its own
// SessionBatch on the shared model, and single steps of a session between
// batch calls; every stream must equal the same stream stepped alone.
TEST(Concurrency, BatchesOnOneModelFromManyThreads) {
  for (const std::string& path : ModelPaths()) {
    SCOPED_TRACE(path);
    std::unique_ptr<Model> model = LoadModel(path);
    ASSERT_TRUE(model);
    const ModelConfig& c = model->config();
    const int rounds = StepsFor(*model, 40);
    constexpr int kStreams = 3;
    const size_t out = model->output_size(), width = model->frame_size();

    // Stream s of thread t sees input number i: a token or a frame.
    auto token = [&](int t, int s, int i) {
      return static_cast<int32_t>((t * 131 + s * 17 + i * 7) % c.vocab_size);
    };
    auto frame = [&](int t, int s, int i, std::vector<float>* f) {
      for (size_t j = 0; j < width; ++j)
        (*f)[j] =
            static_cast<float>((t * 131 + s * 17 + i * 7 + j) % 23) / 11.0f -
            1.0f;
    };
    // One stream alone: rounds inputs, each output kept (zeros when the
    // model did not step).
    auto alone = [&](int t, int s) {
      std::unique_ptr<Session> session;
      EXPECT_TRUE(Session::Create(*model, SessionOptions(), &session).ok());
      std::vector<float> outputs(rounds * out), f(width);
      for (int i = 0; i < rounds; ++i) {
        Status status;
        if (c.input_kind == InputKind::kTokens) {
          status = session->StepToken(token(t, s, i), &outputs[i * out], out);
        } else {
          bool stepped;
          frame(t, s, i, &f);
          status = session->StepFrame(f.data(), width, &outputs[i * out], out,
                                      &stepped);
          if (!stepped) std::fill_n(&outputs[i * out], out, 0.0f);
        }
        EXPECT_TRUE(status.ok()) << status.message();
      }
      return outputs;
    };

    std::vector<std::vector<std::vector<float>>> got(
        kThreads, std::vector<std::vector<float>>(kStreams));
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        BatchOptions options;
        options.max_streams = kStreams;
        std::unique_ptr<SessionBatch> batch;
        std::vector<std::unique_ptr<Session>> owned(kStreams);
        std::vector<Session*> sessions;
        Status status = SessionBatch::Create(*model, options, &batch);
        for (auto& session : owned) {
          if (status.ok())
            status = Session::Create(*model, SessionOptions(), &session);
          sessions.push_back(session.get());
        }
        if (!status.ok()) {
          ADD_FAILURE() << status.message();
          return;
        }
        for (auto& g : got[t]) g.assign(rounds * out, 0.0f);
        std::vector<int32_t> tokens(kStreams);
        std::vector<float> frames(kStreams * width), outputs(kStreams * out);
        bool stepped[kStreams];
        ready.fetch_add(1);
        while (ready.load() < kThreads) std::this_thread::yield();
        for (int i = 0; i < rounds; ++i) {
          if (i % 4 == 3) {
            // Stream 0 alone between batch calls; the others in a batch.
            for (int s = 0; s < kStreams; ++s) {
              std::vector<float> f(width);
              bool one_stepped = true;
              if (c.input_kind == InputKind::kTokens) {
                status = sessions[s]->StepToken(token(t, s, i),
                                                &got[t][s][i * out], out);
              } else {
                frame(t, s, i, &f);
                status = sessions[s]->StepFrame(
                    f.data(), width, &got[t][s][i * out], out, &one_stepped);
              }
              if (!one_stepped) std::fill_n(&got[t][s][i * out], out, 0.0f);
            }
          } else if (c.input_kind == InputKind::kTokens) {
            for (int s = 0; s < kStreams; ++s) tokens[s] = token(t, s, i);
            status = batch->StepTokens(sessions.data(), tokens.data(), kStreams,
                                       outputs.data(), outputs.size());
            for (int s = 0; s < kStreams; ++s)
              std::copy_n(&outputs[s * out], out, &got[t][s][i * out]);
          } else {
            for (int s = 0; s < kStreams; ++s) {
              std::vector<float> f(width);
              frame(t, s, i, &f);
              std::copy(f.begin(), f.end(), &frames[s * width]);
            }
            status = batch->StepFrames(sessions.data(), frames.data(), kStreams,
                                       outputs.data(), outputs.size(), stepped);
            for (int s = 0; s < kStreams; ++s) {
              if (stepped[s])
                std::copy_n(&outputs[s * out], out, &got[t][s][i * out]);
            }
          }
          if (!status.ok()) {
            ADD_FAILURE() << status.message();
            return;
          }
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    for (int t = 0; t < kThreads; ++t) {
      for (int s = 0; s < kStreams; ++s)
        EXPECT_EQ(got[t][s], alone(t, s)) << "thread " << t << " stream " << s;
    }
  }
}

}  // namespace
}  // namespace tarn
