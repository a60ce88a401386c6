// Building an architecture's module tree under transformers' parameter names, and its random
// initial weights.
#pragma once

#include <gradcache/hf/linear.h>

#include <torch/nn/module.h>
#include <torch/nn/modules/normalization.h>

#include <cstdint>
#include <memory>
#include <string>

namespace gradcache {
namespace hf {
namespace detail {

/// A module that only gives its children a name prefix ("attention", "self", "output", ...).
std::shared_ptr<torch::nn::Module> scope(torch::nn::Module& parent, const std::string& name);

/// hf::Linear(in, out, bias) (nn.Linear, able to carry a LoRA adapter) registered as `name` under `parent`.
Linear linear(torch::nn::Module& parent, const std::string& name, int64_t in, int64_t out, bool bias = true);

/// torch::nn::LayerNorm over `size` features (with weight and bias) registered as `name` under `parent`.
torch::nn::LayerNorm layer_norm(torch::nn::Module& parent, const std::string& name, int64_t size, double eps);

/// transformers' _init_weights: Linear and Embedding weights normal(0, std), biases 0, norms'
/// weights 1 and biases 0 (the parameters of a Norm, LayerNorm or RMSNorm). Loading a checkpoint
/// replaces all of it; a model built without one (tests, training from scratch) starts here.
void initialise_weights(torch::nn::Module& model, double std);

/// Rows looked up in an embedding table held narrower than the model computes (a frozen base in
/// bf16 or fp16, hf/frozen_weights.h) as fp32, the type the rest of the model computes in; any
/// other tensor as it is. Each architecture passes its embedding rows through this.
at::Tensor widened(const at::Tensor& rows);

/// Dropout in training mode (p > 0) only.
at::Tensor maybe_dropout(const at::Tensor& x, double p, bool training);

}  // namespace detail
}  // namespace hf
}  // namespace gradcache
