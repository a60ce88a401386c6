// A contrastive loss sharded across the ranks of a process group: each rank computes the rows
// of its own queries against every rank's passages, and the passage blocks travel round a ring
// (the idea of Inf-CL, arXiv 2410.17243), so no rank holds all the representations or more
// than one tile of scores (docs/design.md §4-5).
#pragma once

#include <gradcache/distributed.h>
#include <gradcache/loss.h>
#include <gradcache/streaming_loss.h>

namespace gradcache {
namespace distributed {

/// InfoNCE over the batch of all ranks (query-to-passage, or symmetric with
/// options.symmetric()), with the semantics of streaming_contrastive_loss() over the rows of
/// all ranks in rank order, computed in shares: this rank's queries against every rank's
/// passages, tile by tile, the passage blocks passed round a ring. q_local: [n, d], this rank's
/// queries; p_local: [n (1 + k), d], their positives each followed by its k hard negatives (the
/// batches DistributedGradCache sees). Local batch sizes may differ between ranks.
///
/// Returns the loss of the whole batch, the same value on every rank. Its backward gives this
/// rank's representations exactly the gradients one process computing the whole loss would
/// give those rows, and a temperature_tensor its whole gradient on every rank (summed across
/// them). Memory per rank: O((n + m_max) d + tile²), with m_max the largest local passage block.
/// Collective: every rank must call it, and its backward. Explicit targets are not supported.
at::Tensor sharded_contrastive_loss(const ProcessGroup& group, const at::Tensor& q_local, const at::Tensor& p_local,
                                    const StreamingLossOptions& options = {});

/// The sharded loss as a loss object for DistributedGradCache, which must then not gather
/// the representations itself: DistributedOptions().gather_inputs(false).
///
///   DistributedGradCache cache(group, {q_enc, p_enc}, 64, ShardedContrastiveLoss(group),
///                              {}, DistributedOptions().gather_inputs(false));
///
/// LossArgs understood: "reduction" ("mean"|"sum"), "temperature" (a number or a one-element
/// tensor).
class ShardedContrastiveLoss : public QueryPassageLoss<ShardedContrastiveLoss> {
 public:
  explicit ShardedContrastiveLoss(ProcessGroup group, StreamingLossOptions options = {});
  at::Tensor operator()(const at::Tensor& q_local, const at::Tensor& p_local, const LossArgs& args = {}) const;
  using QueryPassageLoss::operator();
  const char* name() const { return "ShardedContrastiveLoss"; }
  const StreamingLossOptions& options() const { return options_; }

 private:
  ProcessGroup group_;
  StreamingLossOptions options_;
};

}  // namespace distributed
}  // namespace gradcache
