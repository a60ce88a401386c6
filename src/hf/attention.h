// Multi-head attention for gradcache::hf's encoders, the one place that knows which LibTorch
// has fused scaled-dot-product attention (GRADCACHE_HAS_SDPA, src/detail/compat.h).
#pragma once

#include <ATen/core/Tensor.h>

namespace gradcache {
namespace hf {
namespace detail {

/// softmax(q k^T / sqrt(head size)) v per head, over the keys `key_mask` allows, with dropout of
/// probability `dropout` on the attention probabilities (drawn from the default generator).
/// q, k, v: [B, heads, T, head size]; key_mask: [B, 1, 1, T] bool (true = attend) or undefined
/// (every key). Returns [B, heads, T, head size]. LibTorch's fused scaled-dot-product attention
/// where the version has it, else attention_by_definition.
at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& key_mask,
                     double dropout);

/// The same computed from its definition (matmul, masked softmax, dropout, matmul): LibTorch
/// 1.13's path, and the tests' reference for the fused one.
at::Tensor attention_by_definition(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                   const at::Tensor& key_mask, double dropout);

}  // namespace detail
}  // namespace hf
}  // namespace gradcache
