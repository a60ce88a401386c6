#include "detail/score_tiles.h"

#include <gradcache/grad_cache.h>  // NonFiniteLossError

#include <algorithm>
#include <limits>
#include <sstream>
#include <string>

namespace gradcache {
namespace detail {
namespace {

// A [rows, cols] view of the front of a flat buffer: contiguous, so BLAS writes it directly
// and the edge tiles (fewer rows or columns) reuse the same memory.
at::Tensor tile_view(const at::Tensor& buffer, int64_t rows, int64_t cols) {
  return buffer.narrow(0, 0, rows * cols).view({rows, cols});
}

// logsumexp of the tile `s` along `dim` (1: each row over its columns, 0: each column over its
// rows). `scratch` receives exp(s - max); it may be `s` itself (then s is overwritten).
at::Tensor tile_logsumexp(const at::Tensor& s, int64_t dim, at::Tensor scratch) {
  const auto max = at::amax(s, {dim}, /*keepdim=*/true);
  at::sub_out(scratch, s, max).exp_();
  return scratch.sum(dim).log_().add_(max.squeeze(dim));
}

}  // namespace

void TileChecks::add(const at::Tensor& row_lse_of_tile, int64_t i0, int64_t ni, int64_t j0, int64_t nj) {
  // A NaN or +inf score makes its row's logsumexp NaN or +inf: one [ni] check per tile.
  flags_.push_back(at::isfinite(row_lse_of_tile).all());
  tiles_.push_back({i0, ni, j0, nj});
}

bool TileChecks::ok() const { return flags_.empty() || at::stack(flags_).all().item<bool>(); }

void TileChecks::check() const {
  if (ok()) return;  // one sync for all tiles, not one per tile
  const auto ok = at::stack(flags_);
  const auto bad = ok.logical_not().nonzero().select(1, 0);
  const auto& t = tiles_[bad[0].item<int64_t>()];
  std::ostringstream message;
  message << who_ << ": a score is NaN or infinite in the tile of query rows [" << t.i0 << ", " << t.i0 + t.ni
          << ") x passage rows [" << t.j0 << ", " << t.j0 + t.nj << ")"
          << (bad.numel() > 1 ? " (and " + std::to_string(bad.numel() - 1) + " more tile(s))" : std::string())
          << "; nothing was backpropagated. " << advice_;
  throw NonFiniteLossError(message.str(), loss_);
}

void fold_score_tiles(const at::Tensor& qs, const at::Tensor& p, int64_t tile, at::Tensor& row_lse,
                      at::Tensor& col_lse, TileChecks& checks, int64_t q_offset, int64_t p_offset) {
  const int64_t n = qs.size(0), m = p.size(0);
  const bool columns = col_lse.defined();
  const auto scores = at::empty({std::min(tile, n) * std::min(tile, m)}, qs.options());
  const auto scratch = columns ? at::empty_like(scores) : at::Tensor();
  for (int64_t i0 = 0; i0 < n; i0 += tile) {
    const int64_t ni = std::min(tile, n - i0);
    const auto qi = qs.narrow(0, i0, ni);
    auto row = row_lse.narrow(0, i0, ni);
    for (int64_t j0 = 0; j0 < m; j0 += tile) {
      const int64_t nj = std::min(tile, m - j0);
      auto s = tile_view(scores, ni, nj);
      at::mm_out(s, qi, p.narrow(0, j0, nj).t());
      if (columns) {  // before the row pass overwrites s
        const auto c = tile_logsumexp(s, 0, tile_view(scratch, ni, nj));
        auto col = col_lse.narrow(0, j0, nj);
        col.copy_(at::logaddexp(col, c));
      }
      const auto r = tile_logsumexp(s, 1, s);
      row.copy_(at::logaddexp(row, r));
      checks.add(r, q_offset + i0, ni, p_offset + j0, nj);
    }
  }
}

void backprop_score_tiles(const at::Tensor& qs, const at::Tensor& p, int64_t tile, const at::Tensor& row_lse,
                          const at::Tensor& g_row, const at::Tensor& col_lse, const at::Tensor& g_col,
                          at::Tensor& dq_acc, at::Tensor& dp_acc) {
  const bool rows_used = g_row.defined(), cols_used = g_col.defined();
  if (!rows_used && !cols_used) return;
  const auto type = qs.scalar_type();
  const int64_t n = qs.size(0), m = p.size(0);
  const auto scores = at::empty({std::min(tile, n) * std::min(tile, m)}, qs.options());
  const auto scratch = cols_used && rows_used ? at::empty_like(scores) : at::Tensor();
  for (int64_t i0 = 0; i0 < n; i0 += tile) {
    const int64_t ni = std::min(tile, n - i0);
    const auto qi = qs.narrow(0, i0, ni);
    auto dqi = dq_acc.narrow(0, i0, ni);
    const auto lse_i = rows_used ? row_lse.narrow(0, i0, ni).unsqueeze(1) : at::Tensor();
    const auto g_i = rows_used ? g_row.narrow(0, i0, ni).to(type).unsqueeze(1) : at::Tensor();
    for (int64_t j0 = 0; j0 < m; j0 += tile) {
      const int64_t nj = std::min(tile, m - j0);
      const auto pj = p.narrow(0, j0, nj);
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
      dp_acc.narrow(0, j0, nj).addmm_(ds.t(), qi);
    }
  }
}

}  // namespace detail
}  // namespace gradcache
