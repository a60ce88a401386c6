// The feed-forward blocks of the supported architectures: an activation by its transformers
// name, the plain two-layer MLP's activation step (BERT: dense, act, dense) and the gated one
// (Llama, Qwen, Mistral: down(act(gate(x)) * up(x)), SwiGLU with silu, GeGLU with gelu).
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <gradcache/hf/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <initializer_list>
#include <string>

namespace gradcache {
namespace hf {
namespace detail {

/// The activations (transformers' ACT2FN names) this library computes.
#define GRADCACHE_HF_ACTIVATIONS "gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast", "relu", "silu", "swish"

/// `name`(x): gelu (exact, erf); gelu_new / gelu_pytorch_tanh / gelu_fast (the tanh
/// approximation); relu; silu / swish. An unknown name is a std::invalid_argument (configs are
/// checked against GRADCACHE_HF_ACTIVATIONS when read).
at::Tensor activate(const std::string& name, const at::Tensor& x);

/// Llama's MLP: gate_proj and up_proj [hidden -> intermediate], down_proj [intermediate -> hidden].
class GatedFeedForwardImpl : public torch::nn::Module {
 public:
  GatedFeedForwardImpl(int64_t hidden, int64_t intermediate, std::string activation, bool bias);
  at::Tensor forward(const at::Tensor& x);

 private:
  std::string activation_;
  Linear gate_{nullptr}, up_{nullptr}, down_{nullptr};
};
TORCH_MODULE(GatedFeedForward);

}  // namespace detail
}  // namespace hf
}  // namespace gradcache
