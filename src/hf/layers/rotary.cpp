#include "hf/layers/rotary.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

namespace gradcache {
namespace hf {
namespace detail {

RotaryEmbedding::RotaryEmbedding(int64_t dimension, double theta) {
  TORCH_CHECK(dimension > 0 && dimension % 2 == 0, "RotaryEmbedding: the head size must be even, got ", dimension);
  // transformers: 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float) / dim)), in fp32.
  const at::Tensor exponents = at::arange(0, dimension, 2, at::kFloat) / static_cast<double>(dimension);
  inverse_frequency_ = at::reciprocal(at::pow(theta, exponents));
}

std::pair<at::Tensor, at::Tensor> RotaryEmbedding::cos_sin(int64_t length, const at::Tensor& like) const {
  const at::Tensor inverse = inverse_frequency_.to(like.device());
  const at::Tensor positions = at::arange(length, at::TensorOptions().dtype(at::kFloat).device(like.device()));
  const at::Tensor frequencies = positions.unsqueeze(-1) * inverse;  // [T, dimension / 2]
  const at::Tensor angles = at::cat({frequencies, frequencies}, -1);
  return {angles.cos().to(like.scalar_type()), angles.sin().to(like.scalar_type())};
}

at::Tensor RotaryEmbedding::apply(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const int64_t half = x.size(-1) / 2;
  const at::Tensor rotated = at::cat({x.narrow(-1, half, half).neg(), x.narrow(-1, 0, half)}, -1);
  return x * cos + rotated * sin;
}

}  // namespace detail
}  // namespace hf
}  // namespace gradcache
