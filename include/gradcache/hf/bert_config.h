// BERT's config.json (transformers' BertConfig): the sizes and settings of a BertModel.
#pragma once

#include <gradcache/hf/model_file_error.h>

#include <torch/arg.h>

#include <cstdint>
#include <string>

namespace gradcache {
namespace hf {

/// The fields of transformers' BertConfig that decide the computation, with its defaults.
struct BertConfig {
  TORCH_ARG(int64_t, vocab_size) = 30522;
  TORCH_ARG(int64_t, hidden_size) = 768;
  TORCH_ARG(int64_t, num_hidden_layers) = 12;
  TORCH_ARG(int64_t, num_attention_heads) = 12;
  TORCH_ARG(int64_t, intermediate_size) = 3072;
  /// gelu (exact, erf), gelu_new / gelu_pytorch_tanh / gelu_fast (tanh approximation), relu, silu / swish.
  TORCH_ARG(std::string, hidden_act) = "gelu";
  TORCH_ARG(double, hidden_dropout_prob) = 0.1;
  TORCH_ARG(double, attention_probs_dropout_prob) = 0.1;
  TORCH_ARG(int64_t, max_position_embeddings) = 512;
  TORCH_ARG(int64_t, type_vocab_size) = 2;
  TORCH_ARG(double, layer_norm_eps) = 1e-12;
  /// Standard deviation of the random initial weights (a model built without a checkpoint).
  TORCH_ARG(double, initializer_range) = 0.02;
  /// The padding token: its word embedding gets no gradient (nn.Embedding's padding_idx).
  TORCH_ARG(int64_t, pad_token_id) = 0;
  /// The config.json read, kept so that a saved model keeps the keys this struct does not hold
  /// ("architectures", "transformers_version", ...). Empty for a config made in code.
  TORCH_ARG(std::string, source_json) = "";

 public:  // TORCH_ARG leaves the access private
  /// Parses a config.json of model_type "bert" (missing fields take transformers' defaults) and
  /// validates it. Throws ModelFileError naming `file` and the field: another model_type, a field
  /// of the wrong type or out of range, hidden_size not divisible by num_attention_heads, an
  /// unsupported hidden_act or position_embedding_type, or a decoder / cross-attention model.
  static BertConfig parse(const std::string& text, const std::string& file);

  /// Throws ModelFileError naming `file` if a field is out of range (parse() calls it).
  void validate(const std::string& file) const;

  /// config.json: source_json() with the fields above written over it (and model_type "bert").
  std::string to_json() const;

  int64_t head_size() const { return hidden_size() / num_attention_heads(); }
  /// Weights of a BertModel of this config (with or without the pooler).
  int64_t parameter_count(bool with_pooler = true) const;
};

}  // namespace hf
}  // namespace gradcache
