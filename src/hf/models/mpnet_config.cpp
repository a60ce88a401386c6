// MPNetConfig's fields, once (visit), and the checks across fields.
#include "hf/models/mpnet.h"

#include "hf/layers/config_fields.h"
#include "hf/layers/feed_forward.h"
#include "hf/model_json.h"

namespace gradcache {
namespace hf {
namespace {

using namespace detail::config_reading;
constexpr int64_t kMaxMpnetPositions = detail::kMaxLearnedPositions;
constexpr int64_t kMaxBuckets = 65'536;

}  // namespace

void MPNetConfig::visit(detail::FieldVisitor& fields) {
  fields.integer("vocab_size", vocab_size_, 1, kMaxVocabulary);
  fields.integer("hidden_size", hidden_size_, 1, kMaxWidth);
  fields.integer("num_hidden_layers", num_hidden_layers_, 1, kMaxLayers);
  fields.integer("num_attention_heads", num_attention_heads_, 1, kMaxWidth);
  fields.integer("intermediate_size", intermediate_size_, 1, 8 * kMaxWidth);
  fields.choice("hidden_act", hidden_act_, {GRADCACHE_HF_ACTIVATIONS});
  fields.number("hidden_dropout_prob", hidden_dropout_prob_, 0, 1, /*open_min=*/false, /*open_max=*/true);
  fields.number("attention_probs_dropout_prob", attention_probs_dropout_prob_, 0, 1, false, true);
  fields.integer("max_position_embeddings", max_position_embeddings_, 1, kMaxMpnetPositions);
  fields.number("layer_norm_eps", layer_norm_eps_, 0, 1, /*open_min=*/true, /*open_max=*/true);
  fields.integer("relative_attention_num_buckets", relative_attention_num_buckets_, 1, kMaxBuckets);
  fields.optional_integer("pad_token_id", pad_token_id_, -1, 0, kMaxVocabulary);
  fields.number("initializer_range", initializer_range_, 0, 10);
}

MPNetConfig MPNetConfig::parse(const std::string& text, const std::string& file) {
  return from_parsed(detail::parse_json(text, file), text, file);
}

MPNetConfig MPNetConfig::from_parsed(const Json& config, const std::string& text, const std::string& file) {
  detail::require_model_type(config, {"mpnet"}, file);
  MPNetConfig out;
  detail::FieldReader reader(config, file);
  out.visit(reader);
  out.source_json(text);
  out.validate(file);
  return out;
}

void MPNetConfig::validate(const std::string& file) const {
  detail::check_fields(*this, file);
  const auto text = [](int64_t value) { return std::to_string(value); };
  if (hidden_size() % num_attention_heads() != 0)
    throw ModelFileError(file, "hidden_size " + text(hidden_size()) + " is not a multiple of num_attention_heads " +
                                   text(num_attention_heads()));
  if (vocab_size() <= kPaddingIndex)
    throw ModelFileError(file, "vocab_size " + text(vocab_size()) + " has no row for MPNet's padding index " + text(kPaddingIndex));
  if (pad_token_id() >= vocab_size())
    throw ModelFileError(file, "pad_token_id " + text(pad_token_id()) + " is outside the vocabulary of " + text(vocab_size()));
  // Positions run from the padding index + 1: the table must hold at least one more.
  if (max_position_embeddings() <= kPaddingIndex + 1)
    throw ModelFileError(file, "max_position_embeddings " + text(max_position_embeddings()) +
                                   " leaves no position after MPNet's padding index " + text(kPaddingIndex));
  if (relative_attention_num_buckets() < kBuckets)
    throw ModelFileError(file, "relative_attention_num_buckets " + text(relative_attention_num_buckets()) +
                                   " is below the " + text(kBuckets) + " buckets MPNet's attention looks up");
}

int64_t MPNetConfig::parameter_count(bool with_pooler) const {
  const int64_t d = hidden_size(), ffn = intermediate_size();
  const int64_t embeddings = (vocab_size() + max_position_embeddings()) * d + 2 * d;
  const int64_t layer = 4 * (d * d + d) + 2 * d + (d * ffn + ffn) + (ffn * d + d) + 2 * d;
  const int64_t bias = relative_attention_num_buckets() * num_attention_heads();
  return embeddings + num_hidden_layers() * layer + bias + (with_pooler ? d * d + d : 0);
}

std::string MPNetConfig::to_json() const {
  Json config = Json::parse(detail::config_json_over(source_json(), *this));
  config["model_type"] = "mpnet";
  if (!config.contains("architectures")) config["architectures"] = Json::array({"MPNetModel"});
  return config.dump(2) + "\n";
}

}  // namespace hf
}  // namespace gradcache
