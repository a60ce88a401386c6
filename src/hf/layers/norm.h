// The normalisations of the supported architectures, with transformers' parameter names
// ("weight", "bias"): LayerNorm with or without its bias (BERT; ModernBERT has none) and RMSNorm
// (Llama, Qwen, Mistral; also Qwen3's per-head q/k norms).
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>

namespace gradcache {
namespace hf {
namespace detail {

enum class NormKind { LayerNorm, RmsNorm };

class NormImpl : public torch::nn::Module {
 public:
  /// Over the last dimension, of `size`. `bias`: LayerNorm's shift (RMSNorm has none).
  NormImpl(NormKind kind, int64_t size, double eps, bool bias = true);
  /// LayerNorm: at::layer_norm. RMSNorm as transformers' LlamaRMSNorm: in fp32 whatever x's
  /// dtype, x * rsqrt(mean(x^2) + eps), cast back, then times the weight.
  at::Tensor forward(const at::Tensor& x);

 private:
  NormKind kind_;
  int64_t size_;
  double eps_;
  at::Tensor weight_, bias_;
};
TORCH_MODULE(Norm);

}  // namespace detail
}  // namespace hf
}  // namespace gradcache
