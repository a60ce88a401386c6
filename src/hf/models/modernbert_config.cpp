// ModernBertConfig's fields, once (visit), and the two settings transformers keeps in more than
// one place: the kind of each layer (layer_types since transformers 5, global_attn_every_n_layers
// before) and the rotary bases (rope_parameters per layer kind since transformers 5,
// global_rope_theta / local_rope_theta before).
#include "hf/models/modernbert.h"

#include "hf/layers/config_fields.h"
#include "hf/layers/feed_forward.h"
#include "hf/model_json.h"

namespace gradcache {
namespace hf {
namespace {

using namespace detail::config_reading;
constexpr int64_t kMaxModernBertPositions = detail::kMaxRotaryPositions;
constexpr double kMaxTheta = 1e12;

constexpr const char* kGlobal = "full_attention";
constexpr const char* kLocal = "sliding_attention";

// Refuses a rope type other than "default" in a rope_parameters / rope_scaling object; its
// rope_theta, if any, into `theta`.
void read_rope_object(const Json& object, const std::string& key, double& theta, const std::string& file) {
  if (!object.is_object()) throw ModelFileError(file, detail::quoted(key) + " must be an object");
  const std::string type =
      detail::string_field(object, "rope_type", detail::string_field(object, "type", "default", file), file);
  if (type != "default")
    throw ModelFileError(file, key + " asks for rope_type " + detail::quoted(type) +
                                   ", which is not supported yet (only \"default\" rotary positions)");
  theta = detail::number_field(object, "rope_theta", theta, 1, kMaxTheta, file);
}

// transformers' convert_rope_params_to_dict: rope_scaling (old files) is merged into both
// kinds' rope_parameters, whose rope_theta, where absent, comes from global_rope_theta /
// local_rope_theta, where absent the class defaults.
void read_rope(const Json& config, ModernBertConfig& out, const std::string& file) {
  double global = detail::number_field(config, "global_rope_theta", out.global_rope_theta(), 1, kMaxTheta, file);
  double local = detail::number_field(config, "local_rope_theta", out.local_rope_theta(), 1, kMaxTheta, file);
  auto parameters = config.find("rope_parameters");
  if (parameters != config.end() && !parameters->is_null()) {
    if (!parameters->is_object()) throw ModelFileError(file, "\"rope_parameters\" must be an object");
    for (const auto& [kind, theta] : {std::make_pair(kGlobal, &global), std::make_pair(kLocal, &local)}) {
      auto it = parameters->find(kind);
      if (it != parameters->end() && !it->is_null())
        read_rope_object(*it, std::string("rope_parameters.") + kind, *theta, file);
    }
  }
  auto scaling = config.find("rope_scaling");
  if (scaling != config.end() && !scaling->is_null()) {
    read_rope_object(*scaling, "rope_scaling", global, file);
    local = detail::number_field(*scaling, "rope_theta", local, 1, kMaxTheta, file);
  }
  out.global_rope_theta(global).local_rope_theta(local);
}

std::vector<std::string> read_layer_types(const Json& config, const std::string& file) {
  auto it = config.find("layer_types");
  if (it == config.end() || it->is_null()) return {};
  if (!it->is_array()) throw ModelFileError(file, "\"layer_types\" must be a list, not " + detail::json_kind(*it));
  if (it->size() > static_cast<size_t>(kMaxLayers))
    throw ModelFileError(file, "\"layer_types\" lists " + std::to_string(it->size()) + " layers, more than " +
                                   std::to_string(kMaxLayers));
  std::vector<std::string> types;
  for (const Json& kind : *it) {
    if (!kind.is_string()) throw ModelFileError(file, "\"layer_types\" holds " + kind.dump() + ", not a string");
    types.push_back(kind.get<std::string>());
  }
  return types;
}

// transformers computes the rotary frequencies over config.head_dim where a file sets one, but
// the attention over hidden_size / num_attention_heads: only a head_dim equal to that is coherent.
void refuse_other_head_dim(const Json& config, const ModernBertConfig& out, const std::string& file) {
  auto it = config.find("head_dim");
  if (it == config.end() || it->is_null()) return;
  const int64_t head_dim = detail::int_field(config, "head_dim", 0, 1, kMaxWidth, file);
  if (head_dim != out.head_size())
    throw ModelFileError(file, "head_dim " + std::to_string(head_dim) +
                                   " differs from hidden_size / num_attention_heads (" +
                                   std::to_string(out.head_size()) + "), which ModernBERT's attention uses");
}

}  // namespace

void ModernBertConfig::visit(detail::FieldVisitor& fields) {
  fields.integer("vocab_size", vocab_size_, 1, kMaxVocabulary);
  fields.integer("hidden_size", hidden_size_, 1, kMaxWidth);
  fields.integer("intermediate_size", intermediate_size_, 1, 8 * kMaxWidth);
  fields.integer("num_hidden_layers", num_hidden_layers_, 1, kMaxLayers);
  fields.integer("num_attention_heads", num_attention_heads_, 1, kMaxWidth);
  fields.choice("hidden_activation", hidden_activation_, {GRADCACHE_HF_ACTIVATIONS});
  fields.integer("max_position_embeddings", max_position_embeddings_, 1, kMaxModernBertPositions);
  fields.number("initializer_range", initializer_range_, 0, 10);
  fields.number("initializer_cutoff_factor", initializer_cutoff_factor_, 0, 100, /*open_min=*/true);
  fields.number("norm_eps", norm_eps_, 0, 1, /*open_min=*/true, /*open_max=*/true);
  fields.flag("norm_bias", norm_bias_);
  fields.optional_integer("pad_token_id", pad_token_id_, -1, 0, kMaxVocabulary);
  fields.flag("attention_bias", attention_bias_);
  fields.number("attention_dropout", attention_dropout_, 0, 1, false, /*open_max=*/true);
  // Below 2 the half-window would be 0, which the attention pattern reads as no window at all.
  fields.integer("local_attention", local_attention_, 2, 2 * kMaxModernBertPositions);
  fields.number("embedding_dropout", embedding_dropout_, 0, 1, false, true);
  fields.flag("mlp_bias", mlp_bias_);
  fields.number("mlp_dropout", mlp_dropout_, 0, 1, false, true);
  fields.integer("global_attn_every_n_layers", global_attn_every_n_layers_, 1, kMaxLayers);
}

ModernBertConfig ModernBertConfig::parse(const std::string& text, const std::string& file) {
  return from_parsed(detail::parse_json(text, file), text, file);
}

ModernBertConfig ModernBertConfig::from_parsed(const Json& config, const std::string& text, const std::string& file) {
  detail::require_model_type(config, {"modernbert"}, file);
  ModernBertConfig out;
  detail::FieldReader reader(config, file);
  out.visit(reader);
  out.layer_types(read_layer_types(config, file));
  read_rope(config, out, file);
  out.source_json(text);
  out.validate(file);
  refuse_other_head_dim(config, out, file);
  return out;
}

bool ModernBertConfig::local_layer(int64_t layer) const {
  if (!layer_types().empty()) return layer_types().at(static_cast<size_t>(layer)) == kLocal;
  return layer % global_attn_every_n_layers() != 0;
}

void ModernBertConfig::validate(const std::string& file) const {
  detail::check_fields(*this, file);
  const auto text = [](int64_t value) { return std::to_string(value); };
  if (hidden_size() % num_attention_heads() != 0)
    throw ModelFileError(file, "hidden_size " + text(hidden_size()) + " is not a multiple of num_attention_heads " +
                                   text(num_attention_heads()));
  if (head_size() % 2 != 0)
    throw ModelFileError(file, "the head size " + text(head_size()) + " is odd: rotary positions need an even one");
  if (pad_token_id() >= vocab_size())
    throw ModelFileError(
        file, "pad_token_id " + text(pad_token_id()) + " is outside the vocabulary of " + text(vocab_size()));
  if (!layer_types().empty() && static_cast<int64_t>(layer_types().size()) != num_hidden_layers())
    throw ModelFileError(file, "\"layer_types\" lists " + text(static_cast<int64_t>(layer_types().size())) +
                                   " layers, but num_hidden_layers is " + text(num_hidden_layers()));
  for (const std::string& kind : layer_types())
    if (kind != kGlobal && kind != kLocal)
      throw ModelFileError(file, "\"layer_types\" holds " + detail::quoted(kind) +
                                     ": only \"full_attention\" and \"sliding_attention\" layers are supported");
  for (const auto& [key, theta] : {std::make_pair("global_rope_theta", global_rope_theta()),
                                   std::make_pair("local_rope_theta", local_rope_theta())})
    if (!(theta >= 1 && theta <= kMaxTheta))
      throw ModelFileError(file, std::string("\"") + key + "\" is " + Json(theta).dump() + "; it must be in [1, 1e12]");
}

int64_t ModernBertConfig::parameter_count() const {
  const int64_t d = hidden_size(), ffn = intermediate_size(), layers = num_hidden_layers();
  const int64_t norm = norm_bias() ? 2 * d : d;
  const int64_t attention = 4 * d * d + (attention_bias() ? 4 * d : 0);
  const int64_t mlp = 3 * d * ffn + (mlp_bias() ? 2 * ffn + d : 0);
  // Layer 0 has no attn_norm (the embeddings' norm precedes it); the embeddings and the end have one each.
  return vocab_size() * d + norm + layers * (attention + mlp + norm) + (layers - 1) * norm + norm;
}

std::string ModernBertConfig::to_json() const {
  Json config = Json::parse(detail::config_json_over(source_json(), *this));
  config["model_type"] = "modernbert";
  Json kinds = Json::array();
  for (int64_t i = 0; i < num_hidden_layers(); ++i) kinds.push_back(local_layer(i) ? kLocal : kGlobal);
  config["layer_types"] = kinds;
  // Both spellings of the rotary bases (transformers 5 reads rope_parameters, earlier ones the
  // two thetas); rope_scaling, which would override them, is already merged in.
  config["rope_parameters"] = Json{{kGlobal, {{"rope_type", "default"}, {"rope_theta", global_rope_theta()}}},
                                   {kLocal, {{"rope_type", "default"}, {"rope_theta", local_rope_theta()}}}};
  config["global_rope_theta"] = global_rope_theta();
  config["local_rope_theta"] = local_rope_theta();
  config.erase("rope_scaling");
  if (!config.contains("architectures")) config["architectures"] = Json::array({"ModernBertModel"});
  return config.dump(2) + "\n";
}

}  // namespace hf
}  // namespace gradcache
