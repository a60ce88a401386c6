// gradcache-hf-speed-bench: the speed of gradcache::hf's SentenceTransformer on batches of token
// ids that bench/hf_speed.py made with the Python tokenizer, so that both sides run the same
// batches. Prints one JSON object per measurement:
//   encode <set>: sequences per second of forward passes without graph, each batch once per pass;
//   cache step:   seconds per GradCache step (cosine InfoNCE, temperature 0.05, dropout on).
//
//   gradcache-hf-speed-bench MODEL_DIR INPUTS.safetensors THREADS [REPEATS]
#include <gradcache/gradcache.h>
#include <gradcache/hf/sentence_transformer.h>

#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

namespace hf = gradcache::hf;
using Batch = std::map<std::string, at::Tensor>;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Batches "<set>.ids.<i>" / "<set>.mask.<i>", i = 0, 1, ... of the inputs file.
std::vector<Batch> batches(const hf::SafetensorsContents& inputs, const std::string& set) {
  std::vector<Batch> out;
  for (int i = 0;; ++i) {
    const at::Tensor* ids = inputs.find(set + ".ids." + std::to_string(i));
    const at::Tensor* mask = inputs.find(set + ".mask." + std::to_string(i));
    if (ids == nullptr || mask == nullptr) return out;
    out.push_back({{"input_ids", *ids}, {"attention_mask", *mask}});
  }
}

// The best of `repeats` timed passes (after one warm-up pass), in seconds.
template <class Fn>
double best_of(int repeats, Fn&& pass) {
  pass();
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    pass();
    best = std::min(best, seconds_since(start));
  }
  return best;
}

void encode_speed(hf::SentenceTransformer& model, const std::vector<Batch>& set, const std::string& name, int threads,
                  int repeats) {
  if (set.empty()) return;
  int64_t sequences = 0;
  for (const auto& batch : set) sequences += batch.at("input_ids").size(0);
  model->eval();
  const double seconds = best_of(repeats, [&] {
    c10::InferenceMode inference;
    for (const auto& batch : set) model(batch);
  });
  std::printf("{\"what\": \"encode %s\", \"side\": \"gradcache::hf\", \"threads\": %d, \"sequences\": %ld, \"seq_per_s\": %.1f}\n",
              name.c_str(), threads, static_cast<long>(sequences), sequences / seconds);
}

void step_speed(hf::SentenceTransformer& model, const hf::SafetensorsContents& inputs, int threads, int repeats) {
  const at::Tensor* chunk = inputs.find("step.chunk");
  const auto queries = batches(inputs, "step.q"), passages = batches(inputs, "step.p");
  if (chunk == nullptr || queries.size() != 1 || passages.size() != 1) return;
  model->train();
  gradcache::GradCache cache({model, model}, chunk->item<int64_t>(),
                             gradcache::SimpleContrastiveLoss(gradcache::ContrastiveLossOptions()
                                                                  .similarity(gradcache::Similarity::Cosine)
                                                                  .temperature(0.05)));
  const double seconds = best_of(repeats, [&] {
    for (auto& p : model->parameters()) p.mutable_grad() = at::Tensor();
    cache({queries[0], passages[0]});
  });
  std::printf("{\"what\": \"cache step\", \"side\": \"gradcache::hf\", \"threads\": %d, \"pairs\": %ld, \"chunk\": %ld, "
              "\"seconds\": %.4f}\n",
              threads, static_cast<long>(queries[0].at("input_ids").size(0)), static_cast<long>(chunk->item<int64_t>()),
              seconds);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: " << argv[0] << " MODEL_DIR INPUTS.safetensors THREADS [REPEATS]\n";
    return 2;
  }
  try {
    const int threads = std::stoi(argv[3]);
    const int repeats = argc > 4 ? std::stoi(argv[4]) : 3;
    at::set_num_threads(threads);
    auto model = hf::load_sentence_transformer(argv[1]);
    const auto inputs = hf::read_safetensors(argv[2]);
    for (const char* set : {"short", "long"}) encode_speed(model, batches(inputs, set), set, threads, repeats);
    step_speed(model, inputs, threads, repeats);
  } catch (const std::exception& error) {
    std::cerr << error.what() << "\n";
    return 1;
  }
  return 0;
}
