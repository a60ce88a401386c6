// ModernBERT (transformers' ModernBertModel): gte-modernbert-base, modernbert-embed-base,
// answerdotai/ModernBERT-base. A pre-norm encoder of bias-free LayerNorms, rotary attention
// whose layers alternate between global (every key) and local (a symmetric window of
// local_attention / 2 keys either side, each kind with its own rotary base) and a GeGLU MLP.
#pragma once

#include <gradcache/hf/transformer.h>

#include "hf/models/architectures.h"

#include <nlohmann/json_fwd.hpp>
#include <torch/arg.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gradcache {
namespace hf {
namespace detail {
class FieldVisitor;
}

/// The fields of transformers' ModernBertConfig that decide the computation, with its defaults.
struct ModernBertConfig {
  TORCH_ARG(int64_t, vocab_size) = 50368;
  TORCH_ARG(int64_t, hidden_size) = 768;
  TORCH_ARG(int64_t, intermediate_size) = 1152;
  TORCH_ARG(int64_t, num_hidden_layers) = 22;
  TORCH_ARG(int64_t, num_attention_heads) = 12;
  TORCH_ARG(std::string, hidden_activation) = "gelu";
  TORCH_ARG(int64_t, max_position_embeddings) = 8192;
  TORCH_ARG(double, initializer_range) = 0.02;
  /// Initial weights are drawn from a normal truncated at this many standard deviations.
  TORCH_ARG(double, initializer_cutoff_factor) = 2.0;
  TORCH_ARG(double, norm_eps) = 1e-5;
  TORCH_ARG(bool, norm_bias) = false;
  /// The padding token (its embedding gets no gradient); -1: none (null).
  TORCH_ARG(int64_t, pad_token_id) = 50283;
  TORCH_ARG(bool, attention_bias) = false;
  TORCH_ARG(double, attention_dropout) = 0.0;
  /// A local layer's window: a query sees the keys at most local_attention / 2 (rounded down)
  /// positions away on either side.
  TORCH_ARG(int64_t, local_attention) = 128;
  TORCH_ARG(double, embedding_dropout) = 0.0;
  TORCH_ARG(bool, mlp_bias) = false;
  TORCH_ARG(double, mlp_dropout) = 0.0;
  /// Layer i is global when i % global_attn_every_n_layers == 0 (used when layer_types is empty).
  TORCH_ARG(int64_t, global_attn_every_n_layers) = 3;
  /// "full_attention" or "sliding_attention" per layer, as transformers 5 writes them; empty:
  /// from global_attn_every_n_layers.
  TORCH_ARG(std::vector<std::string>, layer_types) = {};
  /// Rotary bases of the global (full_attention) and local (sliding_attention) layers.
  TORCH_ARG(double, global_rope_theta) = 160000.0;
  TORCH_ARG(double, local_rope_theta) = 10000.0;
  TORCH_ARG(std::string, source_json) = "";

 public:
  /// Parses and validates a config.json of model_type "modernbert" (transformers' defaults for
  /// missing fields); ModelFileError naming `file` and the field, including rope scaling other
  /// than the default rope_type.
  static ModernBertConfig parse(const std::string& text, const std::string& file);
  /// The same from config.json already parsed (`config`), its text kept for writing back: what
  /// load_transformer calls, so that a load parses config.json once.
  static ModernBertConfig from_parsed(const nlohmann::json& config, const std::string& text, const std::string& file);
  void validate(const std::string& file) const;
  std::string to_json() const;
  void visit(detail::FieldVisitor& fields);

  int64_t head_size() const { return hidden_size() / num_attention_heads(); }
  /// Whether layer `layer` attends within the local window (else to every key).
  bool local_layer(int64_t layer) const;
  /// The half-window of the local layers (transformers' config.sliding_window).
  int64_t half_window() const { return local_attention() / 2; }
  int64_t parameter_count() const;
};

/// The registry's entry for modernbert.
detail::ReadConfig read_modernbert(const nlohmann::json& config, const std::string& text, const std::string& file);

}  // namespace hf
}  // namespace gradcache
