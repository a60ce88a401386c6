#include <gradcache/streaming_loss.h>

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

constexpr const char* kWho = "streaming_contrastive_loss";

// The type the tiles are computed in: float for half / bfloat16 inputs (the running sums and
// exp need float's range), the inputs' own type otherwise.
at::ScalarType compute_type(at::ScalarType t) { return t == at::kHalf || t == at::kBFloat16 ? at::kFloat : t; }

// A [rows, cols] view of the front of a flat buffer: contiguous, so BLAS writes it directly
// and the edge tiles (fewer rows or columns) reuse the same memory.
at::Tensor tile_view(const at::Tensor& buffer, int64_t rows, int64_t cols) {
  return buffer.narrow(0, 0, rows * cols).view({rows, cols});
}

// Throws NonFiniteLossError if a representation row holds NaN or inf: found up front, since a
// -inf score would otherwise pass the forward (probability 0) and turn the backward into NaN.
void check_rows_finite(const at::Tensor& x, const char* name) {
  const auto bad = at::isfinite(x).all(1).logical_not();
  if (!bad.any().item<bool>()) return;
  const auto first = bad.nonzero().select(1, 0);
  std::ostringstream message;
  message << kWho << ": " << first.numel() << " row(s) of " << name << " hold NaN or inf (the first is row "
          << first[0].item<int64_t>() << "); nothing was backpropagated. Check the encoder's output and the "
          << "learning rate";
  throw NonFiniteLossError(message.str(), std::numeric_limits<double>::quiet_NaN());
}

// Where each per-tile finiteness flag came from, to name the tile in the error.
struct TileRef {
  int64_t i0, ni, j0, nj;
};

void check_tiles_finite(const std::vector<at::Tensor>& flags, const std::vector<TileRef>& tiles) {
  if (flags.empty()) return;
  const auto ok = at::stack(flags);  // one sync for all tiles, not one per tile
  if (ok.all().item<bool>()) return;
  const auto bad = ok.logical_not().nonzero().select(1, 0);
  const auto& t = tiles[bad[0].item<int64_t>()];
  std::ostringstream message;
  message << kWho << ": a score is NaN or infinite in the tile of query rows [" << t.i0 << ", " << t.i0 + t.ni
          << ") x passage rows [" << t.j0 << ", " << t.j0 + t.nj << ")"
          << (bad.numel() > 1 ? " (and " + std::to_string(bad.numel() - 1) + " more tile(s))" : std::string())
          << "; nothing was backpropagated. The scores q p^T / temperature overflow: use a larger temperature, "
          << "Similarity::Cosine, or float32 instead of half precision";
  throw NonFiniteLossError(message.str(), std::numeric_limits<double>::infinity());
}

// logsumexp of the tile `s` along `dim` (1: each row over its columns, 0: each column over its
// rows). `scratch` receives exp(s - max); it may be `s` itself (then s is overwritten).
at::Tensor tile_logsumexp(const at::Tensor& s, int64_t dim, at::Tensor scratch) {
  const auto max = at::amax(s, {dim}, /*keepdim=*/true);
  at::sub_out(scratch, s, max).exp_();
  return scratch.sum(dim).log_().add_(max.squeeze(dim));
}

