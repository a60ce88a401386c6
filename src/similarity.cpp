#include <gradcache/similarity.h>

#include "detail/score_tiles.h"
#include "detail/state_guard.h"
#include "detail/targets.h"

#include <gradcache/rng_state.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>

namespace gradcache {
namespace {

constexpr const char* kDualCacheBackward = "dual_cache_backward";

std::vector<c10::Device> merge(std::vector<c10::Device> a, const std::vector<c10::Device>& b) {
  for (const auto& d : b) {
    if (std::find(a.begin(), a.end(), d) == a.end()) a.push_back(d);
  }
  return a;
}

// Phi on one tile, divided by the temperature, with its shape checked.
at::Tensor score_tile(const PairScorer& scorer, const at::Tensor& qi, const at::Tensor& pj, double temperature) {
  at::Tensor s = scorer(qi, pj);
  TORCH_CHECK(s.defined() && s.is_floating_point() && s.dim() == 2 && s.size(0) == qi.size(0) &&
                  s.size(1) == pj.size(0),
              kDualCacheBackward, ": the pair scorer must return floating-point scores [a, b] for q ", qi.sizes(), " and p ",
              pj.sizes(), ", got ", s.defined() ? s.toString() + " of shape " + c10::str(s.sizes()) : "undefined");
  return temperature == 1.0 ? s : s / temperature;
}

// logsumexp of `s` along `dim`, without touching `s`.
at::Tensor logsumexp_along(const at::Tensor& s, int64_t dim) {
  const auto max = at::amax(s, {dim}, /*keepdim=*/true);
  return (s - max).exp_().sum(dim).log_().add_(max.squeeze(dim));
}

// For the rows of a tile whose target column falls in [j0, j0 + nj): the column inside the
// tile (clamped elsewhere) and a 0/1 mask. Index arithmetic on [ni], no [N, M] mask and no
// host synchronisation.
std::pair<at::Tensor, at::Tensor> targets_in_tile(const at::Tensor& t_i, int64_t j0, int64_t nj) {
  const auto inside = (t_i >= j0).logical_and_(t_i < j0 + nj);
  return {(t_i - j0).clamp_(0, nj - 1).unsqueeze(1), inside};
}

}  // namespace

// ---- PairScorer -----------------------------------------------------------------------

std::vector<at::Tensor> PairScorer::parameters() const {
  return module_ ? module_->parameters() : std::vector<at::Tensor>{};
}

std::vector<at::Tensor> PairScorer::buffers() const { return module_ ? module_->buffers() : std::vector<at::Tensor>{}; }

// ---- PairMlp --------------------------------------------------------------------------

PairMlpImpl::PairMlpImpl(PairMlpOptions options_) : options(std::move(options_)) {
  TORCH_CHECK(options.dim() > 0 && options.hidden() > 0, "PairMlp: dim and hidden must be positive, got dim ",
              options.dim(), " and hidden ", options.hidden());
  TORCH_CHECK(options.dropout() >= 0 && options.dropout() < 1, "PairMlp: dropout must be in [0, 1), got ",
              options.dropout());
  fc1 = register_module("fc1", torch::nn::Linear(3 * options.dim(), options.hidden()));
  dropout = register_module("dropout", torch::nn::Dropout(options.dropout()));
  fc2 = register_module("fc2", torch::nn::Linear(options.hidden(), 1));
}

at::Tensor PairMlpImpl::forward(const at::Tensor& q, const at::Tensor& p) {
  const int64_t d = options.dim();
  TORCH_CHECK(q.dim() == 2 && p.dim() == 2 && q.size(1) == d && p.size(1) == d, "PairMlp: q and p must be [rows, ",
              d, "], got q ", q.sizes(), " and p ", p.sizes());
  const auto& w = fc1->weight;  // [hidden, 3d] = [Wq | Wp | Wx]
  const auto hq = at::linear(q, w.narrow(1, 0, d), fc1->bias);                   // [a, hidden]
  const auto hp = at::linear(p, w.narrow(1, d, d));                              // [b, hidden]
  const auto hx = at::linear(q.unsqueeze(1) * p.unsqueeze(0), w.narrow(1, 2 * d, d));  // [a, b, hidden]
  // [a, b, hidden] in pair-major order, as fc1 on the concatenation would give: dropout then
  // draws its mask in the same order as forward_concat on the pairs listed row by row.
  const auto h = dropout(at::relu(hx + hq.unsqueeze(1) + hp.unsqueeze(0)));
  return fc2(h).squeeze(-1);
}

at::Tensor PairMlpImpl::forward_concat(const at::Tensor& q, const at::Tensor& p) {
  TORCH_CHECK(q.sizes() == p.sizes() && q.dim() == 2 && q.size(1) == options.dim(),
              "PairMlp::forward_concat: q and p must both be [k, ", options.dim(), "], got q ", q.sizes(), " and p ",
              p.sizes());
  return fc2(dropout(at::relu(fc1(at::cat({q, p, q * p}, 1))))).squeeze(-1);
}

// ---- dual_cache_backward --------------------------------------------------------------

namespace {

struct DualProblem {
  at::Tensor q, p, t;  // representations (detached) and each query's positive column
  int64_t n, m, tile;
  double tau;
  bool symmetric;
  double s1, s2;  // L = s1 sum_i (rowlse_i - S_i,t(i)) + s2 sum_a (collse_t(a) - S_a,t(a))
};

DualProblem dual_problem(const at::Tensor& q_in, const at::Tensor& p_in, const PairScorer& scorer,
                         const DualCacheOptions& options, const at::Tensor& target) {
  TORCH_CHECK(scorer.defined(), kDualCacheBackward, ": the pair scorer is empty");
  TORCH_CHECK(q_in.defined() && p_in.defined() && q_in.dim() == 2 && p_in.dim() == 2, kDualCacheBackward,
              ": representations must be 2-d [rows, dim], got q ", q_in.defined() ? c10::str(q_in.sizes()) : "undefined",
              " and p ", p_in.defined() ? c10::str(p_in.sizes()) : "undefined");
  TORCH_CHECK(q_in.size(0) > 0 && p_in.size(0) > 0, kDualCacheBackward, ": empty batch (q ", q_in.sizes(), ", p ", p_in.sizes(),
              ")");
  TORCH_CHECK(q_in.is_floating_point() && p_in.is_floating_point(), kDualCacheBackward,
              ": representations must be floating point, got ", q_in.scalar_type(), " and ", p_in.scalar_type());
  TORCH_CHECK(options.tile_size() > 0, kDualCacheBackward, ": tile_size must be positive, got ", options.tile_size());
  const double tau = options.temperature();
  TORCH_CHECK(tau > 0 && std::isfinite(tau), kDualCacheBackward, ": temperature must be positive and finite, got ", tau);
  DualProblem d;
  d.q = q_in.detach();
  d.p = p_in.detach();
  d.n = d.q.size(0);
  d.m = d.p.size(0);
  d.tile = options.tile_size();
  d.tau = tau;
  d.t = detail::positive_columns(target, d.n, d.m, d.q.device(), kDualCacheBackward);
  d.symmetric = options.symmetric();
  const double per_row = options.reduction() == Reduction::Mean ? 1.0 / static_cast<double>(d.n) : 1.0;
  d.s1 = d.symmetric ? per_row / 2 : per_row;
  d.s2 = d.symmetric ? per_row / 2 : 0.0;
  return d;
}

// What pass (a) keeps of all scores: each row's (and column's) logsumexp and the positives.
struct ScoreSummary {
  at::Tensor row_lse, col_lse, positive;
};

// Pass (a): all scores tile by tile without graph, folded into running logsumexps.
ScoreSummary summarise_scores(const DualProblem& d, const PairScorer& scorer) {
  c10::NoGradGuard no_grad;
  ScoreSummary out;
  detail::TileChecks checks(kDualCacheBackward, "Check the representations, the pair scorer and the temperature",
                            std::numeric_limits<double>::quiet_NaN());
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t i0 = 0; i0 < d.n; i0 += d.tile) {
    const int64_t ni = std::min(d.tile, d.n - i0);
    const auto qi = d.q.narrow(0, i0, ni);
    const auto t_i = d.t.narrow(0, i0, ni);
    at::Tensor row, pos;
    for (int64_t j0 = 0; j0 < d.m; j0 += d.tile) {
      const int64_t nj = std::min(d.tile, d.m - j0);
      const auto s = score_tile(scorer, qi, d.p.narrow(0, j0, nj), d.tau);
      if (!out.row_lse.defined()) {  // the scores' type (float for a float Phi on double reps)
        out.row_lse = at::empty({d.n}, s.options());
        out.positive = at::empty({d.n}, s.options());
        if (d.symmetric) out.col_lse = at::full({d.m}, -inf, s.options());
      }
      if (!row.defined()) {
        row = at::full({ni}, -inf, s.options());
        pos = at::zeros({ni}, s.options());
      }
      const auto r = logsumexp_along(s, 1);
      row = at::logaddexp(row, r);
      checks.add(r, i0, ni, j0, nj);
      if (d.symmetric) {
        auto col = out.col_lse.narrow(0, j0, nj);
        col.copy_(at::logaddexp(col, logsumexp_along(s, 0)));
      }
      const auto [index, inside] = targets_in_tile(t_i, j0, nj);
      pos.add_(at::where(inside, s.gather(1, index).squeeze(1), at::zeros({}, s.options())));
    }
    out.row_lse.narrow(0, i0, ni).copy_(row);
    out.positive.narrow(0, i0, ni).copy_(pos);
  }
  checks.check();
  return out;
}

// Passes (b) + (c): each tile again with grad; its w = dL/dS comes from its own scores and
// the logsumexps. Phi's parameters accumulate; dL/dq and dL/dp are summed into q_grad, p_grad.
void backprop_tiles(const DualProblem& d, const PairScorer& scorer, const ScoreSummary& sum, at::Tensor& q_grad,
                    at::Tensor& p_grad) {
  const auto count = d.symmetric ? at::bincount(d.t, {}, d.m).to(sum.row_lse.scalar_type()) : at::Tensor();  // c_j
  c10::AutoGradMode with_grad(true);
  for (int64_t i0 = 0; i0 < d.n; i0 += d.tile) {
    const int64_t ni = std::min(d.tile, d.n - i0);
    const auto qi = d.q.narrow(0, i0, ni).detach().requires_grad_(true);  // dL/dq_I accumulates over J
    const auto t_i = d.t.narrow(0, i0, ni);
    const auto lse_i = sum.row_lse.narrow(0, i0, ni).unsqueeze(1);
    for (int64_t j0 = 0; j0 < d.m; j0 += d.tile) {
      const int64_t nj = std::min(d.tile, d.m - j0);
      const auto pj = d.p.narrow(0, j0, nj).detach().requires_grad_(true);
      const auto s = score_tile(scorer, qi, pj, d.tau);
      at::Tensor w;
      {
        c10::NoGradGuard no_grad;
        const auto sd = s.detach();
        w = (sd - lse_i).exp_().mul_(d.s1);
        if (d.symmetric) {
          w.add_((sd - sum.col_lse.narrow(0, j0, nj).unsqueeze(0)).exp_().mul_(count.narrow(0, j0, nj).unsqueeze(0)),
                 d.s2);
        }
        const auto [index, inside] = targets_in_tile(t_i, j0, nj);
        w.scatter_add_(1, index, inside.to(w.scalar_type()).mul_(-(d.s1 + d.s2)).unsqueeze(1));
      }
      torch::autograd::backward({s}, {w});
      if (pj.grad().defined()) p_grad.narrow(0, j0, nj).add_(pj.grad());
    }
    if (qi.grad().defined()) q_grad.narrow(0, i0, ni).copy_(qi.grad());
  }
}

}  // namespace

