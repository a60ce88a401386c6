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

MatryoshkaOptions matryoshka_options(const MatryoshkaSettings& settings, bool normalizes) {
  return MatryoshkaOptions()
      .dims(parse_dim_list(settings.dims, "--matryoshka"))
      .weights(parse_weight_list(settings.weights, "--matryoshka-weights"))
      .normalize_prefixes(normalizes);
}

Loss with_matryoshka(Loss loss, const MatryoshkaSettings& settings, bool normalizes) {
  if (!settings.enabled() || !loss.defined()) return loss;
  return MatryoshkaLoss(std::move(loss), matryoshka_options(settings, normalizes));
}

}  // namespace retriever
}  // namespace gradcache
