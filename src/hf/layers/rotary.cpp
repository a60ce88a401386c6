#include "hf/layers/rotary.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <cmath>

namespace gradcache {
namespace hf {
namespace detail {

namespace {

// transformers' _compute_llama3_parameters, op for op in fp32: wavelengths shorter than the
// pre-training context / high_freq_factor stay, longer than context / low_freq_factor are
// divided by factor, and the band between is interpolated.
at::Tensor llama3_frequencies(const at::Tensor& inverse, const RopeScaling& s) {
  const double context = static_cast<double>(s.original_max_position_embeddings);
  const double low_wavelength = context / s.low_freq_factor, high_wavelength = context / s.high_freq_factor;
  // Python's scalar / tensor is reciprocal(tensor) * scalar: written so, to round alike.
  const at::Tensor wavelength = inverse.reciprocal() * (2 * M_PI);
  at::Tensor scaled = at::where(wavelength > low_wavelength, inverse / s.factor, inverse);
  const at::Tensor smooth = (wavelength.reciprocal() * context - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
  const at::Tensor smoothed = (1 - smooth) * scaled / s.factor + smooth * scaled;
  const at::Tensor medium = (wavelength < high_wavelength).logical_not() * (wavelength > low_wavelength).logical_not();
  return at::where(medium, smoothed, scaled);
}

}  // namespace

const char* rope_type_name(RopeScaling::Kind kind) {
  switch (kind) {
    case RopeScaling::Kind::Linear: return "linear";
    case RopeScaling::Kind::Llama3: return "llama3";
    case RopeScaling::Kind::Default: break;
  }
  return "default";
}

RotaryEmbedding::RotaryEmbedding(int64_t dimension, double theta, const RopeScaling& scaling) {
  TORCH_CHECK(dimension > 0 && dimension % 2 == 0, "RotaryEmbedding: the head size must be even, got ", dimension);
  // transformers: 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float) / dim)), in fp32.
  const at::Tensor exponents = at::arange(0, dimension, 2, at::kFloat) / static_cast<double>(dimension);
  inverse_frequency_ = at::reciprocal(at::pow(theta, exponents));
  if (scaling.kind == RopeScaling::Kind::Linear) inverse_frequency_ = inverse_frequency_ / scaling.factor;
  if (scaling.kind == RopeScaling::Kind::Llama3) inverse_frequency_ = llama3_frequencies(inverse_frequency_, scaling);
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
