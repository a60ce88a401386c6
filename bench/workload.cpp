// The benchmarks' models (the retriever's Transformer encoder, or two MLPs), their loss and
// synthetic batches.
#include "workload.h"

#include "options.h"
#include "retriever/model/batching.h"
#include "retriever/model/encoders.h"

#include <algorithm>
#include <random>
#include <sstream>
#include <stdexcept>

namespace gcbench {

namespace rt = gradcache::retriever;

void ModelSettings::add_options(OptionTable& t, bool with_kind) {
  if (with_kind) t.add("--model", &kind, "transformer (tied text encoder) or mlp (two MLPs)");
  t.add("--dim", &dim, "representation size (Transformer width)");
  t.add("--layers", &layers, "Transformer layers");
  t.add("--heads", &heads, "attention heads");
  t.add("--ffn", &ffn, "Transformer feed-forward size");
  t.add("--vocab", &vocab, "vocabulary of the synthetic texts");
  t.add("--query-len", &query_len, "query texts have 4..N tokens");
  t.add("--passage-len", &passage_len, "passage texts have 8..N tokens");
  t.add("--dropout", &dropout, "dropout of the models");
  t.add("--mlp-in", &mlp_in, "MLP input size");
  t.add("--mlp-hidden", &mlp_hidden, "MLP hidden size");
  t.add("--temperature", &temperature, "InfoNCE temperature");
  t.add("--loss", &loss, "dense (the N x M score matrix) or streaming (tiles, gradcache::StreamingContrastiveLoss)");
  t.add("--tile", &tile, "tile size of the streaming loss");
  t.add("--seed", &seed, "seed of the weights and data");
}

Json ModelSettings::to_json() const {
  Json j{{"kind", kind}, {"dim", dim}};
  if (kind == "transformer") {
    j.update({{"layers", layers}, {"heads", heads}, {"ffn", ffn}, {"vocab", vocab}, {"query_len", query_len},
              {"passage_len", passage_len}});
  } else {
    j.update({{"in", mlp_in}, {"hidden", mlp_hidden}});
  }
  j.update({{"dropout", dropout}, {"temperature", temperature}, {"loss", loss}, {"seed", seed}});
  if (loss == "streaming") j["tile"] = tile;
  return j;
}


namespace {

/// in -> hidden -> hidden -> dim with GELU and dropout, L2-normalised like the text encoder.
class MlpEncoderImpl : public torch::nn::Module {
 public:
  MlpEncoderImpl(int64_t in, int64_t hidden, int64_t out, double dropout)
      : fc1_(register_module("fc1", torch::nn::Linear(in, hidden))),
        fc2_(register_module("fc2", torch::nn::Linear(hidden, hidden))),
        fc3_(register_module("fc3", torch::nn::Linear(hidden, out))),
        drop_(register_module("drop", torch::nn::Dropout(dropout))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    auto h = drop_(torch::gelu(fc1_(x)));
    h = drop_(torch::gelu(fc2_(h)));
    auto y = fc3_(h);
    return y / y.norm(2, 1, /*keepdim=*/true).clamp_min(1e-12);
  }

