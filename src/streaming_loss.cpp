#include <gradcache/streaming_loss.h>

#include "detail/score_tiles.h"
#include "detail/streaming_parts.h"
#include "detail/targets.h"

#include <gradcache/grad_cache.h>  // NonFiniteLossError

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <utility>

namespace gradcache {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr const char* kStreamingLoss = "streaming_contrastive_loss";

// Throws NonFiniteLossError if a representation row holds NaN or inf: found up front, since a
// -inf score would otherwise pass the forward (probability 0) and turn the backward into NaN.
void check_rows_finite(const at::Tensor& x, const char* name) {
  const auto bad = at::isfinite(x).all(1).logical_not();
  if (!bad.any().item<bool>()) return;
  const auto first = bad.nonzero().select(1, 0);
  std::ostringstream message;
  message << kStreamingLoss << ": " << first.numel() << " row(s) of " << name << " hold NaN or inf (the first is row "
          << first[0].item<int64_t>() << "); nothing was backpropagated. Check the encoder's output and the "
          << "learning rate";
  throw NonFiniteLossError(message.str(), std::numeric_limits<double>::quiet_NaN());
}

// Row- and column-wise logsumexp of S = q p^T / tau. Forward: for each row tile I and column
// tile J, S_IJ is folded into the running logsumexp of its rows (and columns); only the
// results (N + M numbers) are kept. Backward: S_IJ is recomputed, dS_IJ = g_I exp(S_IJ - lse_I)
// (+ g_J exp(S_IJ - lse_J)), and dq_I += dS_IJ p_J / tau, dp_J += dS_IJ^T q_I / tau.
struct TiledLogSumExp : public torch::autograd::Function<TiledLogSumExp> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& p, const at::Tensor& tau,
                               int64_t tile, bool columns) {
    const auto type = detail::tile_compute_type(q.scalar_type());
    const auto qc = q.to(type), pc = p.to(type);
    const auto qs = qc * tau.to(qc.options()).reciprocal();  // scaling q, not S: an [N, d] pass
    const double neg_inf = -std::numeric_limits<double>::infinity();
    auto row_lse = at::full({qc.size(0)}, neg_inf, qc.options());
    auto col_lse = columns ? at::full({pc.size(0)}, neg_inf, qc.options()) : at::Tensor();
    detail::TileChecks checks(kStreamingLoss);
    detail::fold_score_tiles(qs, pc, tile, row_lse, col_lse, checks);
    checks.check();

    ctx->set_materialize_grads(false);  // an unused direction costs nothing in the backward
    ctx->saved_data["tile"] = tile;
    ctx->saved_data["columns"] = columns;
    if (columns) {
      ctx->save_for_backward({q, p, tau, row_lse, col_lse});
      return {row_lse, col_lse};
    }
    ctx->save_for_backward({q, p, tau, row_lse});
    return {row_lse};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &q = saved[0], &p = saved[1], &tau = saved[2], &row_lse = saved[3];
    const bool columns = ctx->saved_data["columns"].toBool();
    const at::Tensor col_lse = columns ? saved[4] : at::Tensor();
    const at::Tensor g_row = grads[0];
    const at::Tensor g_col = columns ? grads[1] : at::Tensor();
    if (!g_row.defined() && !g_col.defined()) return {at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};

    const auto type = detail::tile_compute_type(q.scalar_type());
    const auto qc = q.to(type), pc = p.to(type);
    const auto inv_tau = tau.to(qc.options()).reciprocal();
    const auto qs = qc * inv_tau;
    auto dq = at::zeros_like(qc), dp = at::zeros_like(pc);  // dq accumulates dS p; divided by tau below
    detail::backprop_score_tiles(qs, pc, ctx->saved_data["tile"].toInt(), row_lse, g_row, col_lse, g_col, dq, dp);
    // sum_ij dS_ij S_ij = sum_i (q_i / tau) . (sum_j dS_ij p_j): S is homogeneous in 1/tau,
    // so the temperature's gradient needs no [N, M] term, only this [N, d] product.
    auto dtau = ((qs * dq).sum() * inv_tau).neg_();
    dq.mul_(inv_tau);
    return {dq.to(q.scalar_type()), dp.to(p.scalar_type()), dtau.reshape(tau.sizes()).to(tau.scalar_type()),
            at::Tensor(), at::Tensor()};
  }
};

at::Tensor reduce(const at::Tensor& per_row, Reduction reduction) {
  return reduction == Reduction::Sum ? per_row.sum() : per_row.mean();
}

}  // namespace

std::vector<at::Tensor> streaming_logsumexp(const at::Tensor& q, const at::Tensor& p, const at::Tensor& temperature,
                                            int64_t tile_size, bool columns) {
  detail::check_representations(q, p, kStreamingLoss);
  detail::check_tile_size(tile_size, kStreamingLoss);
  TORCH_CHECK(temperature.defined(), "streaming_logsumexp: the temperature is undefined; pass a one-element tensor");
  const auto tau = detail::temperature_of(StreamingLossOptions().temperature_tensor(temperature), q, kStreamingLoss);
  check_rows_finite(q, "q");
  check_rows_finite(p, "p");
  return TiledLogSumExp::apply(q, p, tau, tile_size, columns);
}

at::Tensor streaming_contrastive_loss(const at::Tensor& q, const at::Tensor& p, const StreamingLossOptions& options,
                                      const at::Tensor& target) {
  detail::check_representations(q, p, kStreamingLoss);
  detail::check_tile_size(options.tile_size(), kStreamingLoss);
  const auto tau = detail::temperature_of(options, q, kStreamingLoss);
  const auto t = detail::positive_columns(target, q.size(0), p.size(0), q.device(), kStreamingLoss);
  check_rows_finite(q, "q");
  check_rows_finite(p, "p");

  const auto [a, b] = detail::similarity_inputs(q, p, options.similarity());
  const auto lse = TiledLogSumExp::apply(a, b, tau, options.tile_size(), options.symmetric());
  // The positives' scores, S_i,t(i) = (q_i / tau) . p_t(i): an [N, d] product, no mask.
  const auto type = lse[0].scalar_type();  // float for half inputs, as the tiles
  const auto positive = ((a.to(type) * tau.reciprocal().to(type)) * b.index_select(0, t).to(type)).sum(1);
  const auto query_to_passage = reduce(lse[0] - positive, options.reduction());
  if (!options.symmetric()) return query_to_passage;
  // Passage-to-query: anchor p_t(a) over the N queries is column t(a) of S, so its logsumexp
  // is the column logsumexp of that column, and its own query's score is S_a,t(a) again.
  const auto passage_to_query = reduce(lse[1].index_select(0, t) - positive, options.reduction());
  return (query_to_passage + passage_to_query) / 2;
}

StreamingContrastiveLoss::StreamingContrastiveLoss(StreamingLossOptions options) : options_(std::move(options)) {
  detail::check_tile_size(options_.tile_size(), "StreamingContrastiveLoss");
  if (!options_.temperature_tensor().defined()) {
    TORCH_CHECK(options_.temperature() > 0 && std::isfinite(options_.temperature()),
                "StreamingContrastiveLoss: temperature must be positive and finite, got ", options_.temperature());
  }
}

at::Tensor StreamingContrastiveLoss::operator()(const at::Tensor& q, const at::Tensor& p, const LossArgs& args) const {
  const auto options = detail::with_loss_args(options_, args, "StreamingContrastiveLoss");
  return streaming_contrastive_loss(q, p, options, args.get_tensor("target"));
}

}  // namespace gradcache
