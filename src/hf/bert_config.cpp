#include <gradcache/hf/bert_config.h>

#include "hf/model_json.h"

#include <algorithm>
#include <array>

namespace gradcache {
namespace hf {
namespace {

using detail::Json;

// Sanity bounds: well above any released BERT (bert-large: 1,024 wide, 24 layers, 16 heads,
// 4,096 intermediate, 512 positions, a 30,522 vocabulary; multilingual ones 250,000 words), low
// enough that a corrupt file cannot ask for terabytes.
constexpr int64_t kMaxVocabulary = 10'000'000;
constexpr int64_t kMaxWidth = 65'536;
constexpr int64_t kMaxLayers = 1'000;
constexpr int64_t kMaxPositions = 1'048'576;
constexpr int64_t kMaxTokenTypes = 1'000;

constexpr std::array<const char*, 7> kActivations = {"gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast",
                                                      "relu", "silu", "swish"};

void refuse_if_true(const Json& config, const char* key, const char* why, const std::string& file) {
  if (detail::bool_field(config, key, false, file))
    throw ModelFileError(file, std::string("\"") + key + "\" is true: " + why + " (only the BERT encoder is supported)");
}

}  // namespace

BertConfig BertConfig::parse(const std::string& text, const std::string& file) {
  const Json config = detail::parse_json(text, file);
  detail::require_object(config, file);
  const std::string type = detail::string_field(config, "model_type", "", file);
  if (type != "bert") throw ModelFileError(file, "model_type " + detail::quoted(type) + " is not \"bert\"");
  refuse_if_true(config, "is_decoder", "a decoder", file);
  refuse_if_true(config, "add_cross_attention", "cross-attention layers", file);
  const std::string positions = detail::string_field(config, "position_embedding_type", "absolute", file);
  if (positions != "absolute")
    throw ModelFileError(file, "position_embedding_type " + detail::quoted(positions) + " is not supported (only \"absolute\")");

  BertConfig out;
  out.vocab_size(detail::int_field(config, "vocab_size", out.vocab_size(), 1, kMaxVocabulary, file));
  out.hidden_size(detail::int_field(config, "hidden_size", out.hidden_size(), 1, kMaxWidth, file));
  out.num_hidden_layers(detail::int_field(config, "num_hidden_layers", out.num_hidden_layers(), 1, kMaxLayers, file));
  out.num_attention_heads(detail::int_field(config, "num_attention_heads", out.num_attention_heads(), 1, kMaxWidth, file));
  out.intermediate_size(detail::int_field(config, "intermediate_size", out.intermediate_size(), 1, 8 * kMaxWidth, file));
  out.hidden_act(detail::string_field(config, "hidden_act", out.hidden_act(), file));
  out.hidden_dropout_prob(detail::number_field(config, "hidden_dropout_prob", out.hidden_dropout_prob(), 0, 1, file));
  out.attention_probs_dropout_prob(
      detail::number_field(config, "attention_probs_dropout_prob", out.attention_probs_dropout_prob(), 0, 1, file));
  out.max_position_embeddings(
      detail::int_field(config, "max_position_embeddings", out.max_position_embeddings(), 1, kMaxPositions, file));
  out.type_vocab_size(detail::int_field(config, "type_vocab_size", out.type_vocab_size(), 1, kMaxTokenTypes, file));
  out.layer_norm_eps(detail::number_field(config, "layer_norm_eps", out.layer_norm_eps(), 0, 1, file));
  out.initializer_range(detail::number_field(config, "initializer_range", out.initializer_range(), 0, 10, file));
  out.pad_token_id(detail::int_field(config, "pad_token_id", out.pad_token_id(), 0, kMaxVocabulary, file));
  out.source_json(text);
  out.validate(file);
  return out;
}

void BertConfig::validate(const std::string& file) const {
  auto in_range = [&](const char* name, int64_t value, int64_t min, int64_t max) {
    if (value < min || value > max)
      throw ModelFileError(file, std::string("\"") + name + "\" is " + std::to_string(value) + "; it must be from " +
                                     std::to_string(min) + " to " + std::to_string(max));
  };
  in_range("vocab_size", vocab_size(), 1, kMaxVocabulary);
  in_range("hidden_size", hidden_size(), 1, kMaxWidth);
  in_range("num_hidden_layers", num_hidden_layers(), 1, kMaxLayers);
  in_range("num_attention_heads", num_attention_heads(), 1, hidden_size());
  in_range("intermediate_size", intermediate_size(), 1, 8 * kMaxWidth);
  in_range("max_position_embeddings", max_position_embeddings(), 1, kMaxPositions);
  in_range("type_vocab_size", type_vocab_size(), 1, kMaxTokenTypes);
  in_range("pad_token_id", pad_token_id(), 0, vocab_size() - 1);
  if (hidden_size() % num_attention_heads() != 0)
    throw ModelFileError(file, "hidden_size " + std::to_string(hidden_size()) + " is not a multiple of num_attention_heads " +
                                   std::to_string(num_attention_heads()));
  if (std::find(kActivations.begin(), kActivations.end(), hidden_act()) == kActivations.end()) {
    std::string known;
    for (const char* name : kActivations) known += (known.empty() ? "" : ", ") + std::string(name);
    throw ModelFileError(file, "hidden_act " + detail::quoted(hidden_act()) + " is not supported (supported: " + known + ")");
  }
  for (double p : {hidden_dropout_prob(), attention_probs_dropout_prob()}) {
    if (!(p >= 0 && p < 1)) throw ModelFileError(file, "a dropout probability is " + Json(p).dump() + "; it must be in [0, 1)");
  }
  if (!(layer_norm_eps() > 0 && layer_norm_eps() < 1))
    throw ModelFileError(file, "layer_norm_eps is " + Json(layer_norm_eps()).dump() + "; it must be in (0, 1)");
}

int64_t BertConfig::parameter_count(bool with_pooler) const {
  const int64_t d = hidden_size(), ffn = intermediate_size();
  const int64_t embeddings = (vocab_size() + max_position_embeddings() + type_vocab_size()) * d + 2 * d;
  const int64_t layer = 4 * (d * d + d) + 2 * d + (d * ffn + ffn) + (ffn * d + d) + 2 * d;
  return embeddings + num_hidden_layers() * layer + (with_pooler ? d * d + d : 0);
}

std::string BertConfig::to_json() const {
  Json config = Json::object();
  if (!source_json().empty()) {
    config = Json::parse(source_json(), nullptr, /*allow_exceptions=*/false);
    if (!config.is_object()) config = Json::object();
  }
  config["model_type"] = "bert";
  if (!config.contains("architectures")) config["architectures"] = Json::array({"BertModel"});
  config["vocab_size"] = vocab_size();
  config["hidden_size"] = hidden_size();
  config["num_hidden_layers"] = num_hidden_layers();
  config["num_attention_heads"] = num_attention_heads();
  config["intermediate_size"] = intermediate_size();
  config["hidden_act"] = hidden_act();
  config["hidden_dropout_prob"] = hidden_dropout_prob();
  config["attention_probs_dropout_prob"] = attention_probs_dropout_prob();
  config["max_position_embeddings"] = max_position_embeddings();
  config["type_vocab_size"] = type_vocab_size();
  config["layer_norm_eps"] = layer_norm_eps();
  config["initializer_range"] = initializer_range();
  config["pad_token_id"] = pad_token_id();
  config["position_embedding_type"] = "absolute";
  return config.dump(2) + "\n";
}

}  // namespace hf
}  // namespace gradcache