// Row- and column-wise logsumexp of S = q p^T / tau. Forward: for each row tile I and column
// tile J, S_IJ is folded into the running logsumexp of its rows (and columns); only the
// results (N + M numbers) are kept. Backward: S_IJ is recomputed, dS_IJ = g_I exp(S_IJ - lse_I)
// (+ g_J exp(S_IJ - lse_J)), and dq_I += dS_IJ p_J / tau, dp_J += dS_IJ^T q_I / tau.
struct TiledLogSumExp : public torch::autograd::Function<TiledLogSumExp> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& p, const at::Tensor& tau,
                               int64_t tile, bool columns) {
    const auto type = compute_type(q.scalar_type());
    const auto qc = q.to(type), pc = p.to(type);
    const auto inv_tau = tau.to(qc.options()).reciprocal();
    const int64_t n = qc.size(0), m = pc.size(0);
    const double neg_inf = -std::numeric_limits<double>::infinity();

    auto row_lse = at::full({n}, neg_inf, qc.options());
    auto col_lse = columns ? at::full({m}, neg_inf, qc.options()) : at::Tensor();
    const auto scores = at::empty({std::min(tile, n) * std::min(tile, m)}, qc.options());
    const auto scratch = columns ? at::empty_like(scores) : at::Tensor();
    std::vector<at::Tensor> finite;
    std::vector<TileRef> tiles;

    for (int64_t i0 = 0; i0 < n; i0 += tile) {
      const int64_t ni = std::min(tile, n - i0);
      const auto qi = qc.narrow(0, i0, ni) * inv_tau;  // scaling q_I, not S_IJ: a [ni, d] pass
      auto row = row_lse.narrow(0, i0, ni);
      for (int64_t j0 = 0; j0 < m; j0 += tile) {
        const int64_t nj = std::min(tile, m - j0);
        auto s = tile_view(scores, ni, nj);
        at::mm_out(s, qi, pc.narrow(0, j0, nj).t());
        if (columns) {  // before the row pass overwrites s
          const auto c = tile_logsumexp(s, 0, tile_view(scratch, ni, nj));
          auto col = col_lse.narrow(0, j0, nj);
          col.copy_(at::logaddexp(col, c));
        }
        const auto r = tile_logsumexp(s, 1, s);
        row.copy_(at::logaddexp(row, r));
        // A NaN or +inf score makes its row's logsumexp NaN or +inf: one [ni] check per tile.
        finite.push_back(at::isfinite(r).all());
        tiles.push_back({i0, ni, j0, nj});
      }
    }
    check_tiles_finite(finite, tiles);

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
    const int64_t tile = ctx->saved_data["tile"].toInt();
    const at::Tensor col_lse = columns ? saved[4] : at::Tensor();
    const at::Tensor g_row = grads[0];
    const at::Tensor g_col = columns ? grads[1] : at::Tensor();
    const bool rows_used = g_row.defined(), cols_used = g_col.defined();
    if (!rows_used && !cols_used) return {at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};

    const auto type = compute_type(q.scalar_type());
    const auto qc = q.to(type), pc = p.to(type);
    const auto inv_tau = tau.to(qc.options()).reciprocal();
    const int64_t n = qc.size(0), m = pc.size(0);
    auto dq = at::zeros_like(qc), dp = at::zeros_like(pc);
    auto sum_dS_S = at::zeros({}, qc.options());  // sum_ij dS_ij S_ij, for d/dtau

    const auto scores = at::empty({std::min(tile, n) * std::min(tile, m)}, qc.options());
    const auto scratch = cols_used && rows_used ? at::empty_like(scores) : at::Tensor();
    for (int64_t i0 = 0; i0 < n; i0 += tile) {
      const int64_t ni = std::min(tile, n - i0);
      const auto qi = qc.narrow(0, i0, ni) * inv_tau;
      auto dqi = dq.narrow(0, i0, ni);  // accumulates dS p_J; divided by tau below
      const auto lse_i = rows_used ? row_lse.narrow(0, i0, ni).unsqueeze(1) : at::Tensor();
      const auto g_i = rows_used ? g_row.narrow(0, i0, ni).to(type).unsqueeze(1) : at::Tensor();
      for (int64_t j0 = 0; j0 < m; j0 += tile) {
        const int64_t nj = std::min(tile, m - j0);
        const auto pj = pc.narrow(0, j0, nj);
        auto s = tile_view(scores, ni, nj);
        at::mm_out(s, qi, pj.t());
        at::Tensor ds;
        if (cols_used) {
          auto c = rows_used ? tile_view(scratch, ni, nj) : s;
          at::sub_out(c, s, col_lse.narrow(0, j0, nj).unsqueeze(0)).exp_();
          c.mul_(g_col.narrow(0, j0, nj).to(type).unsqueeze(0));
          ds = c;
        }
        if (rows_used) {
          s.sub_(lse_i).exp_().mul_(g_i);
          if (cols_used) s.add_(ds);
          ds = s;
        }
        dqi.addmm_(ds, pj);
        dp.narrow(0, j0, nj).addmm_(ds.t(), qi);
      }
      // sum_ij dS_ij S_ij = sum_i (q_i / tau) . (sum_j dS_ij p_j): S is homogeneous in 1/tau,
      // so the temperature's gradient needs no [N, M] term, only this [ni, d] product.
      sum_dS_S.add_((qi * dqi).sum());
      dqi.mul_(inv_tau);
    }
    auto dtau = (sum_dS_S * inv_tau).neg_();
    return {dq.to(q.scalar_type()), dp.to(p.scalar_type()), dtau.reshape(tau.sizes()).to(tau.scalar_type()),
            at::Tensor(), at::Tensor()};
  }
};

void check_representations(const at::Tensor& q, const at::Tensor& p) {
  TORCH_CHECK(q.defined() && p.defined(), kWho, ": undefined representations");
  TORCH_CHECK(q.dim() == 2 && p.dim() == 2, kWho, ": representations must be 2-d [rows, dim], got q ", q.sizes(),
              " and p ", p.sizes());
  TORCH_CHECK(q.size(1) == p.size(1), kWho, ": q and p must have the same dimension, got q ", q.sizes(), " and p ",
              p.sizes(), "; project them to one size first");
  TORCH_CHECK(q.size(0) > 0 && p.size(0) > 0, kWho, ": empty batch (q ", q.sizes(), ", p ", p.sizes(), ")");
  TORCH_CHECK(q.is_floating_point() && p.is_floating_point(), kWho,
              ": representations must be floating point, got ", q.scalar_type(), " and ", p.scalar_type());
  TORCH_CHECK(q.scalar_type() == p.scalar_type(), kWho, ": q and p must have the same dtype, got ", q.scalar_type(),
              " and ", p.scalar_type(), "; convert one of them");
  TORCH_CHECK(q.device() == p.device(), kWho, ": q and p must be on the same device, got ", q.device(), " and ",
              p.device());
}

