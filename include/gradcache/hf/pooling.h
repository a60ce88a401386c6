// sentence-transformers' Pooling module: token embeddings [B, T, d] to one vector per text,
// by the modes of its 1_Pooling/config.json (concatenated when there are several).
#pragma once

#include <gradcache/hf/model_file_error.h>

#include <ATen/core/Tensor.h>
#include <torch/arg.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gradcache {
namespace hf {

enum class PoolingMode {
  Cls,           ///< the first real token's embedding
  Max,           ///< the element-wise maximum over real tokens
  Mean,          ///< the mean over real tokens
  MeanSqrtLen,   ///< the sum over real tokens divided by the square root of their number
  WeightedMean,  ///< the mean weighted by position (1, 2, ... from the first real token)
  LastToken,     ///< the last real token's embedding
};

/// "cls", "max", "mean", "mean_sqrt_len_tokens", "weightedmean", "lasttoken" (the names of
/// sentence-transformers' pooling_mode).
std::string pooling_mode_name(PoolingMode mode);

struct PoolingOptions {
  /// Size of the token embeddings (each mode's output has this size).
  TORCH_ARG(int64_t, embedding_dimension) = 0;
  /// Concatenated in this order.
  TORCH_ARG(std::vector<PoolingMode>, modes) = std::vector<PoolingMode>{PoolingMode::Mean};
  /// False: the prompt's tokens (the batch's "prompt_length" first real tokens) are left out.
  TORCH_ARG(bool, include_prompt) = true;
};

/// Size of the pooled vector: embedding_dimension() times the number of modes.
int64_t pooled_dimension(const PoolingOptions& options);

/// Pools `token_embeddings` [B, T, d] over the real tokens of `attention_mask` [B, T] (bool or
/// integer) as sentence-transformers' Pooling does on a padded batch (padding on either side);
/// fp16/bf16 sums accumulate in fp32. `prompt_length` (how many tokens the prompt took, counting
/// [CLS]) matters only when include_prompt() is false.
at::Tensor pool(const at::Tensor& token_embeddings, const at::Tensor& attention_mask, const PoolingOptions& options,
                int64_t prompt_length = 0);

/// Reads 1_Pooling/config.json: the current keys ("embedding_dimension", "pooling_mode" as a
/// name or a list, "include_prompt") or the older "word_embedding_dimension" with
/// "pooling_mode_*_tokens" flags. Throws ModelFileError naming `file`.
PoolingOptions parse_pooling_config(const std::string& text, const std::string& file);

/// The config.json that parse_pooling_config reads back, loadable by sentence-transformers
/// (the older flag keys when the modes are in their fixed order, so that older versions load it too).
std::string pooling_config_json(const PoolingOptions& options);

}  // namespace hf
}  // namespace gradcache
