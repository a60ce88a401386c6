#include "retriever/train/training_loss.h"

#include "retriever/config/matryoshka_settings.h"

#include <gradcache/contrastive_loss.h>

#include <stdexcept>

namespace gradcache {
namespace retriever {

StreamingLossOptions streaming_loss_options(const LossSettings& loss) {
  return StreamingLossOptions()
      .temperature(loss.temperature)
      .symmetric(is_symmetric(loss.kind))
      .tile_size(loss.tile_size);
}

Loss make_loss(const LossSettings& loss) {
  if (is_streaming(loss.kind)) return StreamingContrastiveLoss(streaming_loss_options(loss));
  const auto options = ContrastiveLossOptions().temperature(loss.temperature);
  if (is_symmetric(loss.kind)) return SymmetricContrastiveLoss(options);
  return SimpleContrastiveLoss(options);
}

MatryoshkaOptions matryoshka_options(const TrainConfig& c) {
  return MatryoshkaOptions()
      .dims(parse_dim_list(c.matryoshka.dims, "--matryoshka"))
      .weights(parse_weight_list(c.matryoshka.weights, "--matryoshka-weights"))
      .normalize_prefixes(encoder_normalizes(c));
}

Loss with_matryoshka(Loss loss, const TrainConfig& c) {
  if (c.matryoshka.dims.empty() || !loss.defined()) return loss;
  return MatryoshkaLoss(std::move(loss), matryoshka_options(c));
}

}  // namespace retriever
}  // namespace gradcache
