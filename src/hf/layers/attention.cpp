#include "hf/layers/attention.h"

#include "detail/compat.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <cmath>
#include <limits>

namespace gradcache {
namespace hf {
namespace detail {
namespace {

#if GRADCACHE_HAS_SDPA
// The mask and the bias as one additive float tensor (SDPA takes one of the two): 0 where
// allowed, -inf where hidden, plus the bias.
at::Tensor additive(const at::Tensor& mask, const at::Tensor& bias, const at::Tensor& like) {
  const at::Tensor summed = bias.to(like.scalar_type());
  if (!mask.defined()) return summed;
  return summed.masked_fill(mask.logical_not(), -std::numeric_limits<double>::infinity());
}
#endif

}  // namespace

at::Tensor attention_mask(const at::Tensor& real, const AttentionPattern& pattern) {
  TORCH_CHECK(real.dim() == 2, "attention_mask: the token mask must be [batch, tokens], got ", real.sizes());
  const at::Tensor keys = real.to(at::kBool);
  const bool windowed = pattern.window_left > 0 || pattern.window_right > 0;
  const bool padded = !keys.all().item<bool>();
  if (!padded && !pattern.causal && !windowed) return {};
  if (!pattern.causal && !windowed) return keys.view({keys.size(0), 1, 1, keys.size(1)});
  const int64_t length = keys.size(1);
  const at::Tensor position = at::arange(length, keys.options().dtype(at::kLong));
  const at::Tensor query = position.view({length, 1}), key = position.view({1, length});
  at::Tensor allowed = at::ones({length, length}, keys.options());
  if (pattern.causal) allowed = allowed.logical_and(key <= query);
  if (pattern.window_left > 0) allowed = allowed.logical_and(key >= query - pattern.window_left);
  if (pattern.window_right > 0) allowed = allowed.logical_and(key <= query + pattern.window_right);
  at::Tensor mask = allowed.view({1, 1, length, length}).logical_and(keys.view({keys.size(0), 1, 1, length}));
  return mask.logical_or(at::eye(length, keys.options()).view({1, 1, length, length}));
}

at::Tensor repeat_kv(const at::Tensor& x, int64_t groups) {
  if (groups == 1) return x;
  const int64_t batch = x.size(0), heads = x.size(1), length = x.size(2), width = x.size(3);
  return x.unsqueeze(2).expand({batch, heads, groups, length, width}).reshape({batch, heads * groups, length, width});
}

at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask,
                     double dropout, const at::Tensor& bias) {
  TORCH_CHECK(k.size(1) > 0 && q.size(1) % k.size(1) == 0, "attention: ", q.size(1), " query heads cannot share ",
              k.size(1), " key-value heads");
  const int64_t groups = q.size(1) / k.size(1);
#if GRADCACHE_HAS_SDPA
  // The default scale is 1 / sqrt(head size), every supported architecture's.
  const at::Tensor combined = bias.defined() ? additive(mask, bias, q) : mask;
  return at::scaled_dot_product_attention(q, repeat_kv(k, groups), repeat_kv(v, groups),
                                          combined.defined() ? c10::optional<at::Tensor>(combined) : c10::nullopt, dropout);
#else
  return attention_by_definition(q, repeat_kv(k, groups), repeat_kv(v, groups), mask, dropout, bias);
#endif
}

at::Tensor attention_by_definition(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask,
                                   double dropout, const at::Tensor& bias) {
  const int64_t groups = q.size(1) / k.size(1);
  at::Tensor scores = at::matmul(q, repeat_kv(k, groups).transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  if (bias.defined()) scores = scores + bias.to(scores.scalar_type());
  if (mask.defined()) scores = scores.masked_fill(mask.logical_not(), -std::numeric_limits<double>::infinity());
  at::Tensor probabilities = at::softmax(scores, -1);
  if (dropout > 0) probabilities = at::dropout(probabilities, dropout, /*train=*/true);
  return at::matmul(probabilities, repeat_kv(v, groups));
}

}  // namespace detail
}  // namespace hf
}  // namespace gradcache
