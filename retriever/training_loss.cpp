#include "retriever/training_loss.h"

#include <gradcache/contrastive_loss.h>

#include <stdexcept>

namespace gradcache {
namespace retriever {

bool is_symmetric_loss(const std::string& loss) { return loss == "symmetric" || loss == "streaming-symmetric"; }

StreamingLossOptions streaming_loss_options(const TrainConfig& config) {
  return StreamingLossOptions()
      .temperature(config.temperature)
      .symmetric(is_symmetric_loss(config.loss))
      .tile_size(config.tile_size);
}

Loss make_loss(const TrainConfig& config) {
  if (config.loss == "streaming" || config.loss == "streaming-symmetric") {
    return StreamingContrastiveLoss(streaming_loss_options(config));
  }
  const auto options = ContrastiveLossOptions().temperature(config.temperature);
  if (config.loss == "symmetric") return SymmetricContrastiveLoss(options);
  if (config.loss == "infonce") return SimpleContrastiveLoss(options);
  throw std::invalid_argument("--loss: unknown loss '" + config.loss +
                              "' (infonce, symmetric, streaming or streaming-symmetric)");
}

}  // namespace retriever
}  // namespace gradcache
