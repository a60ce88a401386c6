// The tile loops under the streaming and sharded losses: the scores S = (q / tau) p^T of one
// block of queries against one block of passages, folded into running log-sum-exps in the
// forward and recomputed into gradients in the backward, one tile x tile piece at a time.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <limits>
#include <vector>

namespace gradcache {
namespace detail {

/// The type the tiles are computed in: float for half / bfloat16 inputs (the running sums and
/// exp need float's range), the inputs' own type otherwise.
inline at::ScalarType tile_compute_type(at::ScalarType t) {
  return t == at::kHalf || t == at::kBFloat16 ? at::kFloat : t;
}

/// What the dot-product losses advise when a score overflows.
inline constexpr const char* kScoreOverflowAdvice =
    "The scores q p^T / temperature overflow: use a larger temperature, Similarity::Cosine, or float32 instead of "
    "half precision";

/// Per-tile finiteness flags and where each tile lies, checked together (one sync for all).
class TileChecks {
 public:
  /// `who` starts the error message, `advice` ends it; `loss` is the NonFiniteLossError's value.
  explicit TileChecks(const char* who, const char* advice = kScoreOverflowAdvice,
                      double loss = std::numeric_limits<double>::infinity())
      : who_(who), advice_(advice), loss_(loss) {}
  void add(const at::Tensor& row_lse_of_tile, int64_t i0, int64_t ni, int64_t j0, int64_t nj);
  /// Whether every tile's scores were finite (one sync).
  bool ok() const;
  /// Throws NonFiniteLossError naming the first tile whose scores hold NaN or infinity.
  void check() const;

 private:
  struct Ref {
    int64_t i0, ni, j0, nj;
  };
  const char* who_;
  const char* advice_;
  double loss_;
  std::vector<at::Tensor> flags_;
  std::vector<Ref> tiles_;
};

/// Forward over one block pair: folds S = qs p^T (qs: queries already divided by tau) into
/// `row_lse` [n] and, when defined, `col_lse` [m], in place. `q_offset` / `p_offset` (the
/// blocks' first global rows) only name tiles in errors.
void fold_score_tiles(const at::Tensor& qs, const at::Tensor& p, int64_t tile, at::Tensor& row_lse,
                      at::Tensor& col_lse, TileChecks& checks, int64_t q_offset = 0, int64_t p_offset = 0);

/// Backward over one block pair: with dS = g_row exp(S - row_lse) (+ g_col exp(S - col_lse)),
/// adds dS p to `dq_acc` [n, d] (not yet divided by tau) and dS^T qs to `dp_acc` [m, d]. An
/// undefined g_row or g_col leaves that direction out.
void backprop_score_tiles(const at::Tensor& qs, const at::Tensor& p, int64_t tile, const at::Tensor& row_lse,
                          const at::Tensor& g_row, const at::Tensor& col_lse, const at::Tensor& g_col,
                          at::Tensor& dq_acc, at::Tensor& dp_acc);

}  // namespace detail
}  // namespace gradcache
