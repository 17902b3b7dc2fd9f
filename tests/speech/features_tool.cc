// speech_features MODEL.tarn AUDIO OUT.npy CHUNKS [WARP]
//
// Runs the C++ front end with MODEL's recipe over AUDIO (any file libsndfile
// reads, mono) fed in chunks, and writes the features [frames, mel bins] as
// float32 .npy, for test_front_end.py to compare with features.py. CHUNKS:
// a size in samples ("1", "7", "160", ...), "all" (one call), or
// "random:SEED" (sizes drawn from 1..2000). WARP: the front end's vocal
// tract warp (AudioFrontEndConfig::warp), default 1.

#include <sndfile.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "tarn/audio.hpp"
#include "tarn/tarn.hpp"

namespace {

int Fail(const std::string& message) {
  std::cerr << "speech_features: " << message << "\n";
  return 1;
}

bool WriteNpy(const std::string& path, size_t rows, size_t cols,
              const std::vector<float>& data) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" +
                       std::to_string(rows) + ", " + std::to_string(cols) +
                       "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const unsigned char magic[] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  const uint16_t length = static_cast<uint16_t>(header.size());
  const unsigned char len[] = {static_cast<unsigned char>(length & 0xff),
                               static_cast<unsigned char>(length >> 8)};
  bool ok = std::fwrite(magic, 1, 8, f) == 8 && std::fwrite(len, 1, 2, f) == 2;
  ok = ok && std::fwrite(header.data(), 1, header.size(), f) == header.size();
  ok = ok &&
       std::fwrite(data.data(), sizeof(float), data.size(), f) == data.size();
  return std::fclose(f) == 0 && ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5 && argc != 6) {
    return Fail("usage: MODEL.tarn AUDIO OUT.npy CHUNKS [WARP]");
  }
  std::unique_ptr<tarn::Model> model;
  tarn::Status status = tarn::Model::Load(argv[1], &model);
  if (!status.ok()) return Fail(status.message());
  tarn::AudioFrontEndConfig recipe;
  status = tarn::ReadAudioFrontEnd(*model, &recipe);
  if (!status.ok()) return Fail(status.message());
  if (argc == 6) recipe.warp = std::stof(argv[5]);
  std::unique_ptr<tarn::FrontEnd> front_end;
  status = tarn::FrontEnd::Create(recipe, &front_end);
  if (!status.ok()) return Fail(status.message());

  SF_INFO info{};
  SNDFILE* file = sf_open(argv[2], SFM_READ, &info);
  if (file == nullptr) return Fail(sf_strerror(nullptr));
  if (info.channels != 1) return Fail("mono audio only");
  std::vector<float> samples(static_cast<size_t>(info.frames));
  const sf_count_t got = sf_readf_float(file, samples.data(), info.frames);
  sf_close(file);
  if (got != info.frames) return Fail("short read");

  const std::string chunks = argv[4];
  std::mt19937 rng;
  std::uniform_int_distribution<size_t> sizes(1, 2000);
  size_t fixed = 0;
  if (chunks == "all") {
    fixed = samples.size();
  } else if (chunks.rfind("random:", 0) == 0) {
    rng.seed(static_cast<unsigned>(std::stoul(chunks.substr(7))));
  } else {
    fixed = std::stoul(chunks);
    if (fixed == 0) return Fail("chunks of 0 samples");
  }
  std::vector<float> out;
  const size_t width = front_end->num_features();
  size_t position = 0;
  while (position < samples.size()) {
    const size_t n =
        std::min(samples.size() - position, fixed > 0 ? fixed : sizes(rng));
    front_end->Accept(samples.data() + position, n, [&](const float* frame) {
      out.insert(out.end(), frame, frame + width);
    });
    position += n;
  }
  if (!WriteNpy(argv[3], out.size() / width, width, out)) {
    return Fail(std::string("cannot write ") + argv[3]);
  }
  return 0;
}
