// BloomConfig's fields, once (visit), the other names transformers accepts for three of them,
// and the checks across fields.
#include "hf/models/bloom.h"

#include "hf/layers/config_fields.h"
#include "hf/model_json.h"

namespace gradcache {
namespace hf {
namespace {

using namespace detail::config_reading;

// The field's name in this struct (BloomConfig's attribute) and the other name a file may use.
struct Alias {
  const char* key;
  const char* other;
  int64_t max;
};
constexpr Alias kAliases[] = {{"hidden_size", "n_embed", kMaxWidth},
                              {"n_layer", "num_hidden_layers", kMaxLayers},
                              {"n_head", "num_attention_heads", kMaxWidth}};

// `config` with each alias copied to its key, so that one visit reads either; both given and
// different is refused rather than guessed (transformers' precedence differs per name).
Json resolve_aliases(Json config, const std::string& file) {
  for (const Alias& alias : kAliases) {
    auto other = config.find(alias.other);
    if (other == config.end() || other->is_null()) continue;
    const int64_t value = detail::int_field(config, alias.other, 0, 1, alias.max, file);
    auto key = config.find(alias.key);
    if (key != config.end() && !key->is_null() && detail::int_field(config, alias.key, 0, 1, alias.max, file) != value)
      throw ModelFileError(file, std::string("\"") + alias.key + "\" and \"" + alias.other + "\" (the same field) disagree");
    config[alias.key] = value;
  }
  return config;
}

}  // namespace

void BloomConfig::visit(detail::FieldVisitor& fields) {
  fields.integer("vocab_size", vocab_size_, 1, kMaxVocabulary);
  fields.integer("hidden_size", hidden_size_, 1, kMaxWidth);
  fields.integer("n_layer", n_layer_, 1, kMaxLayers);
  fields.integer("n_head", n_head_, 1, kMaxWidth);
  fields.number("layer_norm_epsilon", layer_norm_epsilon_, 0, 1, /*open_min=*/true, /*open_max=*/true);
  fields.flag("apply_residual_connection_post_layernorm", apply_residual_connection_post_layernorm_);
  fields.number("hidden_dropout", hidden_dropout_, 0, 1, /*open_min=*/false, /*open_max=*/true);
  fields.number("attention_dropout", attention_dropout_, 0, 1, false, true);
  fields.integer("pretraining_tp", pretraining_tp_, 1, kMaxWidth);
  fields.flag("slow_but_exact", slow_but_exact_);
  fields.optional_integer("pad_token_id", pad_token_id_, -1, 0, kMaxVocabulary);
  fields.number("initializer_range", initializer_range_, 0, 10);
}

BloomConfig BloomConfig::parse(const std::string& text, const std::string& file) {
  return from_parsed(detail::parse_json(text, file), text, file);
}

BloomConfig BloomConfig::from_parsed(const Json& json, const std::string& text, const std::string& file) {
  const Json config = resolve_aliases(json, file);
  detail::require_model_type(config, {"bloom"}, file);
  BloomConfig out;
  detail::FieldReader reader(config, file);
  out.visit(reader);
  out.source_json(text);
  out.validate(file);
  return out;
}

void BloomConfig::validate(const std::string& file) const {
  detail::check_fields(*this, file);
  const auto text = [](int64_t value) { return std::to_string(value); };
  if (hidden_size() % n_head() != 0)
    throw ModelFileError(file, "hidden_size " + text(hidden_size()) + " is not a multiple of n_head " + text(n_head()));
  if (pad_token_id() >= vocab_size())
    throw ModelFileError(file, "pad_token_id " + text(pad_token_id()) + " is outside the vocabulary of " + text(vocab_size()));
  // transformers then sums the dense layers' slices without their biases: not supported.
  if (slow_but_exact() && pretraining_tp() > 1)
    throw ModelFileError(file, "slow_but_exact with pretraining_tp " + text(pretraining_tp()) +
                                   " (the sliced projections of Megatron's tensor parallelism) is not supported; set "
                                   "slow_but_exact to false");
}

int64_t BloomConfig::parameter_count() const {
  const int64_t d = hidden_size();
  const int64_t attention = (d * 3 * d + 3 * d) + (d * d + d);
  const int64_t mlp = (d * 4 * d + 4 * d) + (4 * d * d + d);
  return vocab_size() * d + 2 * d + n_layer() * (attention + mlp + 4 * d) + 2 * d;
}

std::string BloomConfig::to_json() const {
  Json config = Json::parse(detail::config_json_over(source_json(), *this));
  // The fields are written under their own names; a stale alias would override them on reading.
  for (const Alias& alias : kAliases) config.erase(alias.other);
  config["model_type"] = "bloom";
  if (!config.contains("architectures")) config["architectures"] = Json::array({"BloomModel"});
  return config.dump(2) + "\n";
}

}  // namespace hf
}  // namespace gradcache
