#include "hf/layers/norm.h"

#include <ATen/ATen.h>

namespace gradcache {
namespace hf {
namespace detail {

NormImpl::NormImpl(NormKind kind, int64_t size, double eps, bool bias) : kind_(kind), size_(size), eps_(eps) {
  weight_ = register_parameter("weight", at::ones({size}));
  if (bias && kind == NormKind::LayerNorm) bias_ = register_parameter("bias", at::zeros({size}));
}

at::Tensor NormImpl::forward(const at::Tensor& x) {
  if (kind_ == NormKind::LayerNorm) return at::layer_norm(x, {size_}, weight_, bias_, eps_);
  const at::Tensor wide = x.to(at::kFloat);
  const at::Tensor normalised = wide * at::rsqrt(wide.pow(2).mean(-1, /*keepdim=*/true) + eps_);
  return weight_ * normalised.to(x.scalar_type());
}

}  // namespace detail
}  // namespace hf
}  // namespace gradcache