DualCacheResult dual_cache_backward(const at::Tensor& q_in, const at::Tensor& p_in, const PairScorer& scorer,
                                    const DualCacheOptions& options, const at::Tensor& target) {
  const DualProblem d = dual_problem(q_in, p_in, scorer, options, target);
  auto params = scorer.parameters();
  const auto devices = merge(devices_of({d.q, d.p}), devices_of(params));
  // Phi's buffers (BatchNorm statistics) are restored if pass (a) fails, and updated by pass
  // (a) only, not again by the recomputation.
  detail::BufferGuard buffers_if_failed(scorer.buffers());
  const auto rng_before = RngState::capture(devices);

  const ScoreSummary sum = summarise_scores(d, scorer);
  auto loss = (sum.row_lse - sum.positive).sum() * d.s1;
  if (d.symmetric) loss = loss + (sum.col_lse.index_select(0, d.t) - sum.positive).sum() * d.s2;
  const double value = loss.item<double>();
  if (!std::isfinite(value)) {
    std::ostringstream message;
    message << kDualCacheBackward << ": the loss is " << value << "; nothing was backpropagated";
    throw NonFiniteLossError(message.str(), value);
  }
  const auto rng_after = RngState::capture(devices);
  buffers_if_failed.dismiss();

  // The recomputation draws the same generator sequence as pass (a): dropout masks replay.
  auto q_grad = at::zeros_like(d.q), p_grad = at::zeros_like(d.p);
  {
    detail::BufferGuard buffers_updated_once(scorer.buffers());
    rng_before.restore();
    backprop_tiles(d, scorer, sum, q_grad, p_grad);
    rng_after.restore();
  }
  return {loss.detach(), q_grad.to(q_in.scalar_type()), p_grad.to(p_in.scalar_type())};
}

