// LlamaConfig's fields, once (visit), the defaults of each model_type, and the rotary settings
// transformers keeps in two places (rope_parameters since transformers 5, rope_theta and
// rope_scaling before).
#include "hf/models/llama.h"

#include "hf/layers/config_fields.h"
#include "hf/layers/feed_forward.h"
#include "hf/model_json.h"

namespace gradcache {
namespace hf {
namespace {

using namespace detail::config_reading;
constexpr int64_t kMaxLlamaPositions = detail::kMaxRotaryPositions;

// transformers' defaults where the types differ.
LlamaConfig defaults_of(const std::string& type) {
  LlamaConfig config;
  config.model_type(type);
  if (type == "mistral") config.intermediate_size(14336).num_key_value_heads(8).max_position_embeddings(4096 * 32).sliding_window(4096);
  if (type == "qwen2" || type == "qwen3") config.vocab_size(151936).intermediate_size(22016).max_position_embeddings(32768);
  if (type == "qwen2") config.qkv_bias(true);
  if (type == "qwen3") config.qk_norm(true).head_dim(128);
  return config;
}

struct Rope {
  double theta;
  detail::RopeScaling scaling;
};

// A field of a rope_parameters / rope_scaling object that its rope_type needs.
double rope_field(const Json& object, const char* key, const std::string& where, double min, double max,
                  const std::string& file) {
  if (!object.contains(key)) throw ModelFileError(file, where + " needs \"" + key + "\"");
  return detail::number_field(object, key, 0, min, max, file);
}

// The rotary base and scaling: from rope_parameters (transformers 5) or rope_theta /
// rope_scaling (earlier files; the newer spelling wins where both are given). The rope types
// whose frequencies depend on the text's length or rescale the attention (dynamic, yarn,
// longrope) are refused.
Rope read_rope(const Json& config, double theta, const std::string& file) {
  Rope rope{detail::number_field(config, "rope_theta", theta, 1, 1e12, file), {}};
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    auto it = config.find(key);
    if (it == config.end() || it->is_null()) continue;
    if (!it->is_object()) throw ModelFileError(file, std::string("\"") + key + "\" must be an object");
    const std::string type = detail::string_field(*it, "rope_type", detail::string_field(*it, "type", "default", file), file);
    const std::string where = std::string(key) + " of rope_type " + detail::quoted(type);
    detail::RopeScaling scaling;
    if (type == "linear" || type == "llama3") scaling.factor = rope_field(*it, "factor", where, 1e-6, 1e6, file);
    if (type == "linear") scaling.kind = detail::RopeScaling::Kind::Linear;
    if (type == "llama3") {
      scaling.kind = detail::RopeScaling::Kind::Llama3;
      scaling.low_freq_factor = rope_field(*it, "low_freq_factor", where, 1e-6, 1e6, file);
      scaling.high_freq_factor = rope_field(*it, "high_freq_factor", where, 1e-6, 1e6, file);
      if (!(scaling.high_freq_factor > scaling.low_freq_factor))
        throw ModelFileError(file, where + ": high_freq_factor must be larger than low_freq_factor");
      scaling.original_max_position_embeddings =
          static_cast<int64_t>(rope_field(*it, "original_max_position_embeddings", where, 1, kMaxLlamaPositions, file));
    }
    if (type != "default" && scaling.kind == detail::RopeScaling::Kind::Default)
      throw ModelFileError(file, std::string(key) + " asks for rope_type " + detail::quoted(type) +
                                     ", which is not supported yet (supported: default, linear, llama3)");
    rope.scaling = scaling;
    if (std::string(key) == "rope_parameters") rope.theta = detail::number_field(*it, "rope_theta", rope.theta, 1, 1e12, file);
  }
  return rope;
}

// Qwen2/Qwen3 files may name sliding-window layers; this library computes full attention only there.
void refuse_qwen_windows(const Json& config, const std::string& file) {
  if (detail::bool_field(config, "use_sliding_window", false, file))
    throw ModelFileError(file, "\"use_sliding_window\" is true: Qwen's sliding-window layers are not supported yet");
  auto it = config.find("layer_types");
  if (it == config.end() || !it->is_array()) return;
  for (const Json& kind : *it)
    if (kind != "full_attention")
      throw ModelFileError(file, "layer_types holds " + kind.dump() + ": only \"full_attention\" layers are supported");
}

}  // namespace

const char* const LlamaConfig::kModelTypes[4] = {"llama", "mistral", "qwen2", "qwen3"};

void LlamaConfig::visit(detail::FieldVisitor& fields) {
  fields.integer("vocab_size", vocab_size_, 1, kMaxVocabulary);
  fields.integer("hidden_size", hidden_size_, 1, kMaxWidth);
  fields.integer("intermediate_size", intermediate_size_, 1, 8 * kMaxWidth);
  fields.integer("num_hidden_layers", num_hidden_layers_, 1, kMaxLayers);
  fields.integer("num_attention_heads", num_attention_heads_, 1, kMaxWidth);
  fields.optional_integer("num_key_value_heads", num_key_value_heads_, 0, 1, kMaxWidth);
  fields.optional_integer("head_dim", head_dim_, 0, 2, kMaxWidth);
  fields.choice("hidden_act", hidden_act_, {GRADCACHE_HF_ACTIVATIONS});
  fields.integer("max_position_embeddings", max_position_embeddings_, 1, kMaxLlamaPositions);
  fields.number("rms_norm_eps", rms_norm_eps_, 0, 1, /*open_min=*/true, /*open_max=*/true);
  fields.number("attention_dropout", attention_dropout_, 0, 1, false, /*open_max=*/true);
  fields.optional_integer("pad_token_id", pad_token_id_, -1, 0, kMaxVocabulary);
  fields.number("initializer_range", initializer_range_, 0, 10);
  if (model_type_ == "llama" || model_type_ == "qwen3") fields.flag("attention_bias", attention_bias_);
  if (model_type_ == "llama") fields.flag("mlp_bias", mlp_bias_);
  if (model_type_ == "mistral") fields.optional_integer("sliding_window", sliding_window_, 0, 1, kMaxLlamaPositions);
}

LlamaConfig LlamaConfig::parse(const std::string& text, const std::string& file) {
  return from_parsed(detail::parse_json(text, file), text, file);
}

LlamaConfig LlamaConfig::from_parsed(const Json& config, const std::string& text, const std::string& file) {
  LlamaConfig out = defaults_of(detail::require_model_type(config, {kModelTypes[0], kModelTypes[1], kModelTypes[2], kModelTypes[3]}, file));
  if (out.model_type() == "qwen2" || out.model_type() == "qwen3") refuse_qwen_windows(config, file);
  detail::FieldReader reader(config, file);
  out.visit(reader);
  const Rope rope = read_rope(config, out.rope_theta(), file);
  out.rope_theta(rope.theta).rope_scaling(rope.scaling);
  out.source_json(text);
  out.validate(file);
  return out;
}

void LlamaConfig::validate(const std::string& file) const {
  detail::check_fields(*this, file);
  const auto text = [](int64_t value) { return std::to_string(value); };
  if (head_dim() == 0 && hidden_size() % num_attention_heads() != 0)
    throw ModelFileError(file, "hidden_size " + text(hidden_size()) + " is not a multiple of num_attention_heads " +
                                   text(num_attention_heads()) + " (and no head_dim is given)");
  if (num_attention_heads() % key_value_heads() != 0)
    throw ModelFileError(file, "num_attention_heads " + text(num_attention_heads()) + " is not a multiple of num_key_value_heads " +
                                   text(key_value_heads()));
  if (head_size() % 2 != 0) throw ModelFileError(file, "the head size " + text(head_size()) + " is odd: rotary positions need an even one");
  detail::require_in_range("num_attention_heads x head size", num_attention_heads() * head_size(), 1, 4 * kMaxWidth, file);
  if (pad_token_id() >= vocab_size())
    throw ModelFileError(file, "pad_token_id " + text(pad_token_id()) + " is outside the vocabulary of " + text(vocab_size()));
  if (!(rope_theta() >= 1)) throw ModelFileError(file, "rope_theta must be at least 1");
}

int64_t LlamaConfig::parameter_count() const {
  const int64_t d = hidden_size(), ffn = intermediate_size(), q = num_attention_heads() * head_size(),
                kv = key_value_heads() * head_size();
  const int64_t bias = attention_bias() ? q + 2 * kv + d : qkv_bias() ? q + 2 * kv : 0;
  const int64_t attention = d * q + 2 * d * kv + q * d + bias + (qk_norm() ? 2 * head_size() : 0);
  const int64_t mlp = 3 * d * ffn + (mlp_bias() ? 2 * ffn + d : 0);
  return vocab_size() * d + num_hidden_layers() * (attention + mlp + 2 * d) + d;
}

std::string LlamaConfig::to_json() const {
  Json config = Json::parse(detail::config_json_over(source_json(), *this));
  config["model_type"] = model_type();
  // Resolved, not null: transformers' Qwen2 reads head_dim with getattr, which a null defeats.
  config["head_dim"] = head_size();
  config["num_key_value_heads"] = key_value_heads();
  // Both spellings of the rotary base: transformers 5 reads rope_parameters, earlier ones rope_theta.
  config["rope_theta"] = rope_theta();
  const detail::RopeScaling& scaling = rope_scaling();
  Json rope = {{"rope_type", detail::rope_type_name(scaling.kind)}, {"rope_theta", rope_theta()}};
  if (scaling.kind != detail::RopeScaling::Kind::Default) rope["factor"] = scaling.factor;
  if (scaling.kind == detail::RopeScaling::Kind::Llama3) {
    rope["low_freq_factor"] = scaling.low_freq_factor;
    rope["high_freq_factor"] = scaling.high_freq_factor;
    rope["original_max_position_embeddings"] = scaling.original_max_position_embeddings;
  }
  config["rope_parameters"] = rope;
  if (!config.contains("architectures")) {
    const std::string type = model_type();
    config["architectures"] = Json::array({type == "llama" ? "LlamaModel" : type == "mistral" ? "MistralModel"
                                                                        : type == "qwen2"     ? "Qwen2Model"
                                                                                              : "Qwen3Model"});
  }
  return config.dump(2) + "\n";
}

}  // namespace hf
}  // namespace gradcache
