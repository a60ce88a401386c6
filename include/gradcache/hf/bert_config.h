// The config.json of BERT and of RoBERTa / XLM-RoBERTa (transformers' BertConfig,
// RobertaConfig, XLMRobertaConfig): the sizes and settings of a BertModel.
#pragma once

#include <gradcache/hf/model_file_error.h>

#include <nlohmann/json_fwd.hpp>
#include <torch/arg.h>

#include <cstdint>
#include <string>

namespace gradcache {
namespace hf {
namespace detail {
class FieldVisitor;
}

/// The fields of transformers' BertConfig that decide the computation, with its defaults.
struct BertConfig {
  /// "bert", or "roberta" / "xlm-roberta": the same layers, with positions counted from
  /// pad_token_id + 1 and the checkpoint prefix "roberta.".
  TORCH_ARG(std::string, model_type) = "bert";
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
  /// The padding token: its word embedding gets no gradient (nn.Embedding's padding_idx); for
  /// RoBERTa, also where positions start (pad_token_id + 1).
  TORCH_ARG(int64_t, pad_token_id) = 0;
  /// The config.json read, kept so that a saved model keeps the keys this struct does not hold
  /// ("architectures", "transformers_version", ...). Empty for a config made in code.
  TORCH_ARG(std::string, source_json) = "";

 public:  // TORCH_ARG leaves the access private
  /// The model types this config describes.
  static const char* const kModelTypes[3];

  /// Parses a config.json of one of kModelTypes (missing fields take transformers' defaults for
  /// that type) and validates it. Throws ModelFileError naming `file` and the field: another
  /// model_type, a field of the wrong type or out of range, hidden_size not divisible by
  /// num_attention_heads, an unsupported hidden_act or position_embedding_type, or a decoder /
  /// cross-attention model.
  static BertConfig parse(const std::string& text, const std::string& file);
  /// The same from config.json already parsed (`config`), its text kept for writing back: what
  /// load_transformer calls, so that a load parses config.json once.
  static BertConfig from_parsed(const nlohmann::json& config, const std::string& text, const std::string& file);

  /// Throws ModelFileError naming `file` if a field is out of range (parse() calls it).
  void validate(const std::string& file) const;

  /// config.json: source_json() with the fields above written over it.
  std::string to_json() const;

  /// The field table: each field's key, bounds and kind, read by parse, checked by validate and
  /// written by to_json (src/hf/layers/config_fields.h).
  void visit(detail::FieldVisitor& fields);

  int64_t head_size() const { return hidden_size() / num_attention_heads(); }
  /// RoBERTa's rule: position ids count from pad_token_id + 1, padding keeps pad_token_id.
  bool positions_after_padding() const { return model_type() != "bert"; }
  /// Weights of a BertModel of this config (with or without the pooler).
  int64_t parameter_count(bool with_pooler = true) const;
};

}  // namespace hf
}  // namespace gradcache
