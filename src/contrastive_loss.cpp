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

at::Tensor score_matrix_loss(const at::Tensor& scores, Reduction reduction, bool symmetric, const at::Tensor& target) {
  TORCH_CHECK(scores.dim() == 2, "score_matrix_loss: scores must be [N, M], got ", scores.sizes());
  const auto t = detail::positive_columns(target, scores.size(0), scores.size(1), scores.device(), "contrastive_loss");
  const auto query_to_passage = at::cross_entropy_loss(scores, t, {}, to_aten(reduction));
  if (!symmetric) return query_to_passage;
  // Rows: each query's positive passage; columns: the N queries; target: its own query.
  const auto passage_to_query = at::cross_entropy_loss(
      scores.index_select(1, t).t(), at::arange(scores.size(0), t.options()), {}, to_aten(reduction));
  return (query_to_passage + passage_to_query) / 2;
}

at::Tensor contrastive_loss(const at::Tensor& q, const at::Tensor& p, const ContrastiveLossOptions& options,
                            const at::Tensor& target) {
  return score_matrix_loss(scores(q, p, options), options.reduction(), options.symmetric(), target);
}

at::Tensor symmetric_contrastive_loss(const at::Tensor& q, const at::Tensor& p, const ContrastiveLossOptions& options,
                                      const at::Tensor& target) {
  return contrastive_loss(q, p, ContrastiveLossOptions(options).symmetric(true), target);
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

}  // namespace gradcache
