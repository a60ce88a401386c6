// Multi-head attention for gradcache::hf's architectures: which keys each query sees (padding,
// causal order, a sliding window), grouped-query heads, an additive bias, and the one place that
// knows which LibTorch has fused scaled-dot-product attention (GRADCACHE_HAS_SDPA, src/detail/compat.h).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace gradcache {
namespace hf {
namespace detail {

/// Which keys a query may attend to, besides padding.
struct AttentionPattern {
  bool causal = false;  ///< a query sees keys at its position or before (decoders)
  /// Keys further than this many positions before a query are hidden (0: no limit). Mistral's
  /// sliding_window w is left = w - 1 (transformers: key > query - w).
  int64_t window_left = 0;
  /// Keys further than this many positions after a query are hidden (0: no limit; a causal
  /// pattern hides them all anyway). ModernBERT's local layers: left = right = window / 2.
  int64_t window_right = 0;
};

/// The mask of a batch, built once for all layers: [B, 1, T, T] bool (true = attend), or
/// undefined when every query sees every key (the fused kernels' fast path). `real` [B, T]:
/// nonzero = a real token. A query always sees itself, so that a padding row (which nothing
/// reads) is finite rather than NaN under left padding and causal order.
at::Tensor attention_mask(const at::Tensor& real, const AttentionPattern& pattern);

/// softmax(q k^T / sqrt(head size) + bias) v per head, over the keys `mask` allows, with dropout
/// of probability `dropout` on the attention probabilities (drawn from the default generator).
/// q: [B, heads, T, head size]; k, v: [B, kv heads, T, head size] where kv heads divides heads
/// (grouped-query attention: each group of heads / kv heads query heads shares one key-value
/// head); mask: [B, 1, T, T] (or [B, 1, 1, T]) bool, true = attend, or undefined; bias: an additive
/// float [B or 1, heads or 1, T, T] or undefined. Returns [B, heads, T, head size]. LibTorch's
/// fused scaled-dot-product attention where the version has it, else attention_by_definition.
at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask,
                     double dropout, const at::Tensor& bias = {});

/// The same computed from its definition (matmul, masked softmax, dropout, matmul): LibTorch
/// 1.13's path, and the tests' reference for the fused one.
at::Tensor attention_by_definition(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                   const at::Tensor& mask, double dropout, const at::Tensor& bias = {});

/// k or v [B, kv heads, T, d] with each head repeated `groups` times in place ([B, kv heads x
/// groups, T, d]), as transformers' repeat_kv; itself when groups is 1.
at::Tensor repeat_kv(const at::Tensor& x, int64_t groups);

}  // namespace detail
}  // namespace hf
}  // namespace gradcache
