#include "detail/streaming_parts.h"

#include "detail/score_tiles.h"

#include <cmath>
#include <string>
#include <utility>

namespace gradcache {
namespace detail {

void check_representations(const at::Tensor& q, const at::Tensor& p, const char* who) {
  TORCH_CHECK(q.defined() && p.defined(), who, ": undefined representations");
  TORCH_CHECK(q.dim() == 2 && p.dim() == 2, who, ": representations must be 2-d [rows, dim], got q ", q.sizes(),
              " and p ", p.sizes());
  TORCH_CHECK(q.size(1) == p.size(1), who, ": q and p must have the same dimension, got q ", q.sizes(), " and p ",
              p.sizes(), "; project them to one size first");
  TORCH_CHECK(q.size(0) > 0 && p.size(0) > 0, who, ": empty batch (q ", q.sizes(), ", p ", p.sizes(), ")");
  TORCH_CHECK(q.is_floating_point() && p.is_floating_point(), who,
              ": representations must be floating point, got ", q.scalar_type(), " and ", p.scalar_type());
  TORCH_CHECK(q.scalar_type() == p.scalar_type(), who, ": q and p must have the same dtype, got ", q.scalar_type(),
              " and ", p.scalar_type(), "; convert one of them");
  TORCH_CHECK(q.device() == p.device(), who, ": q and p must be on the same device, got ", q.device(), " and ",
              p.device());
}

void check_tile_size(int64_t tile, const char* who) {
  TORCH_CHECK(tile > 0, who, ": tile_size must be positive, got ", tile, " (", kDefaultTileSize,
              " is the default)");
}

at::Tensor temperature_of(const StreamingLossOptions& options, const at::Tensor& q, const char* who) {
  const auto& t = options.temperature_tensor();
  if (!t.defined()) {
    const double value = options.temperature();
    TORCH_CHECK(value > 0 && std::isfinite(value), who, ": temperature must be positive and finite, got ", value);
    return at::scalar_tensor(value, q.options().dtype(tile_compute_type(q.scalar_type())));
  }
  TORCH_CHECK(t.numel() == 1 && t.is_floating_point(), who,
              ": the temperature tensor must be a floating-point tensor with one element, got ", t.scalar_type(),
              " of shape ", t.sizes());
  const double value = t.item<double>();
  TORCH_CHECK(value > 0 && std::isfinite(value), who, ": temperature must be positive and finite, got ", value,
              "; for a learnable temperature, parametrise it as exp(log_tau) or clamp it");
  return t.reshape({}).to(q.device());
}

StreamingLossOptions with_loss_args(StreamingLossOptions options, const LossArgs& args, const char* who,
                                    bool targets_allowed) {
  for (const auto& [name, value] : args.items()) {
    if (name == "reduction") {
      options.reduction(parse_reduction(args.get_string("reduction", "mean")));
    } else if (name == "temperature") {
      if (value.isTensor()) {
        options.temperature_tensor(value.toTensor());
      } else {
        TORCH_CHECK(value.isDouble() || value.isInt(), who, ": \"temperature\" must be a number or ",
                    "a one-element tensor, got ", value.tagKind());
        options.temperature(value.toScalar().toDouble()).temperature_tensor(at::Tensor());
      }
    } else if (name == "target") {
      TORCH_CHECK(targets_allowed, who, ": explicit targets are not supported: each rank's passages must hold its ",
                  "queries' positives, in the stride-(1 + k) layout (positive, then its k hard negatives)");
    } else {
      TORCH_CHECK(false, who, ": unknown argument '", name, "'; it takes \"reduction\", ",
                  targets_allowed ? "\"target\" and " : "", "\"temperature\"");
    }
  }
  return options;
}

std::pair<at::Tensor, at::Tensor> similarity_inputs(const at::Tensor& q, const at::Tensor& p, Similarity similarity) {
  if (similarity != Similarity::Cosine) return {q, p};
  return {q / q.norm(2, 1, /*keepdim=*/true).clamp_min(1e-12), p / p.norm(2, 1, /*keepdim=*/true).clamp_min(1e-12)};
}

}  // namespace detail
}  // namespace gradcache
