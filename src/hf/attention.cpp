#include "hf/attention.h"

#include "detail/compat.h"

#include <ATen/ATen.h>

#include <cmath>
#include <limits>

namespace gradcache {
namespace hf {
namespace detail {

at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& key_mask,
                     double dropout) {
#if GRADCACHE_HAS_SDPA
  // The default scale is 1 / sqrt(head size), BERT's.
  return at::scaled_dot_product_attention(q, k, v, key_mask.defined() ? c10::optional<at::Tensor>(key_mask) : c10::nullopt,
                                          dropout);
#else
  return attention_by_definition(q, k, v, key_mask, dropout);
#endif
}

at::Tensor attention_by_definition(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                   const at::Tensor& key_mask, double dropout) {
  at::Tensor scores = at::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  if (key_mask.defined()) scores = scores.masked_fill(key_mask.logical_not(), -std::numeric_limits<double>::infinity());
  at::Tensor probabilities = at::softmax(scores, -1);
  if (dropout > 0) probabilities = at::dropout(probabilities, dropout, /*train=*/true);
  return at::matmul(probabilities, v);
}

}  // namespace detail
}  // namespace hf
}  // namespace gradcache
