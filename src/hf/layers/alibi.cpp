#include "hf/layers/alibi.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>

namespace gradcache {
namespace hf {
namespace detail {
namespace {

// 2^(-2^-(log2(n) - 3)) = 2^(-8/n), computed in double as Python does, then rounded to fp32.
at::Tensor base_of(int64_t power_of_two, const at::Tensor& like) {
  const double base = std::pow(2.0, -std::pow(2.0, -(std::log2(static_cast<double>(power_of_two)) - 3)));
  return at::full({}, base, like.options().dtype(at::kFloat));
}

}  // namespace

at::Tensor alibi_slopes(int64_t heads, const at::Tensor& like) {
  TORCH_CHECK(heads >= 1, "alibi_slopes: ", heads, " heads");
  const int64_t closest = int64_t{1} << static_cast<int>(std::floor(std::log2(static_cast<double>(heads))));
  const auto powers = like.options().dtype(at::kInt);
  at::Tensor slopes = at::pow(base_of(closest, like), at::arange(1, 1 + closest, powers));
  if (closest == heads) return slopes;
  const int64_t remaining = std::min(closest, heads - closest);
  const at::Tensor extra = at::pow(base_of(2 * closest, like), at::arange(1, 1 + 2 * remaining, 2, powers));
  return at::cat({slopes, extra}, 0);
}

at::Tensor alibi_bias(const at::Tensor& attention_mask, int64_t heads, at::ScalarType dtype) {
  TORCH_CHECK(attention_mask.dim() == 2, "alibi_bias: the token mask must be [batch, tokens], got ", attention_mask.sizes());
  const int64_t batch = attention_mask.size(0), length = attention_mask.size(1);
  // transformers multiplies the int64 positions by the fp32 slopes: the product is fp32.
  const at::Tensor mask = attention_mask.ne(0).to(at::kLong);
  const at::Tensor positions = ((mask.cumsum(-1) - 1) * mask).unsqueeze(1);
  const at::Tensor alibi = alibi_slopes(heads, attention_mask).unsqueeze(-1) * positions;
  return alibi.reshape({batch * heads, 1, length}).to(dtype);
}

}  // namespace detail
}  // namespace hf
}  // namespace gradcache
