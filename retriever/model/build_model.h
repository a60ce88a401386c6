// The model a run's settings describe: what training starts from and what a checkpoint's
// weights are loaded into.
#pragma once

#include "retriever/config/train_config.h"
#include "retriever/model/encoders.h"

#include <string>
#include <vector>

namespace gradcache {
namespace retriever {

/// The model a config describes: the built-in Transformer (vocabulary config.tokenizer.vocab_size), or
/// the given serialized TorchScript encoders, and Phi with --similarity mlp. Freshly
/// initialised from the current generator.
BiEncoder build_model(const TrainConfig& config, const std::vector<std::string>& torchscript = {});

}  // namespace retriever
}  // namespace gradcache
