// A contrastive loss that never builds the N x M score matrix (docs/design.md §5): scores are
// computed tile by tile, folded into an online log-sum-exp in the forward and recomputed in
// the backward, as in FlashAttention and Inf-CL.
#pragma once

#include <gradcache/contrastive_loss.h>
#include <gradcache/loss.h>

#include <ATen/core/Tensor.h>
#include <torch/arg.h>

#include <cstdint>
#include <vector>

namespace gradcache {

/// Rows and columns of one score tile when StreamingLossOptions::tile_size is not set. Chosen by
/// measurement (`gradcache-bench streaming --tile-sweep 8192`, d = 256, 2 cores, OpenBLAS):
/// forward + backward took 4.30 / 3.75 / 3.62 / 3.66 / 4.38 s with tiles of 256 / 512 / 1024 /
/// 2048 / 4096. Smaller tiles make the GEMMs less efficient, larger ones fall out of cache;
/// 1024 costs one 4 MiB float32 tile buffer (two when symmetric).
constexpr int64_t kDefaultTileSize = 1024;

struct StreamingLossOptions {
  /// Scores are divided by it. Ignored when temperature_tensor is set.
  TORCH_ARG(double, temperature) = 1.0;
  /// A learnable temperature: a one-element floating tensor holding tau itself (not its log),
  /// usually a parameter that requires grad; it receives dL/dtau = -(1/tau) sum_ij dL/dS_ij S_ij.
  /// The tensor is shared, so an optimizer's in-place updates are seen by later calls. For
  /// another parametrisation (log tau, CLIP's logit scale) pass the temperature per call,
  /// {"temperature", log_tau.exp()}, and autograd carries the gradient on to log_tau.
  TORCH_ARG(at::Tensor, temperature_tensor);
  /// Overridable per call with LossArgs {"reduction", "mean"|"sum"}.
  TORCH_ARG(Reduction, reduction) = Reduction::Mean;
  /// Cosine normalises q and p (differentiably) before the tiles; Dot uses them as they are.
  TORCH_ARG(Similarity, similarity) = Similarity::Dot;
  /// Also the passage-to-query direction, averaged with query-to-passage as
  /// symmetric_contrastive_loss does: each query's positive passage is the anchor, the N
  /// queries are its candidates. Costs one more pass over each tile, not a second matrix.
  TORCH_ARG(bool, symmetric) = false;
  /// Rows (and columns) of one score tile: the loss holds about three tile x tile buffers
  /// besides O((N + M) d) for the representations and their gradients. Must be positive.
  TORCH_ARG(int64_t, tile_size) = kDefaultTileSize;
};

/// Row-wise (and optionally column-wise) log-sum-exp of S = q p^T / temperature, tile by tile:
/// the primitive under the streaming loss. q: [N, d], p: [M, d], temperature: a one-element
/// tensor (may require grad). Returns {row_lse [N]} or, with `columns`, {row_lse [N],
/// col_lse [M]}; differentiable in q, p and temperature (a custom autograd function whose
/// backward recomputes each tile). Throws NonFiniteLossError naming the tile if a score is
/// NaN or infinite.
std::vector<at::Tensor> streaming_logsumexp(const at::Tensor& q, const at::Tensor& p, const at::Tensor& temperature,
                                            int64_t tile_size = kDefaultTileSize, bool columns = false);

/// InfoNCE with the semantics of contrastive_loss() (and, with options.symmetric(), of
/// symmetric_contrastive_loss()) in O((N + M) d + tile²) memory. q: [N, d], p: [M, d] with
/// M = N * (1 + k): query i's positive is row i * (1 + k) of p, followed by its k hard
/// negatives; or `target` (int64 [N]) names each query's positive row and M is free.
/// Differentiable in q, p and a temperature_tensor. Returns a 0-dim tensor.
at::Tensor streaming_contrastive_loss(const at::Tensor& q, const at::Tensor& p,
                                      const StreamingLossOptions& options = {}, const at::Tensor& target = {});

/// The streaming loss as a loss object: a drop-in for SimpleContrastiveLoss (or, with
/// symmetric(true), SymmetricContrastiveLoss) in GradCache, the functional API or plain
/// training:
///
///   GradCache cache({q_enc, p_enc}, 64, StreamingContrastiveLoss(StreamingLossOptions().temperature(0.05)));
///
/// LossArgs understood: "reduction" ("mean"|"sum"), "target" (int64 tensor [N]),
/// "temperature" (a number, or a one-element tensor that may require grad).
class StreamingContrastiveLoss : public QueryPassageLoss<StreamingContrastiveLoss> {
 public:
  explicit StreamingContrastiveLoss(StreamingLossOptions options = {});
  at::Tensor operator()(const at::Tensor& q, const at::Tensor& p, const LossArgs& args = {}) const;
  using QueryPassageLoss::operator();
  const char* name() const { return "StreamingContrastiveLoss"; }
  const StreamingLossOptions& options() const { return options_; }

 private:
  StreamingLossOptions options_;
};

}  // namespace gradcache
