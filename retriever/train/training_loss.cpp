#include "retriever/train/training_loss.h"

#include "retriever/config/matryoshka_settings.h"

#include <gradcache/contrastive_loss.h>

#include <stdexcept>

namespace gradcache {
namespace retriever {

StreamingLossOptions streaming_loss_options(const TrainConfig& config) {
  return StreamingLossOptions()
      .temperature(config.temperature)
      .symmetric(is_symmetric(config.loss))
      .tile_size(config.tile_size);
}

Loss make_loss(const TrainConfig& config) {
  if (is_streaming(config.loss)) return StreamingContrastiveLoss(streaming_loss_options(config));
  const auto options = ContrastiveLossOptions().temperature(config.temperature);
  if (is_symmetric(config.loss)) return SymmetricContrastiveLoss(options);
  return SimpleContrastiveLoss(options);
}

MatryoshkaOptions matryoshka_options(const TrainConfig& c) {
  return MatryoshkaOptions()
      .dims(parse_dim_list(c.matryoshka, "--matryoshka"))
      .weights(parse_weight_list(c.matryoshka_weights, "--matryoshka-weights"))
      .normalize_prefixes(encoder_normalizes(c));
}

Loss with_matryoshka(Loss loss, const TrainConfig& c) {
  if (c.matryoshka.empty() || !loss.defined()) return loss;
  return MatryoshkaLoss(std::move(loss), matryoshka_options(c));
}

}  // namespace retriever
}  // namespace gradcache
