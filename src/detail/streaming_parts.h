// What the streaming loss and its sharded form share besides the tiles: argument checks, the
// temperature, and the per-call LossArgs.
#pragma once

#include <gradcache/loss.h>
#include <gradcache/streaming_loss.h>

#include <ATen/ATen.h>

namespace gradcache {
namespace detail {

/// Throws (naming `who`) unless q [N, d] and p [M, d] are non-empty floating-point matrices of
/// one dimension, dtype and device.
void check_representations(const at::Tensor& q, const at::Tensor& p, const char* who);

/// Throws (naming `who`) unless tile > 0.
void check_tile_size(int64_t tile, const char* who);

/// The temperature as a 0-dim tensor on q's device, checked positive and finite. A tensor
/// keeps its graph.
at::Tensor temperature_of(const StreamingLossOptions& options, const at::Tensor& q, const char* who);

/// `options` with the per-call arguments "reduction" and "temperature" applied; any other
/// name but "target" is refused, naming `who` (`targets_allowed` false refuses "target" too).
StreamingLossOptions with_loss_args(StreamingLossOptions options, const LossArgs& args, const char* who,
                                    bool targets_allowed = true);

/// q and p as the scores use them: unit rows with Similarity::Cosine (x / max(|x|, 1e-12), as
/// contrastive_loss), unchanged with Dot.
std::pair<at::Tensor, at::Tensor> similarity_inputs(const at::Tensor& q, const at::Tensor& p, Similarity similarity);

}  // namespace detail
}  // namespace gradcache
