// BertConfig's fields, once (visit), and the checks across fields.
#include <gradcache/hf/bert_config.h>

#include "hf/layers/config_fields.h"
#include "hf/layers/feed_forward.h"
#include "hf/model_json.h"

namespace gradcache {
namespace hf {
namespace {

using namespace detail::config_reading;
constexpr int64_t kMaxBertPositions = detail::kMaxLearnedPositions;
constexpr int64_t kMaxTokenTypes = 1'000;

void refuse_if_true(const Json& config, const char* key, const char* why, const std::string& file) {
  if (detail::bool_field(config, key, false, file))
    throw ModelFileError(file, std::string("\"") + key + "\" is true: " + why + " (only the encoder is supported)");
}

}  // namespace

const char* const BertConfig::kModelTypes[3] = {"bert", "roberta", "xlm-roberta"};

void BertConfig::visit(detail::FieldVisitor& fields) {
  fields.integer("vocab_size", vocab_size_, 1, kMaxVocabulary);
  fields.integer("hidden_size", hidden_size_, 1, kMaxWidth);
  fields.integer("num_hidden_layers", num_hidden_layers_, 1, kMaxLayers);
  fields.integer("num_attention_heads", num_attention_heads_, 1, kMaxWidth);
  fields.integer("intermediate_size", intermediate_size_, 1, 8 * kMaxWidth);
  fields.choice("hidden_act", hidden_act_, {GRADCACHE_HF_ACTIVATIONS});
  fields.number("hidden_dropout_prob", hidden_dropout_prob_, 0, 1, /*open_min=*/false, /*open_max=*/true);
  fields.number("attention_probs_dropout_prob", attention_probs_dropout_prob_, 0, 1, false, true);
  fields.integer("max_position_embeddings", max_position_embeddings_, 1, kMaxBertPositions);
  fields.integer("type_vocab_size", type_vocab_size_, 1, kMaxTokenTypes);
  fields.number("layer_norm_eps", layer_norm_eps_, 0, 1, /*open_min=*/true, /*open_max=*/true);
  fields.number("initializer_range", initializer_range_, 0, 10);
  fields.integer("pad_token_id", pad_token_id_, 0, kMaxVocabulary);
}

BertConfig BertConfig::parse(const std::string& text, const std::string& file) {
  return from_parsed(detail::parse_json(text, file), text, file);
}

BertConfig BertConfig::from_parsed(const Json& config, const std::string& text, const std::string& file) {
  BertConfig out;
  out.model_type(detail::require_model_type(config, {kModelTypes[0], kModelTypes[1], kModelTypes[2]}, file));
  refuse_if_true(config, "is_decoder", "a decoder", file);
  refuse_if_true(config, "add_cross_attention", "cross-attention layers", file);
  const std::string positions = detail::string_field(config, "position_embedding_type", "absolute", file);
  if (positions != "absolute")
    throw ModelFileError(file, "position_embedding_type " + detail::quoted(positions) + " is not supported (only \"absolute\")");
  if (out.model_type() == "roberta") out.vocab_size(50265);  // RobertaConfig's defaults
  if (out.positions_after_padding()) out.pad_token_id(1);
  detail::FieldReader reader(config, file);
  out.visit(reader);
  out.source_json(text);
  out.validate(file);
  return out;
}

void BertConfig::validate(const std::string& file) const {
  detail::check_fields(*this, file);
  detail::require_in_range("num_attention_heads", num_attention_heads(), 1, hidden_size(), file);
  detail::require_in_range("pad_token_id", pad_token_id(), 0, vocab_size() - 1, file);
  if (hidden_size() % num_attention_heads() != 0)
    throw ModelFileError(file, "hidden_size " + std::to_string(hidden_size()) + " is not a multiple of num_attention_heads " +
                                   std::to_string(num_attention_heads()));
  // RoBERTa's positions run from pad_token_id + 1: the table must hold at least one more.
  if (positions_after_padding() && max_position_embeddings() <= pad_token_id() + 1)
    throw ModelFileError(file, "max_position_embeddings " + std::to_string(max_position_embeddings()) +
                                   " leaves no position after pad_token_id " + std::to_string(pad_token_id()) +
                                   " (RoBERTa's positions start at pad_token_id + 1)");
}

int64_t BertConfig::parameter_count(bool with_pooler) const {
  const int64_t d = hidden_size(), ffn = intermediate_size();
  const int64_t embeddings = (vocab_size() + max_position_embeddings() + type_vocab_size()) * d + 2 * d;
  const int64_t layer = 4 * (d * d + d) + 2 * d + (d * ffn + ffn) + (ffn * d + d) + 2 * d;
  return embeddings + num_hidden_layers() * layer + (with_pooler ? d * d + d : 0);
}

std::string BertConfig::to_json() const {
  std::string text = detail::config_json_over(source_json(), *this);
  Json config = Json::parse(text);
  config["model_type"] = model_type();
  if (!config.contains("architectures"))
    config["architectures"] = Json::array({model_type() == "bert" ? "BertModel" : model_type() == "roberta" ? "RobertaModel"
                                                                                                            : "XLMRobertaModel"});
  config["position_embedding_type"] = "absolute";
  return config.dump(2) + "\n";
}

}  // namespace hf
}  // namespace gradcache
