// The contrastive loss a training run's --loss names, built once here so that the trainer,
// the tests and wrappers of the loss (e.g. Matryoshka) all start from the same object.
#pragma once

#include "retriever/config/train_config.h"

#include <gradcache/loss.h>
#include <gradcache/matryoshka_loss.h>
#include <gradcache/streaming_loss.h>

#include <string>

namespace gradcache {
namespace retriever {

/// The streaming loss's options for `loss`: its temperature, direction(s) and --tile. Also
/// what the sharded loss of a multi-process run uses, which is tiled in the same way.
StreamingLossOptions streaming_loss_options(const LossSettings& loss);

/// The loss of one process: SimpleContrastiveLoss (infonce), SymmetricContrastiveLoss
/// (symmetric), or StreamingContrastiveLoss (streaming, streaming-symmetric), which computes
/// the same loss without the batch x batch score matrix.
Loss make_loss(const LossSettings& loss);

/// The prefixes of a run (empty dims when --matryoshka is off), re-normalised when the encoder
/// `normalizes` (BiEncoder::normalizes()).
MatryoshkaOptions matryoshka_options(const MatryoshkaSettings& settings, bool normalizes);

/// `loss` summed over the run's prefixes (MatryoshkaLoss), or `loss` itself when --matryoshka
/// is off or `loss` is undefined.
Loss with_matryoshka(Loss loss, const MatryoshkaSettings& settings, bool normalizes);

}  // namespace retriever
}  // namespace gradcache