 private:
  torch::nn::Linear fc1_, fc2_, fc3_;
  torch::nn::Dropout drop_;
};
TORCH_MODULE(MlpEncoder);

// Random token lists with lengths uniform in [lo, hi]; ids 1..vocab-1 (0 is padding).
std::vector<std::vector<int64_t>> random_texts(std::mt19937_64& rng, int64_t n, int64_t lo, int64_t hi,
                                               int64_t vocab) {
  std::uniform_int_distribution<int64_t> length(lo, std::max(lo, hi)), token(1, vocab - 1);
  std::vector<std::vector<int64_t>> texts(static_cast<size_t>(n));
  for (auto& t : texts) {
    t.resize(static_cast<size_t>(length(rng)));
    for (auto& id : t) id = token(rng);
  }
  return texts;
}

torch::Tensor random_normal(std::mt19937_64& rng, int64_t rows, int64_t cols) {
  std::normal_distribution<float> normal;
  auto t = torch::empty({rows, cols});
  auto* p = t.data_ptr<float>();
  for (int64_t i = 0; i < rows * cols; ++i) p[i] = normal(rng);
  return t;
}

}  // namespace

Workload::Workload(const ModelSettings& s) : settings_(s) {
  torch::manual_seed(static_cast<uint64_t>(s.seed));
  if (s.kind == "transformer") {
    rt::TransformerEncoder encoder(rt::EncoderOptions(s.vocab)
                                       .dim(s.dim)
                                       .layers(s.layers)
                                       .heads(s.heads)
                                       .ffn_dim(s.ffn)
                                       .max_len(std::max(s.query_len, s.passage_len))
                                       .dropout(s.dropout));
    modules_.push_back(encoder.ptr());
    query_model_ = encoder;  // tied: one encoder for queries and passages, as the retriever's default
    passage_model_ = encoder;
  } else if (s.kind == "mlp") {
    MlpEncoder q(s.mlp_in, s.mlp_hidden, s.dim, s.dropout), p(s.mlp_in, s.mlp_hidden, s.dim, s.dropout);
    modules_ = {q.ptr(), p.ptr()};
    query_model_ = q;
    passage_model_ = p;
  } else {
    throw std::invalid_argument("--model: expected transformer or mlp, got '" + s.kind + "'");
  }
  if (s.loss == "dense") {
    loss_ = gradcache::SimpleContrastiveLoss(gradcache::ContrastiveLossOptions().temperature(s.temperature));
  } else if (s.loss == "streaming") {
    loss_ = gradcache::StreamingContrastiveLoss(gradcache::StreamingLossOptions().temperature(s.temperature).tile_size(s.tile));
  } else {
    throw std::invalid_argument("--loss: expected dense or streaming, got '" + s.loss + "'");
  }
  train(true);
}

Batch Workload::batch(int64_t pairs, uint64_t seed) const {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(settings_.seed));
  Batch b;
  b.pairs = pairs;
  if (settings_.kind == "transformer") {
    std::vector<int64_t> rows(static_cast<size_t>(pairs));
    for (int64_t i = 0; i < pairs; ++i) rows[static_cast<size_t>(i)] = i;
    b.queries = rt::pad_batch(random_texts(rng, pairs, 4, settings_.query_len, settings_.vocab), rows);
    b.passages = rt::pad_batch(random_texts(rng, pairs, 8, settings_.passage_len, settings_.vocab), rows);
  } else {
    auto x = random_normal(rng, pairs, settings_.mlp_in);
    b.queries = x;
    b.passages = x + 0.5 * random_normal(rng, pairs, settings_.mlp_in);  // a noisy copy: a learnable positive
  }
  return b;
}

std::vector<gradcache::ModelInput> Workload::split(const gradcache::ModelInput& input, int64_t chunk) const {
  return split_fn()(input, chunk);
}

gradcache::SplitInputFn Workload::split_fn() const {
  if (settings_.kind == "transformer") return rt::split_and_trim;
  return gradcache::split_input;
}

gradcache::GradCacheOptions Workload::cache_options() const {
  gradcache::GradCacheOptions options;
  if (settings_.kind == "transformer") options.split_input_fn(rt::split_and_trim);
  return options;
}

std::vector<torch::Tensor> Workload::parameters() const {
  std::vector<torch::Tensor> out;
  for (const auto& m : modules_) {
    for (const auto& p : m->parameters()) out.push_back(p);
  }
  return out;
}

int64_t Workload::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

void Workload::train(bool on) {
  for (const auto& m : modules_) m->train(on);
}

void Workload::allocate_grads() {
  for (auto& p : parameters()) {
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
  }
}

void Workload::zero_grads() {
  for (auto& p : parameters()) {
    if (p.grad().defined()) p.mutable_grad().zero_();
  }
}

std::vector<torch::Tensor> Workload::grads() const {
  std::vector<torch::Tensor> out;
  for (const auto& p : parameters()) out.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
  return out;
}

std::string Workload::describe() const {
  const auto& s = settings_;
  std::ostringstream out;
  if (s.kind == "transformer") {
    out << "Transformer encoder (tied), dim " << s.dim << ", " << s.layers << " layers, " << s.heads << " heads, ffn "
        << s.ffn << ", queries 4-" << s.query_len << " / passages 8-" << s.passage_len << " tokens";
  } else {
    out << "2 MLPs " << s.mlp_in << "-" << s.mlp_hidden << "-" << s.mlp_hidden << "-" << s.dim;
  }
  out << ", dropout " << s.dropout << ", " << parameter_count() << " parameters, " << s.loss
      << " loss, temperature " << s.temperature;
  return out.str();
}

}  // namespace gcbench
