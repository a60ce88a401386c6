// Which parameters of the encoders train (--train-params, --freeze-embeddings): BitFit's
// bias-only training (the seeds' --freezenonbias, SGPT's rule), a regular expression over the
// parameters' names, the embeddings frozen. A frozen parameter gets no gradient and so no
// optimizer state; the cache step is exact for the ones that train (tests/retriever/test_trainable.cpp).
// With LoRA adapters only the adapters train, as PEFT trains them.
#pragma once

#include <gradcache/precision_kind.h>

#include <cstdint>
#include <string>

namespace gradcache {
namespace retriever {

class BiEncoder;

/// What trains.
struct TrainableParameters {
  /// "" (every parameter), or a regular expression (ECMAScript) searched in each parameter's
  /// name, as Python's re.search: "bias" is SGPT's --freezenonbias rule (names containing "bias").
  std::string pattern;
  /// Freezes the embeddings whatever `pattern` says: parameters whose name contains "embed" (the
  /// Hugging Face architectures' embeddings, their LayerNorm included) and torch::nn::Embedding's.
  bool freeze_embeddings = false;
  /// LoRA (--lora-rank, --adapter): the adapters alone train ("...lora_A.weight", "...lora_B.weight").
  bool adapters_only = false;
  bool everything() const { return pattern.empty() && !freeze_embeddings && !adapters_only; }
};

/// "" if `pattern` is a regular expression, else what is wrong with it.
std::string pattern_error(const std::string& pattern);

/// Whether the parameter `name` trains (`embedding`: it is part of the embeddings).
bool trains(const TrainableParameters& selection, const std::string& name, bool embedding);

/// The numbers (weights, not tensors) that train and that are frozen.
struct TrainableCounts {
  int64_t trained = 0;
  int64_t frozen = 0;
  int64_t held_narrow = 0;  ///< of the frozen, held in --base-precision bf16 (hold_frozen_weights)
};

/// Sets requires_grad on every encoder parameter of `model` by `selection` (a learned similarity
/// Phi always trains). The names matched: a pretrained model's as in its files (its Hugging Face
/// names, e.g. "encoder.layer.0.attention.self.query.bias"; a Dense module's
/// "dense_0.linear.bias"), the built-in encoder's and a TorchScript module's own. Throws
/// std::invalid_argument naming the flags when no encoder parameter would train.
TrainableCounts select_trainable(BiEncoder& model, const TrainableParameters& selection);

/// --base-precision bf16: holds the frozen weight matrices of `model`'s pretrained encoders in bf16
/// (hf/frozen_weights.h); call after select_trainable. The numbers converted (none for fp32, or
/// an encoder that is not pretrained).
int64_t hold_frozen_weights(BiEncoder& model, Precision precision);

/// "12,345 of 22,713,216 parameters train (--train-params bias)", for the log.
std::string describe(const TrainableCounts& counts, const TrainableParameters& selection);

}  // namespace retriever
}  // namespace gradcache
