// The frozen weights of a --model-dir run (--train-params, --freeze-embeddings) are its base
// model's: a checkpoint holds what trained, the base's directory and a digest of the frozen
// weights, and reading it takes them from the base again, refusing a base whose weights differ.
// A bias-only checkpoint of a 0.6B decoder is then a few MB instead of 2.4 GB.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace gradcache {
namespace retriever {

class BiEncoder;

/// What a checkpoint records of the weights it leaves to the base model.
struct FrozenWeights {
  std::string base_dir;            ///< absolute path of the --model-dir directory
  std::vector<std::string> names;  ///< the model's names (BiEncoder::named_state) of the frozen weights
  uint32_t crc32 = 0;              ///< zlib's CRC-32 over their bytes, in `names`' order
  int64_t numbers = 0;             ///< how many numbers they hold
  /// "" or "bf16": the run held its frozen matrices in bf16 (--base-precision), and `crc32` is of
  /// every frozen weight rounded to bf16 (what the run computed with), so the base read again as
  /// fp32 is checked after the same rounding.
  std::string held_in;
};

/// The frozen parameters of a pretrained `model` trained from `base_dir` (none for the built-in
/// encoder and TorchScript, whose weights have no base on disk), with their digest.
FrozenWeights frozen_weights(const BiEncoder& model, const std::string& base_dir);

/// Sets `model`'s frozen weights from `frozen.base_dir` (its sentence-transformers directory)
/// and checks the digest. Throws CheckpointError naming `checkpoint` and the directory when the
/// base cannot be read or its weights are not the ones the run was trained on.
void restore_frozen(BiEncoder& model, const FrozenWeights& frozen, const std::string& checkpoint);

nlohmann::json to_json(const FrozenWeights& frozen);
FrozenWeights frozen_from_json(const nlohmann::json& j);

}  // namespace retriever
}  // namespace gradcache
