// BLOOM (transformers' BloomModel; the SGPT embedders on BLOOM-7B1 and the other BLOOM models): a
// pre-norm causal decoder with ALiBi position biases instead of position embeddings, a LayerNorm
// right after the word embeddings, a fused query_key_value projection and a GELU of its own.
#pragma once

#include <gradcache/hf/transformer.h>

#include "hf/models/architectures.h"

#include <nlohmann/json_fwd.hpp>
#include <torch/arg.h>

#include <cstdint>
#include <memory>
#include <string>

namespace gradcache {
namespace hf {
namespace detail {
class FieldVisitor;
}

struct BloomConfig {
  TORCH_ARG(int64_t, vocab_size) = 250880;
  /// Also read as "n_embed" (older files).
  TORCH_ARG(int64_t, hidden_size) = 64;
  /// Also read as "num_hidden_layers" (BloomConfig's attribute_map).
  TORCH_ARG(int64_t, n_layer) = 2;
  /// Also read as "num_attention_heads".
  TORCH_ARG(int64_t, n_head) = 8;
  TORCH_ARG(double, layer_norm_epsilon) = 1e-5;
  /// The residual of each block is the block's input (false) or its LayerNorm's output (true).
  TORCH_ARG(bool, apply_residual_connection_post_layernorm) = false;
  /// After the attention output and after the MLP output (before the residual sum).
  TORCH_ARG(double, hidden_dropout) = 0.0;
  /// On the attention probabilities.
  TORCH_ARG(double, attention_dropout) = 0.0;
  /// Megatron's tensor-parallel degree of pretraining; only read together with slow_but_exact,
  /// which transformers computes otherwise (and which is refused here).
  TORCH_ARG(int64_t, pretraining_tp) = 1;
  TORCH_ARG(bool, slow_but_exact) = false;
  /// The padding token (kept for config.json: BLOOM's embedding has no padding row); -1: none.
  TORCH_ARG(int64_t, pad_token_id) = -1;
  TORCH_ARG(double, initializer_range) = 0.02;
  TORCH_ARG(std::string, source_json) = "";

 public:
  /// ALiBi has no position table: the most tokens a text may have is this library's bound.
  static constexpr int64_t kMaxTokens = 1'048'576;

  /// Parses and validates a "bloom" config.json (BloomConfig's defaults; n_embed,
  /// num_hidden_layers and num_attention_heads as the aliases transformers accepts);
  /// ModelFileError naming `file` and the field.
  static BloomConfig parse(const std::string& text, const std::string& file);
  /// The same from config.json already parsed (`config`), its text kept for writing back: what
  /// load_transformer calls, so that a load parses config.json once.
  static BloomConfig from_parsed(const nlohmann::json& config, const std::string& text, const std::string& file);
  void validate(const std::string& file) const;
  std::string to_json() const;
  void visit(detail::FieldVisitor& fields);

  int64_t head_size() const { return hidden_size() / n_head(); }
  int64_t parameter_count() const;
};

/// The registry's "bloom" entry: config.json (parsed) read once, the weights it needs and a builder.
detail::ReadConfig read_bloom(const nlohmann::json& config, const std::string& text, const std::string& file);

}  // namespace hf
}  // namespace gradcache
