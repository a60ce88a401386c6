#include <gradcache/contrastive_loss.h>

#include "detail/targets.h"

#include <ATen/ATen.h>

#include <cmath>

namespace gradcache {
namespace {

int64_t to_aten(Reduction r) { return r == Reduction::Sum ? at::Reduction::Sum : at::Reduction::Mean; }

// Scores S = sim(q, p) / temperature, shape [N, M], after checking the operands.
at::Tensor scores(const at::Tensor& q, const at::Tensor& p, const ContrastiveLossOptions& options) {
  TORCH_CHECK(q.defined() && p.defined(), "contrastive_loss: undefined representations");
  TORCH_CHECK(q.dim() == 2 && p.dim() == 2, "contrastive_loss: representations must be 2-d [rows, dim], got q ",
              q.sizes(), " and p ", p.sizes());
  TORCH_CHECK(q.size(1) == p.size(1), "contrastive_loss: q and p must have the same dimension, got q ", q.sizes(),
              " and p ", p.sizes());
  TORCH_CHECK(q.size(0) > 0 && p.size(0) > 0, "contrastive_loss: empty batch (q ", q.sizes(), ", p ", p.sizes(),
              ")");
  TORCH_CHECK(q.is_floating_point() && p.is_floating_point(), "contrastive_loss: representations must be floating "
              "point, got ", q.scalar_type(), " and ", p.scalar_type());
  TORCH_CHECK(options.temperature() > 0 && std::isfinite(options.temperature()),
              "contrastive_loss: temperature must be positive and finite, got ", options.temperature());
  at::Tensor a = q, b = p;
  if (options.similarity() == Similarity::Cosine) {
    // As torch.nn.functional.normalize: x / max(|x|, eps).
    a = q / q.norm(2, 1, /*keepdim=*/true).clamp_min(1e-12);
    b = p / p.norm(2, 1, /*keepdim=*/true).clamp_min(1e-12);
  }
  return a.matmul(b.t()) / options.temperature();
}

}  // namespace

Reduction parse_reduction(const std::string& name) {
  if (name == "mean") return Reduction::Mean;
  if (name == "sum") return Reduction::Sum;
  TORCH_CHECK(false, "unknown reduction '", name, "': use \"mean\" or \"sum\"");
}

at::Tensor contrastive_loss(const at::Tensor& q, const at::Tensor& p, const ContrastiveLossOptions& options,
                            const at::Tensor& target) {
  const auto s = scores(q, p, options);
  const auto t = detail::positive_columns(target, q.size(0), p.size(0), s.device(), "contrastive_loss");
  return at::cross_entropy_loss(s, t, {}, to_aten(options.reduction()));
}

at::Tensor symmetric_contrastive_loss(const at::Tensor& q, const at::Tensor& p, const ContrastiveLossOptions& options,
                                      const at::Tensor& target) {
  const auto s = scores(q, p, options);
  const auto t = detail::positive_columns(target, q.size(0), p.size(0), s.device(), "contrastive_loss");
  const auto query_to_passage = at::cross_entropy_loss(s, t, {}, to_aten(options.reduction()));
  // Rows: each query's positive passage; columns: the N queries; target: its own query.
  const auto passage_to_query = at::cross_entropy_loss(s.index_select(1, t).t(), at::arange(q.size(0), t.options()),
                                                       {}, to_aten(options.reduction()));
  return (query_to_passage + passage_to_query) / 2;
}

namespace {
ContrastiveLossOptions with_call_args(ContrastiveLossOptions options, const LossArgs& args) {
  if (args.has("reduction")) options.reduction(parse_reduction(args.get_string("reduction", "mean")));
  for (const auto& [name, value] : args.items()) {
    TORCH_CHECK(name == "reduction" || name == "target", "contrastive loss: unknown argument '", name,
                "'; it takes \"reduction\" and \"target\"");
  }
  return options;
}
}  // namespace

SimpleContrastiveLoss::SimpleContrastiveLoss(ContrastiveLossOptions options) : options_(std::move(options)) {}

at::Tensor SimpleContrastiveLoss::operator()(const at::Tensor& q, const at::Tensor& p, const LossArgs& args) const {
  return contrastive_loss(q, p, with_call_args(options_, args), args.get_tensor("target"));
}

SymmetricContrastiveLoss::SymmetricContrastiveLoss(ContrastiveLossOptions options) : options_(std::move(options)) {}

at::Tensor SymmetricContrastiveLoss::operator()(const at::Tensor& q, const at::Tensor& p, const LossArgs& args) const {
  return symmetric_contrastive_loss(q, p, with_call_args(options_, args), args.get_tensor("target"));
}

}  // namespace gradcache
