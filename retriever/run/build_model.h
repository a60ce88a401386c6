// The model a run's settings describe: what training starts from and what a checkpoint's
// weights are loaded into.
#pragma once

#include "retriever/config/train_config.h"
#include "retriever/model/encoders.h"

#include <string>
#include <vector>

namespace gradcache {
namespace retriever {

/// The model a config describes: the built-in Transformer (vocabulary
/// config.tokenizer.vocab_size), the given serialized TorchScript encoders, or the described
/// pretrained model (two copies with --untie); and Phi with --similarity mlp. Freshly initialised
/// from the current generator (a checkpoint's weights are loaded over them).
BiEncoder build_model(const TrainConfig& config, const std::vector<std::string>& torchscript = {},
                      const PretrainedModel* pretrained = nullptr);

/// A loaded pretrained model as a bi-encoder: its module shared by both sides, or with `untie`
/// a second copy of it (the same weights) for the passages.
BiEncoder pretrained_model(const LoadedPretrained& loaded, bool untie);

}  // namespace retriever
}  // namespace gradcache
