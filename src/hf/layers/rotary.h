// Rotary position embeddings (RoPE) as transformers computes them for Llama, Qwen, Mistral and
// ModernBERT: the "default", "linear" and "llama3" (Llama 3.1 and later) rope types, the
// rotate-half layout, cos and sin in fp32 then cast to the activations' dtype.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <utility>

namespace gradcache {
namespace hf {
namespace detail {

/// How the frequencies are rescaled for longer contexts (a config's rope_parameters).
struct RopeScaling {
  enum class Kind { Default, Linear, Llama3 };
  Kind kind = Kind::Default;
  double factor = 1.0;  ///< linear, llama3: low frequencies divided by it
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  ///< llama3: the band smoothed between the two
  int64_t original_max_position_embeddings = 8192;       ///< llama3: the pre-training context
};

/// "default", "linear" or "llama3".
const char* rope_type_name(RopeScaling::Kind kind);

class RotaryEmbedding {
 public:
  /// Over `dimension` (the head size) with base `theta` (rope_theta; ModernBERT's global and
  /// local layers each have their own), the frequencies rescaled as `scaling` says.
  RotaryEmbedding(int64_t dimension, double theta, const RopeScaling& scaling = {});

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
