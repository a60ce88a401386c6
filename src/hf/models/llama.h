// The decoder embedders: Llama, Mistral, Qwen2 and Qwen3 (transformers' LlamaModel,
// MistralModel, Qwen2Model, Qwen3Model): pre-norm blocks of rotary, grouped-query, causal
// self-attention and a SwiGLU MLP under RMSNorm. Qwen3-Embedding, e5-mistral, RepLLaMA and
// gte-Qwen2 are these. The four differ only in a few switches, which the config sets from
// model_type: biases on q/k/v (Qwen2), per-head RMSNorm of q and k (Qwen3), a sliding window (Mistral).
#pragma once

#include <gradcache/hf/transformer.h>

#include "hf/models/architectures.h"

#include "hf/layers/rotary.h"

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

struct LlamaConfig {
  TORCH_ARG(std::string, model_type) = "llama";  ///< llama, mistral, qwen2 or qwen3
  TORCH_ARG(int64_t, vocab_size) = 32000;
  TORCH_ARG(int64_t, hidden_size) = 4096;
  TORCH_ARG(int64_t, intermediate_size) = 11008;
  TORCH_ARG(int64_t, num_hidden_layers) = 32;
  TORCH_ARG(int64_t, num_attention_heads) = 32;
  /// Key-value heads (grouped-query attention); 0: as many as num_attention_heads.
  TORCH_ARG(int64_t, num_key_value_heads) = 0;
  /// Size of one head; 0: hidden_size / num_attention_heads.
  TORCH_ARG(int64_t, head_dim) = 0;
  TORCH_ARG(std::string, hidden_act) = "silu";
  TORCH_ARG(int64_t, max_position_embeddings) = 2048;
  TORCH_ARG(double, rms_norm_eps) = 1e-6;
  /// Rotary base (rope_parameters.rope_theta in transformers 5, rope_theta before).
  TORCH_ARG(double, rope_theta) = 10000.0;
  /// rope_parameters' (or rope_scaling's) rope_type and its fields: default, linear or llama3.
  TORCH_ARG(detail::RopeScaling, rope_scaling) = {};
  /// Biases on q/k/v/o (Llama's and Qwen3's attention_bias).
  TORCH_ARG(bool, attention_bias) = false;
  /// Biases on q/k/v only (Qwen2, always).
  TORCH_ARG(bool, qkv_bias) = false;
  TORCH_ARG(bool, mlp_bias) = false;
  /// Per-head RMSNorm of queries and keys before the rotation (Qwen3).
  TORCH_ARG(bool, qk_norm) = false;
  TORCH_ARG(double, attention_dropout) = 0.0;
  /// Mistral's sliding_window: a query sees the last this-many keys (itself included); 0: all.
  TORCH_ARG(int64_t, sliding_window) = 0;
  /// The padding token (its embedding gets no gradient); -1: none (null).
  TORCH_ARG(int64_t, pad_token_id) = -1;
  TORCH_ARG(double, initializer_range) = 0.02;
  TORCH_ARG(std::string, source_json) = "";

 public:
  static const char* const kModelTypes[4];
  /// Parses and validates a config.json of one of kModelTypes (transformers' defaults for that
  /// type); ModelFileError naming `file` and the field, including rope types other than
  /// default, linear and llama3 (dynamic, yarn, longrope) and Qwen's sliding-window layers,
  /// which are not supported.
  static LlamaConfig parse(const std::string& text, const std::string& file);
  /// The same from config.json already parsed (`config`), its text kept for writing back: what
  /// load_transformer calls, so that a load parses config.json once.
  static LlamaConfig from_parsed(const nlohmann::json& config, const std::string& text, const std::string& file);
  void validate(const std::string& file) const;
  std::string to_json() const;
  void visit(detail::FieldVisitor& fields);

  int64_t key_value_heads() const { return num_key_value_heads() > 0 ? num_key_value_heads() : num_attention_heads(); }
  int64_t head_size() const { return head_dim() > 0 ? head_dim() : hidden_size() / num_attention_heads(); }
  int64_t parameter_count() const;
};

/// The registry's entries for llama, mistral, qwen2 and qwen3.
detail::ReadConfig read_llama(const nlohmann::json& config, const std::string& text, const std::string& file);

}  // namespace hf
}  // namespace gradcache
