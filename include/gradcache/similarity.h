// Learned similarity: a network Phi(q, p) scores query-passage pairs, trained with the encoders
// through the paper's dual gradient cache (Gao et al. 2021, §5; docs/design.md §6).
#pragma once

#include <gradcache/contrastive_loss.h>  // Reduction
#include <gradcache/grad_cache.h>

#include <ATen/core/Tensor.h>
#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace gradcache {

/// A learned similarity Phi: scores every pair of a tile of queries q [a, d] and passages
/// p [b, e], returning [a, b] (score [i][j] = Phi(q_i, p_j)). Built from a module whose
/// forward(q, p) does that (e.g. PairMlp), or from any callable plus the module that holds its
/// parameters (`PairScorer(fn, module)`): the module's buffers are then protected from double
/// updates and its devices' generators are replayed. Copies share the module.
class PairScorer {
 public:
  using Fn = std::function<at::Tensor(const at::Tensor& q, const at::Tensor& p)>;

  PairScorer() = default;
  PairScorer(Fn fn, std::shared_ptr<torch::nn::Module> module = nullptr)  // NOLINT: implicit by design
      : fn_(std::move(fn)), module_(std::move(module)) {}
  template <class M>
  PairScorer(const torch::nn::ModuleHolder<M>& holder)  // NOLINT
      : PairScorer([m = holder.ptr()](const at::Tensor& q, const at::Tensor& p) { return m->forward(q, p); },
                   std::static_pointer_cast<torch::nn::Module>(holder.ptr())) {}

  /// Scores of all pairs, [q.size(0), p.size(0)].
  at::Tensor operator()(const at::Tensor& q, const at::Tensor& p) const { return fn_(q, p); }
  bool defined() const { return static_cast<bool>(fn_); }
  /// Parameters and buffers of the module (empty for a bare callable).
  std::vector<at::Tensor> parameters() const;
  std::vector<at::Tensor> buffers() const;

 private:
  Fn fn_;
  std::shared_ptr<torch::nn::Module> module_;
};

struct PairMlpOptions {
  PairMlpOptions(int64_t dim, int64_t hidden) : dim_(dim), hidden_(hidden) {}
  /// Size of q and p (both).
  TORCH_ARG(int64_t, dim);
  /// Width of the hidden layer.
  TORCH_ARG(int64_t, hidden);
  /// Dropout on the hidden layer of each pair (train mode only).
  TORCH_ARG(double, dropout) = 0.0;
};

/// Phi(q, p) = w2 . dropout(relu(W1 [q; p; q*p] + b1)) + b2, the paper's example of a deep
/// distance function, for all pairs of a tile at once. W1 = [Wq | Wp | Wx] is applied by
/// blocks: Wq q_i per query row and Wp p_j per passage row, only Wx (q_i * p_j) per pair, so
/// the result equals fc1 on the concatenation (forward_concat) at a third of its cost.
/// Activations per tile of a x b pairs: about a * b * (d + 4 * hidden) numbers.
struct PairMlpImpl : torch::nn::Module {
  explicit PairMlpImpl(PairMlpOptions options);
  /// q: [a, d], p: [b, d] -> [a, b].
  at::Tensor forward(const at::Tensor& q, const at::Tensor& p);
  /// The literal definition on explicit pairs (for tests and checks): q, p: [k, d] -> [k].
  at::Tensor forward_concat(const at::Tensor& q, const at::Tensor& p);

  PairMlpOptions options;
  torch::nn::Linear fc1{nullptr};  ///< 3d -> hidden
  torch::nn::Dropout dropout{nullptr};
  torch::nn::Linear fc2{nullptr};  ///< hidden -> 1
};
TORCH_MODULE(PairMlp);

struct DualCacheOptions {
  /// Scores Phi(q_i, p_j) are divided by it (fixed: a learned Phi can scale its own output).
  TORCH_ARG(double, temperature) = 1.0;
  /// Overridable per call with LossArgs {"reduction", "mean"|"sum"}.
  TORCH_ARG(Reduction, reduction) = Reduction::Mean;
  /// Average query-to-passage and passage-to-query InfoNCE, as symmetric_contrastive_loss.
  TORCH_ARG(bool, symmetric) = false;
  /// Rows and columns of one tile of pairs: Phi runs on tile_size² pairs at a time, so its
  /// activations are O(tile_size²), independent of the batch. Must be positive.
  TORCH_ARG(int64_t, tile_size) = 64;
};

/// What dual_cache_backward computed.
struct DualCacheResult {
  at::Tensor loss;    ///< 0-dim, detached
  at::Tensor q_grad;  ///< dL/dq, [N, d]: the representation gradient cache of the queries
  at::Tensor p_grad;  ///< dL/dp, [M, e]
};

/// Steps 1 (scores part) to 3 of the dual cache (docs/design.md §6) on representations q [N, d]
/// and p [M, e] (their graphs, if any, are not used):
///   (a) all scores S_ij = Phi(q_i, p_j) / temperature tile by tile without graph, folded into
///       each row's (and column's) log-sum-exp; the generators are recorded before the first tile;
///   (b) w = dL/dS from the scores alone: w_ij = softmax_ij - [j = target(i)] (scaled by the
///       reduction), never stored whole;
///   (c) each tile is recomputed with grad under the same generator sequence (dropout masks
///       are replayed) and w_IJ backpropagated: Phi's parameters accumulate dL/dPhi in .grad,
///       and dL/dq_I, dL/dp_J are summed into the returned caches.
/// The loss is InfoNCE over the scores, with contrastive_loss's targets (stride 1 + k or
/// explicit `target`). Generators end where pass (a) left them, Phi's buffers as after (a).
/// Throws NonFiniteLossError (naming the tile) before any gradient is touched if a score is
/// NaN or infinite.
DualCacheResult dual_cache_backward(const at::Tensor& q, const at::Tensor& p, const PairScorer& scorer,
                                    const DualCacheOptions& options = {}, const at::Tensor& target = {});

/// Gradient cache for a learned similarity: two models (queries, passages) and a scorer Phi
/// trained together. Step 2 is dual_cache_backward; steps 1 and 3 are GradCacheBase's.
///
///   PairMlp phi(PairMlpOptions(256, 512).dropout(0.1));
///   DualGradCache cache({q_enc, p_enc}, 32, phi, DualCacheOptions().tile_size(64));
///   optimizer.zero_grad();            // over the encoders' and phi's parameters
///   auto loss = cache({queries, passages});
///   optimizer.step();                 // every gradient as for the full batch of pairs
///
/// LossArgs understood: "reduction", "target" (int64 [N]).
class DualGradCache : public GradCacheBase {
 public:
  DualGradCache(std::vector<Model> models, std::vector<int64_t> chunk_sizes, PairScorer scorer,
                DualCacheOptions options = {}, GradCacheOptions cache_options = {});
  DualGradCache(std::vector<Model> models, int64_t chunk_size, PairScorer scorer, DualCacheOptions options = {},
                GradCacheOptions cache_options = {});

  const PairScorer& scorer() const { return scorer_; }
  const DualCacheOptions& dual_options() const { return dual_options_; }

 protected:
  /// Step 2: dual_cache_backward on the representations (Phi's gradients accumulate here).
  std::vector<at::Tensor> build_cache(const std::vector<at::Tensor>& reps, const LossArgs& loss_args,
                                      at::Tensor& loss_out) override;

 private:
  PairScorer scorer_;
  DualCacheOptions dual_options_;
};

}  // namespace gradcache
