// ALiBi (attention with linear biases, BLOOM): no position embeddings; each head adds
// slope x key position to its attention scores, a geometric sequence of slopes over the heads.
// As transformers' modeling_bloom.py computes it (_get_alibi_slopes, build_alibi_tensor): the
// key positions count the row's real tokens (the attention mask's cumulative sum), so a
// left-padded text sees the same biases as the text alone.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>

namespace gradcache {
namespace hf {
namespace detail {

/// The slope of each of `heads` heads, fp32 [heads] on `like`'s device: for a power of two n,
/// 2^(-8i/n) for i = 1..n; otherwise those of the largest power of two below, followed by every
/// other slope of twice that power (the odd ones), as many as the heads still need.
at::Tensor alibi_slopes(int64_t heads, const at::Tensor& like);

/// build_alibi_tensor: [B x heads, 1, T] in `dtype`, slope x the key's position among the row's
/// real tokens (from 0; a padding token's is 0). `attention_mask` [B, T]: nonzero = real token.
/// Added to every query's scores (softmax ignores a per-row constant, so the key position
/// alone makes the bias of a relative distance).
at::Tensor alibi_bias(const at::Tensor& attention_mask, int64_t heads, at::ScalarType dtype);

}  // namespace detail
}  // namespace hf
}  // namespace gradcache
