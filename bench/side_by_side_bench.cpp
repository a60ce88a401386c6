// gradcache-side-by-side-bench: the C++ half of bench/side_by_side.py for what the `gradcache`
// program does not itself expose. Three modes:
//
//   scripted MODEL.pt INPUTS.safetensors THREADS STEPS
//     Cache steps of a TorchScript encoder (called with one [N, L] int64 tensor) on the tensors
//     "q" and "p" of INPUTS, in chunks of "chunk" rows, with the reference GradCache's
//     SimpleContrastiveLoss (dot product, no temperature): the step Python's luyug/GradCache
//     times on the same module and tensors. Prints one JSON object per step (the first is the
//     warm-up): wall seconds, GradCache's three phases, the loss, peak RSS so far.
//
//   builtin INPUTS.safetensors THREADS STEPS
//     The program's built-in encoder at the main job's shape (vocabulary 8,000, dim 64, 1 layer,
//     4 heads, ffn 128, dropout 0.1, normalised) on the ids "q" and "p" of INPUTS (every token
//     real), seeded by "seed": per step, the forward + backward of the whole batch (cosine InfoNCE
//     at temperature 0.05) and a cache step in chunks of "chunk" rows. bench/side_by_side.py runs
//     the same architecture written in Python beside it (language overhead against the model).
//
//   gradients MODEL_DIR INPUTS.safetensors OUT.safetensors
//     One cache step of a sentence-transformers directory in eval mode (dropout off) on the
//     token batches "q.ids"/"q.mask" and "p.ids"/"p.mask" in chunks of "chunk" rows, cosine
//     InfoNCE at temperature 1/"scale": what CachedMultipleNegativesRankingLoss computes.
//     Writes the loss ("loss") and every parameter's gradient under its transformers name,
//     for bench/side_by_side.py to compare with sentence-transformers' own.
#include <gradcache/gradcache.h>
#include <gradcache/hf/safetensors.h>
#include <gradcache/hf/sentence_transformer.h>

#include "retriever/model/encoders.h"

#include <ATen/Parallel.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>

namespace hf = gradcache::hf;

namespace {

const at::Tensor& input(const hf::SafetensorsContents& inputs, const std::string& name) {
  const at::Tensor* t = inputs.find(name);
  if (t == nullptr) throw std::invalid_argument("the inputs have no tensor \"" + name + "\"");
  return *t;
}

// VmHWM of /proc/self/status, MiB.
double peak_rss_mb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return -1;
}

void scripted(const std::string& model_path, const std::string& inputs_path, int steps) {
  auto module = torch::jit::load(model_path);
  module.train();
  const auto inputs = hf::read_safetensors(inputs_path);
  const auto& queries = input(inputs, "q");
  const auto& passages = input(inputs, "p");
  const int64_t chunk = input(inputs, "chunk").item<int64_t>();
  // The reference's SimpleContrastiveLoss: cross-entropy over x y^T, no temperature.
  gradcache::GradCache cache({module, module}, chunk,
                             gradcache::SimpleContrastiveLoss(gradcache::ContrastiveLossOptions().temperature(1.0)));
  std::vector<at::Tensor> parameters;
  for (const auto& p : module.parameters()) parameters.push_back(p);
  for (int step = 0; step <= steps; ++step) {
    for (auto& p : parameters) p.mutable_grad() = at::Tensor();
    const auto start = std::chrono::steady_clock::now();
    const double loss = cache({queries, passages}).item<double>();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto& t = cache.last_step_times();
    std::printf("{\"step\": %d, \"seconds\": %.6f, \"forward\": %.6f, \"loss_s\": %.6f, \"backward\": %.6f, "
                "\"loss\": %.7f, \"peak_rss_mb\": %.1f}\n",
                step, seconds, t.forward_s, t.loss_s, t.backward_s, loss, peak_rss_mb());
    std::fflush(stdout);
  }
}

