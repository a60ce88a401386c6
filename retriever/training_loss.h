// The contrastive loss a training run's --loss names, built once here so that the trainer,
// the tests and wrappers of the loss (e.g. Matryoshka) all start from the same object.
#pragma once

#include "retriever/train_config.h"

#include <gradcache/loss.h>
#include <gradcache/streaming_loss.h>

#include <string>

namespace gradcache {
namespace retriever {

/// Whether `loss` (a --loss value) also scores passage to query.
bool is_symmetric_loss(const std::string& loss);

/// The streaming loss's options for `config`: its temperature, direction(s) and --tile. Also
/// what the sharded loss of a multi-process run uses, which is tiled in the same way.
StreamingLossOptions streaming_loss_options(const TrainConfig& config);

/// The loss of one process: SimpleContrastiveLoss (infonce), SymmetricContrastiveLoss
/// (symmetric), or StreamingContrastiveLoss (streaming, streaming-symmetric), which computes
/// the same loss without the batch x batch score matrix. Throws std::invalid_argument for an
/// unknown name (validate() refuses it first).
Loss make_loss(const TrainConfig& config);

}  // namespace retriever
}  // namespace gradcache