// ---- DualGradCache --------------------------------------------------------------------

DualGradCache::DualGradCache(std::vector<Model> models, std::vector<int64_t> chunk_sizes, PairScorer scorer,
                             DualCacheOptions options, GradCacheOptions cache_options)
    : GradCacheBase(std::move(models), std::move(chunk_sizes), std::move(cache_options)),
      scorer_(std::move(scorer)),
      dual_options_(std::move(options)) {
  TORCH_CHECK(this->models().size() == 2, "DualGradCache: needs two models (queries, passages), got ",
              this->models().size());
  TORCH_CHECK(scorer_.defined(), "DualGradCache: the pair scorer is empty");
  TORCH_CHECK(dual_options_.tile_size() > 0, "DualGradCache: tile_size must be positive, got ",
              dual_options_.tile_size());
  TORCH_CHECK(dual_options_.temperature() > 0 && std::isfinite(dual_options_.temperature()),
              "DualGradCache: temperature must be positive and finite, got ", dual_options_.temperature());
  // The scorer's gradients accumulate inside dual_cache_backward, unscaled: a scaler would
  // then divide them by its scale.
  TORCH_CHECK(!this->options().scaler(), "DualGradCache: a GradScaler is not supported (the scorer's gradients are "
              "not scaled); use Precision::bf16, which needs no loss scaling, or fp32");
}

DualGradCache::DualGradCache(std::vector<Model> models, int64_t chunk_size, PairScorer scorer,
                             DualCacheOptions options, GradCacheOptions cache_options)
    : DualGradCache(std::move(models), std::vector<int64_t>{chunk_size}, std::move(scorer), std::move(options),
                    std::move(cache_options)) {}

std::vector<at::Tensor> DualGradCache::build_cache(const std::vector<at::Tensor>& reps, const LossArgs& loss_args,
                                                   at::Tensor& loss_out) {
  DualCacheOptions options = dual_options_;
  for (const auto& [name, value] : loss_args.items()) {
    TORCH_CHECK(name == "reduction" || name == "target", "DualGradCache: unknown loss argument '", name,
                "'; it takes \"reduction\" and \"target\"");
  }
  if (loss_args.has("reduction")) options.reduction(parse_reduction(loss_args.get_string("reduction", "mean")));
  auto result = dual_cache_backward(reps[0], reps[1], scorer_, options, loss_args.get_tensor("target"));
  loss_out = result.loss.reshape({});
  return {result.q_grad, result.p_grad};
}

}  // namespace gradcache
