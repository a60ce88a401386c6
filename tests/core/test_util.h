// Models and comparisons shared by the tests.
#pragma once

#include <gradcache/gradcache.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <iostream>
#include <string>
#include <vector>

namespace gctest {

/// Linear -> tanh -> dropout -> linear. Dropout makes replay exactness observable.
struct MlpImpl : torch::nn::Module {
  MlpImpl(int64_t in, int64_t hidden, int64_t out, double dropout = 0.0)
      : fc1(register_module("fc1", torch::nn::Linear(in, hidden))),
        drop(register_module("drop", torch::nn::Dropout(dropout))),
        fc2(register_module("fc2", torch::nn::Linear(hidden, out))) {}
  torch::Tensor forward(const torch::Tensor& x) { return fc2(drop(torch::tanh(fc1(x)))); }
  torch::nn::Linear fc1;
  torch::nn::Dropout drop;
  torch::nn::Linear fc2;
};
TORCH_MODULE(Mlp);

/// Linear -> BatchNorm1d -> relu -> linear: running statistics are state the replay must not
/// update a second time.
struct BnNetImpl : torch::nn::Module {
  BnNetImpl(int64_t in, int64_t hidden, int64_t out)
      : fc1(register_module("fc1", torch::nn::Linear(in, hidden))),
        bn(register_module("bn", torch::nn::BatchNorm1d(hidden))),
        fc2(register_module("fc2", torch::nn::Linear(hidden, out))) {}
  torch::Tensor forward(const torch::Tensor& x) { return fc2(torch::relu(bn(fc1(x)))); }
  torch::nn::Linear fc1;
  torch::nn::BatchNorm1d bn;
  torch::nn::Linear fc2;
};
TORCH_MODULE(BnNet);

/// A small text encoder taking a map {"input_ids", "attention_mask"}: embedding, one
/// Transformer encoder layer with dropout, mean pooling over the mask.
struct TextEncoderImpl : torch::nn::Module {
  TextEncoderImpl(int64_t vocab, int64_t dim, double dropout)
      : embed(register_module("embed", torch::nn::Embedding(vocab, dim))),
        layer(register_module("layer", torch::nn::TransformerEncoderLayer(
                                           torch::nn::TransformerEncoderLayerOptions(dim, 2)
                                               .dim_feedforward(2 * dim)
                                               .dropout(dropout)))) {}
  torch::Tensor forward(const std::map<std::string, torch::Tensor>& batch) {
    const auto& ids = batch.at("input_ids");
    const auto& mask = batch.at("attention_mask");
    auto h = layer->forward(embed(ids).transpose(0, 1), /*src_mask=*/torch::Tensor(), /*src_key_padding_mask=*/mask.logical_not())
                 .transpose(0, 1);
    auto m = mask.unsqueeze(-1).to(h.dtype());
    return (h * m).sum(1) / m.sum(1).clamp_min(1);
  }
  torch::nn::Embedding embed;
  torch::nn::TransformerEncoderLayer layer;
};
TORCH_MODULE(TextEncoder);

/// The parameters of `modules`, in order.
inline std::vector<torch::Tensor> params_of(std::initializer_list<torch::nn::Module*> modules) {
  std::vector<torch::Tensor> out;
  for (auto* m : modules) {
    for (auto& p : m->parameters()) out.push_back(p);
  }
  return out;
}

/// Gradients of `params`, cloned (zeros where a parameter has none).
inline std::vector<torch::Tensor> grads_of(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> out;
  for (const auto& p : params) out.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
  return out;
}

inline void zero_grads(const std::vector<torch::Tensor>& params) {
  for (auto p : params) {
    if (p.grad().defined()) p.mutable_grad() = torch::Tensor();
  }
}

/// The full batch with every chunk's forward run with grad, in the cache's order and under its
/// own autocast scope (so the generators hand out the same dropout masks and the casts are the
/// cache's), fp32 representations (to_full_precision), one loss over all rows, times `scale`,
/// and one backward. Returns the gradients of q's then p's parameters; they stay set.
inline std::vector<torch::Tensor> full_batch_chunked(Mlp q, Mlp p, const torch::Tensor& x, const torch::Tensor& y,
                                                     int64_t chunk, const gradcache::Loss& loss,
                                                     gradcache::Precision precision = gradcache::Precision::fp32,
                                                     c10::Device device = torch::kCPU, double scale = 1.0) {
  auto params = params_of({q.ptr().get(), p.ptr().get()});
  zero_grads(params);
  std::vector<torch::Tensor> reps;
  for (auto [model, input] : {std::make_pair(q, x), std::make_pair(p, y)}) {
    std::vector<torch::Tensor> parts;
    for (const auto& c : input.split(chunk, 0)) {
      gradcache::AutocastScope scope(precision, device);
      parts.push_back(model(c));
    }
    reps.push_back(gradcache::to_full_precision(torch::cat(parts, 0)));
  }
  (loss(reps, {}) * scale).backward();
  return grads_of(params);
}

/// max |a - b| / max |b| over all tensors: the error relative to the largest gradient entry.
/// (Per tensor would be ill-posed: some gradients are analytically zero, e.g. the output
/// bias of a passage encoder under InfoNCE, and are then pure rounding noise.)
inline double max_rel_error(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  EXPECT_EQ(a.size(), b.size());
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    scale = std::max(scale, b[i].abs().max().item<double>());
    diff = std::max(diff, (a[i] - b[i]).abs().max().item<double>());
  }
  return scale > 0 ? diff / scale : diff;
}

/// Prints and records the error a test observed (collected for the README and notes).
inline void report_error(const std::string& what, double error) {
  std::cout << "[exactness] " << what << ": max relative gradient error " << error << std::endl;
  ::testing::Test::RecordProperty("max_rel_error", std::to_string(error));
}

/// Whether any parameter received a non-zero gradient.
inline bool any_grad(const std::vector<torch::Tensor>& params) {
  for (const auto& p : params) {
    if (p.grad().defined() && p.grad().abs().sum().item<double>() > 0) return true;
  }
  return false;
}

/// Tolerances of "equal to the full batch" (docs/testing.md, "How exactness is tested"): the cache only
/// changes the order of summation, so errors are about n * eps for reductions of n ~ 100
/// terms: 1e-13 in float64, 1e-5 in float32.
constexpr double kTol64 = 1e-13;
constexpr double kTol32 = 1e-5;

/// The message of the exception `fn` throws (a test failure if it throws none).
template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an error";
  return "";
}

/// Records every representation a model returns (dtype included), by the grad mode it ran in.
struct Recorder {
  std::vector<torch::Tensor> no_grad_outputs, grad_outputs;
};
inline gradcache::Model recording(Mlp mlp, std::shared_ptr<Recorder> rec) {
  return gradcache::Model([mlp, rec](const torch::Tensor& x) mutable {
           auto y = mlp(x);
           (torch::GradMode::is_enabled() ? rec->grad_outputs : rec->no_grad_outputs).push_back(y.detach().clone());
           return y;
         })
      .with_state_of(mlp);
}

}  // namespace gctest