void check_tile_size(int64_t tile) {
  TORCH_CHECK(tile > 0, kWho, ": tile_size must be positive, got ", tile, " (", kDefaultTileSize,
              " is the default)");
}

// The temperature as a 0-dim tensor on q's device, checked. A tensor keeps its graph.
at::Tensor temperature_of(const StreamingLossOptions& options, const at::Tensor& q) {
  const auto& t = options.temperature_tensor();
  if (!t.defined()) {
    const double value = options.temperature();
    TORCH_CHECK(value > 0 && std::isfinite(value), kWho, ": temperature must be positive and finite, got ", value);
    return at::scalar_tensor(value, q.options().dtype(compute_type(q.scalar_type())));
  }
  TORCH_CHECK(t.numel() == 1 && t.is_floating_point(), kWho,
              ": the temperature tensor must be a floating-point tensor with one element, got ", t.scalar_type(),
              " of shape ", t.sizes());
  const double value = t.item<double>();
  TORCH_CHECK(value > 0 && std::isfinite(value), kWho, ": temperature must be positive and finite, got ", value,
              "; for a learnable temperature, parametrise it as exp(log_tau) or clamp it");
  return t.reshape({}).to(q.device());
}

at::Tensor reduce(const at::Tensor& per_row, Reduction reduction) {
  return reduction == Reduction::Sum ? per_row.sum() : per_row.mean();
}

}  // namespace

std::vector<at::Tensor> streaming_logsumexp(const at::Tensor& q, const at::Tensor& p, const at::Tensor& temperature,
                                            int64_t tile_size, bool columns) {
  check_representations(q, p);
  check_tile_size(tile_size);
  TORCH_CHECK(temperature.defined(), "streaming_logsumexp: the temperature is undefined; pass a one-element tensor");
  const auto tau = temperature_of(StreamingLossOptions().temperature_tensor(temperature), q);
  check_rows_finite(q, "q");
  check_rows_finite(p, "p");
  return TiledLogSumExp::apply(q, p, tau, tile_size, columns);
}

at::Tensor streaming_contrastive_loss(const at::Tensor& q, const at::Tensor& p, const StreamingLossOptions& options,
                                      const at::Tensor& target) {
  check_representations(q, p);
  check_tile_size(options.tile_size());
  const auto tau = temperature_of(options, q);
  const auto t = detail::positive_columns(target, q.size(0), p.size(0), q.device(), kWho);
  check_rows_finite(q, "q");
  check_rows_finite(p, "p");

  at::Tensor a = q, b = p;
  if (options.similarity() == Similarity::Cosine) {  // as contrastive_loss: x / max(|x|, eps)
    a = q / q.norm(2, 1, /*keepdim=*/true).clamp_min(1e-12);
    b = p / p.norm(2, 1, /*keepdim=*/true).clamp_min(1e-12);
  }
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
  check_tile_size(options_.tile_size());
  if (!options_.temperature_tensor().defined()) {
    TORCH_CHECK(options_.temperature() > 0 && std::isfinite(options_.temperature()),
                "StreamingContrastiveLoss: temperature must be positive and finite, got ", options_.temperature());
  }
}

at::Tensor StreamingContrastiveLoss::operator()(const at::Tensor& q, const at::Tensor& p, const LossArgs& args) const {
  StreamingLossOptions options = options_;
  for (const auto& [name, value] : args.items()) {
    if (name == "reduction") {
      options.reduction(parse_reduction(args.get_string("reduction", "mean")));
    } else if (name == "temperature") {
      if (value.isTensor()) {
        options.temperature_tensor(value.toTensor());
      } else {
        TORCH_CHECK(value.isDouble() || value.isInt(), "StreamingContrastiveLoss: \"temperature\" must be a number or ",
                    "a one-element tensor, got ", value.tagKind());
        options.temperature(value.toScalar().toDouble()).temperature_tensor(at::Tensor());
      }
    } else {
      TORCH_CHECK(name == "target", "StreamingContrastiveLoss: unknown argument '", name,
                  "'; it takes \"reduction\", \"target\" and \"temperature\"");
    }
  }
  return streaming_contrastive_loss(q, p, options, args.get_tensor("target"));
}

}  // namespace gradcache
