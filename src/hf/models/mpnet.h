// MPNet (transformers' MPNetModel; all-mpnet-base-v2 and the other MPNet sentence embedders): a
// BERT-shaped post-norm encoder without token types, with RoBERTa's positions (counted from
// padding index 1 + 1) and a T5-style relative-position bias, one table of buckets x heads
// shared by every layer's attention.
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

struct MPNetConfig {
  TORCH_ARG(int64_t, vocab_size) = 30527;
  TORCH_ARG(int64_t, hidden_size) = 768;
  TORCH_ARG(int64_t, num_hidden_layers) = 12;
  TORCH_ARG(int64_t, num_attention_heads) = 12;
  TORCH_ARG(int64_t, intermediate_size) = 3072;
  TORCH_ARG(std::string, hidden_act) = "gelu";
  TORCH_ARG(double, hidden_dropout_prob) = 0.1;
  TORCH_ARG(double, attention_probs_dropout_prob) = 0.1;
  TORCH_ARG(int64_t, max_position_embeddings) = 512;
  TORCH_ARG(double, layer_norm_eps) = 1e-12;
  /// Rows of encoder.relative_attention_bias. transformers computes 32 buckets whatever this
  /// says, so it must be at least 32 (more rows are never read).
  TORCH_ARG(int64_t, relative_attention_num_buckets) = 32;
  /// The tokenizer's padding token, kept for config.json only: MPNetEmbeddings pads at index 1
  /// (kPaddingIndex) whatever the config says, as transformers does.
  TORCH_ARG(int64_t, pad_token_id) = 1;
  TORCH_ARG(double, initializer_range) = 0.02;
  TORCH_ARG(std::string, source_json) = "";

 public:
  /// The padding index of MPNetEmbeddings (fixed in transformers): its word and position rows
  /// get no gradient, and positions count from it + 1.
  static constexpr int64_t kPaddingIndex = 1;
  /// The buckets MPNetEncoder.compute_position_bias uses, and their largest distance.
  static constexpr int64_t kBuckets = 32;
  static constexpr int64_t kMaxDistance = 128;

  /// Parses and validates an "mpnet" config.json (MPNetConfig's defaults); ModelFileError naming
  /// `file` and the field.
  static MPNetConfig parse(const std::string& text, const std::string& file);
  /// The same from config.json already parsed (`config`), its text kept for writing back: what
  /// load_transformer calls, so that a load parses config.json once.
  static MPNetConfig from_parsed(const nlohmann::json& config, const std::string& text, const std::string& file);
  void validate(const std::string& file) const;
  std::string to_json() const;
  void visit(detail::FieldVisitor& fields);

  int64_t head_size() const { return hidden_size() / num_attention_heads(); }
  /// Weights of an MPNetModel of this config (with or without the pooler).
  int64_t parameter_count(bool with_pooler) const;
};

/// The registry's "mpnet" entry: config.json (parsed) read once, the weights it needs and a builder.
detail::ReadConfig read_mpnet(const nlohmann::json& config, const std::string& text, const std::string& file);

}  // namespace hf
}  // namespace gradcache