void builtin(const std::string& inputs_path, int steps) {
  namespace gr = gradcache::retriever;
  const auto inputs = hf::read_safetensors(inputs_path);
  torch::manual_seed(input(inputs, "seed").item<int64_t>());
  gr::TransformerEncoder encoder(
      gr::EncoderOptions(8000).dim(64).layers(1).heads(4).ffn_dim(128).max_len(64).dropout(0.1).normalize(true));
  encoder->train();
  const auto& q_ids = input(inputs, "q");
  const auto& p_ids = input(inputs, "p");
  const gr::TokenBatch queries{{"input_ids", q_ids}, {"attention_mask", torch::ones_like(q_ids)}};
  const gr::TokenBatch passages{{"input_ids", p_ids}, {"attention_mask", torch::ones_like(p_ids)}};
  const int64_t chunk = input(inputs, "chunk").item<int64_t>();
  const auto loss_fn = gradcache::SimpleContrastiveLoss(gradcache::ContrastiveLossOptions().temperature(0.05));
  gradcache::GradCache cache({encoder, encoder}, chunk, loss_fn);
  const auto parameters = encoder->parameters();
  auto seconds_of = [&](auto&& step) {
    for (auto p : parameters) p.mutable_grad() = at::Tensor();
    const auto start = std::chrono::steady_clock::now();
    step();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  for (int step = 0; step <= steps; ++step) {
    const double full = seconds_of([&] { loss_fn(encoder->forward(queries), encoder->forward(passages)).backward(); });
    const double cached = seconds_of([&] { cache({gradcache::ModelInput(queries), gradcache::ModelInput(passages)}); });
    std::printf("{\"step\": %d, \"forward_backward\": %.6f, \"cache_step\": %.6f, \"peak_rss_mb\": %.1f}\n", step, full,
                cached, peak_rss_mb());
    std::fflush(stdout);
  }
}

void gradients(const std::string& model_dir, const std::string& inputs_path, const std::string& out) {
  auto model = hf::load_sentence_transformer(model_dir);
  model->eval();  // dropout off: both sides' gradients are then deterministic
  const auto inputs = hf::read_safetensors(inputs_path);
  const std::map<std::string, at::Tensor> q{{"input_ids", input(inputs, "q.ids")},
                                            {"attention_mask", input(inputs, "q.mask")}};
  const std::map<std::string, at::Tensor> p{{"input_ids", input(inputs, "p.ids")},
                                            {"attention_mask", input(inputs, "p.mask")}};
  const int64_t chunk = input(inputs, "chunk").item<int64_t>();
  const double scale = input(inputs, "scale").item<double>();
  gradcache::GradCache cache({model, model}, chunk,
                             gradcache::SimpleContrastiveLoss(gradcache::ContrastiveLossOptions()
                                                                  .similarity(gradcache::Similarity::Cosine)
                                                                  .temperature(1.0 / scale)));
  hf::NamedTensors grads;
  grads.emplace_back("loss", cache({q, p}).reshape({1}));
  for (const auto& item : model->transformer().named_parameters()) {
    if (item.value().grad().defined()) grads.emplace_back(item.key(), item.value().grad());
  }
  hf::save_safetensors(out, grads);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (!((mode == "scripted" && argc == 6) || (mode == "gradients" && argc == 5) || (mode == "builtin" && argc == 5))) {
    std::cerr << "usage: " << argv[0] << " scripted MODEL.pt INPUTS.safetensors THREADS STEPS\n"
              << "       " << argv[0] << " builtin INPUTS.safetensors THREADS STEPS\n"
              << "       " << argv[0] << " gradients MODEL_DIR INPUTS.safetensors OUT.safetensors\n";
    return 2;
  }
  try {
    if (mode == "scripted") {
      at::set_num_threads(std::stoi(argv[4]));
      scripted(argv[2], argv[3], std::stoi(argv[5]));
    } else if (mode == "builtin") {
      at::set_num_threads(std::stoi(argv[3]));
      builtin(argv[2], std::stoi(argv[4]));
    } else {
      at::set_num_threads(1);
      gradients(argv[2], argv[3], argv[4]);
    }
  } catch (const std::exception& error) {
    std::cerr << argv[0] << ": " << error.what() << "\n";
    return 1;
  }
  return 0;
}
