// Rotary position embeddings (RoPE) as transformers computes them for Llama, Qwen, Mistral and
// ModernBERT: the "default" rope_type, the rotate-half layout, cos and sin in fp32 then cast to
// the activations' dtype.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <utility>

namespace gradcache {
namespace hf {
namespace detail {

class RotaryEmbedding {
 public:
  /// Over `dimension` (the head size) with base `theta` (rope_theta; ModernBERT's global and
  /// local layers each have their own).
  RotaryEmbedding(int64_t dimension, double theta);

  /// cos and sin [T, dimension] of positions 0 .. length-1 (transformers' default position ids:
  /// the same on every row, whichever side is padded; rotary attention depends only on the
  /// distance between positions).
  std::pair<at::Tensor, at::Tensor> cos_sin(int64_t length, const at::Tensor& like) const;

  /// x [B, heads, T, dimension] rotated: x cos + rotate_half(x) sin.
  static at::Tensor apply(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

 private:
  at::Tensor inverse_frequency_;  // [dimension / 2], fp32
};

}  // namespace detail
}  // namespace hf
}  // namespace gradcache
