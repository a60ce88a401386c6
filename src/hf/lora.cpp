#include <gradcache/hf/lora.h>

#include <gradcache/hf/linear.h>
#include <gradcache/hf/transformer.h>

#include "files/atomic_file.h"
#include "hf/model_json.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>

namespace gradcache {
namespace hf {
namespace {

// PEFT's prefix of a saved adapter's names (PeftModel's base_model, LoraModel's model).
const std::string kSavedPrefix = "base_model.model.";

// The adapted (or adaptable) linear layers of `module` by name.
std::vector<std::pair<std::string, LinearImpl*>> linear_layers(const torch::nn::Module& module) {
  std::vector<std::pair<std::string, LinearImpl*>> out;
  for (const auto& item : module.named_modules()) {
    if (auto* linear = item.value()->as<LinearImpl>()) out.emplace_back(item.key(), linear);
  }
  return out;
}

std::string join(const std::vector<std::string>& items, const std::string& separator = ", ") {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

// The last part of each linear layer's name, once each, for a message.
std::string leaf_names(const torch::nn::Module& module) {
  std::set<std::string> leaves;
  for (const auto& [name, layer] : linear_layers(module)) {
    const auto dot = name.rfind('.');
    leaves.insert(dot == std::string::npos ? name : name.substr(dot + 1));
  }
  return join(std::vector<std::string>(leaves.begin(), leaves.end()));
}

void check_values(const LoraOptions& o) {
  if (o.rank() < 1) throw std::invalid_argument("the LoRA rank must be at least 1, not " + std::to_string(o.rank()));
  if (!(std::isfinite(o.alpha()) && o.alpha() > 0))
    throw std::invalid_argument("LoRA alpha must be a positive number, not " + std::to_string(o.alpha()));
  if (!(o.dropout() >= 0.0 && o.dropout() < 1.0))
    throw std::invalid_argument("LoRA dropout must be in [0, 1), not " + std::to_string(o.dropout()));
}

// What PEFT's adapter_config.json may set that this reads as "not used": absent, null, false,
// "none", {} or [].
bool unused(const detail::Json& config, const std::string& key) {
  if (!config.contains(key)) return true;
  const auto& v = config[key];
  return v.is_null() || (v.is_boolean() && !v.get<bool>()) || (v.is_string() && v.get<std::string>() == "none") ||
         (v.is_object() && v.empty()) || (v.is_array() && v.empty());
}

}  // namespace

double LoraOptions::scaling() const {
  return rslora_ ? alpha_ / std::sqrt(static_cast<double>(rank_)) : alpha_ / static_cast<double>(rank_);
}

std::vector<std::string> default_lora_targets(const std::string& model_type) {
  if (model_type == "llama" || model_type == "mistral" || model_type == "qwen2" || model_type == "qwen3")
    return {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  if (model_type == "bloom") return {"query_key_value", "dense", "dense_h_to_4h", "dense_4h_to_h"};
  if (model_type == "bert" || model_type == "roberta" || model_type == "xlm-roberta")
    return {"query", "key", "value", "dense"};
  if (model_type == "mpnet") return {"q", "k", "v", "o", "dense"};
  if (model_type == "modernbert") return {"Wqkv", "Wo", "Wi"};
  return {};
}

bool is_lora_target(const std::string& module, const std::vector<std::string>& targets) {
  for (const auto& target : targets) {
    if (module == target) return true;
    if (module.size() > target.size() && module.compare(module.size() - target.size(), target.size(), target) == 0 &&
        module[module.size() - target.size() - 1] == '.')
      return true;
  }
  return false;
}

LoraOptions add_lora(TransformerBackbone& model, LoraOptions options) {
  check_values(options);
  if (has_lora(model)) throw std::invalid_argument("the model has LoRA adapters already");
  if (options.targets().empty()) {
    options.targets(default_lora_targets(model.model_type()));
    if (options.targets().empty())
      throw std::invalid_argument("no default LoRA targets for a " + model.model_type() +
                                  " model: name them (--lora-targets), e.g. some of its linear layers: " +
                                  leaf_names(model));
  }
  int64_t adapted = 0;
  for (const auto& [name, layer] : linear_layers(model)) {
    if (!is_lora_target(name, options.targets())) continue;
    layer->add_adapter(options.rank(), options.scaling(), options.dropout());
    ++adapted;
  }
  if (adapted == 0)
    throw std::invalid_argument("the LoRA targets " + join(options.targets()) + " match no linear layer of this " +
                                model.model_type() + " model; its linear layers are named " + leaf_names(model));
  return options;
}

bool has_lora(const torch::nn::Module& module) {
  for (const auto& [name, layer] : linear_layers(module))
    if (layer->has_adapter()) return true;
  return false;
}

int64_t lora_numbers(const torch::nn::Module& module) {
  int64_t n = 0;
  for (const auto& [name, layer] : linear_layers(module))
    if (layer->has_adapter()) n += layer->lora_A()->weight.numel() + layer->lora_B()->weight.numel();
  return n;
}

void merge_lora(torch::nn::Module& module) {
  for (const auto& [name, layer] : linear_layers(module)) layer->merge_adapter();
}

LoraOptions read_lora_config(const std::string& dir) {
  const std::string file = (std::filesystem::path(dir) / "adapter_config.json").string();
  return parse_lora_config(detail::read_text_file(file), file);
}

LoraOptions parse_lora_config(const std::string& text, const std::string& file) {
  const detail::Json config = detail::parse_json(text, file);
  detail::require_object(config, file);
  const std::string type = detail::string_field(config, "peft_type", "", file);
  if (type != "LORA")
    throw ModelFileError(file, "peft_type is " + detail::quoted(type) + ": only LoRA adapters (\"LORA\") are supported");
  LoraOptions options(detail::int_field(config, "r", 8, 1, 1 << 16, file));
  options.alpha(detail::number_field(config, "lora_alpha", 8, 1e-12, 1e12, file));
  options.dropout(detail::number_field(config, "lora_dropout", 0.0, 0.0, 0.999999, file));
  options.rslora(detail::bool_field(config, "use_rslora", false, file));
  for (const char* key : {"use_dora", "fan_in_fan_out", "lora_bias", "rank_pattern", "alpha_pattern", "modules_to_save",
                          "layers_to_transform", "layers_pattern", "exclude_modules", "target_parameters",
                          "layer_replication", "trainable_token_indices", "alora_invocation_tokens"}) {
    if (!unused(config, key))
      throw ModelFileError(file, std::string("sets \"") + key + "\", which gradcache does not support (plain LoRA on "
                                 "target_modules only)");
  }
  if (!unused(config, "bias"))
    throw ModelFileError(file, "trains biases (\"bias\": " + config["bias"].dump() + "), which gradcache's LoRA does not "
                               "support (\"none\" only)");
  const auto targets = config.contains("target_modules") ? config["target_modules"] : detail::Json();
  if (targets.is_string())
    throw ModelFileError(file, "target_modules is a regular expression (" + detail::quoted(targets.get<std::string>()) +
                               "); gradcache reads a list of module names");
  if (!targets.is_array() || targets.empty())
    throw ModelFileError(file, "target_modules must be a non-empty list of module names, not " + detail::json_kind(targets));
  std::vector<std::string> names;
  for (const auto& t : targets) {
    if (!t.is_string() || t.get<std::string>().empty())
      throw ModelFileError(file, "target_modules holds " + detail::json_kind(t) + ", not a module name");
    names.push_back(t.get<std::string>());
  }
  options.targets(names);
  return options;
}

LoraOptions load_lora_adapter(TransformerBackbone& model, const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) throw ModelFileError(dir, "not a directory (an adapter directory holds adapter_config.json)");
  LoraOptions options = read_lora_config(dir);
  const std::string file = (fs::path(dir) / "adapter_model.safetensors").string();
  const SafetensorsContents contents = read_safetensors(file);
  try {
    options = add_lora(model, options);
  } catch (const std::invalid_argument& e) {
    throw ModelFileError((fs::path(dir) / "adapter_config.json").string(), e.what());
  }
  // Our name of each saved tensor: PEFT's prefix removed, and a task model's prefix ("model."
  // of ...ForCausalLM) when the adapter was trained on one.
  std::map<std::string, const at::Tensor*> by_name;
  for (const auto& [name, tensor] : contents.tensors) {
    if (name.compare(0, kSavedPrefix.size(), kSavedPrefix) != 0)
      throw ModelFileError(file, "tensor " + detail::quoted(name) + " is not named as PEFT saves adapters (\"" +
                                     kSavedPrefix + "<module>.lora_A.weight\")");
    std::string ours = name.substr(kSavedPrefix.size());
    const std::string& prefix = model.checkpoint_prefix();
    if (!prefix.empty() && ours.compare(0, prefix.size(), prefix) == 0) ours = ours.substr(prefix.size());
    by_name[ours] = &tensor;
  }
  c10::NoGradGuard no_grad;
  size_t used = 0;
  for (const auto& [module, layer] : linear_layers(model)) {
    if (!layer->has_adapter()) continue;
    for (auto [part, weight] : {std::make_pair("lora_A", layer->lora_A()->weight), std::make_pair("lora_B", layer->lora_B()->weight)}) {
      const std::string name = module + "." + part + ".weight";
      const auto it = by_name.find(name);
      if (it == by_name.end())
        throw ModelFileError(file, "has no tensor for " + detail::quoted(name) + ", which its adapter_config.json's targets "
                                   "adapt in this " + model.model_type() + " model: is it another model's adapter?");
      const at::Tensor& stored = *it->second;
      if (!stored.is_floating_point() || stored.sizes() != weight.sizes())
        throw ModelFileError(file, "tensor " + detail::quoted(name) + " is not a floating-point [" +
                                       std::to_string(weight.size(0)) + ", " + std::to_string(weight.size(1)) +
                                       "] matrix (rank " + std::to_string(options.rank()) + ")");
      weight.copy_(stored);
      ++used;
    }
  }
  if (used != by_name.size()) {
    for (const auto& [name, tensor] : by_name) {
      bool found = false;
      for (const auto& item : model.named_parameters()) found = found || item.key() == name;
      if (!found)
        throw ModelFileError(file, "holds " + detail::quoted(name) + ", which no adapter of this " + model.model_type() +
                                       " model has (targets " + join(options.targets()) + ")");
    }
  }
  return options;
}

NamedTensors lora_tensors(const torch::nn::Module& module) {
  NamedTensors out;
  for (const auto& [name, layer] : linear_layers(module)) {
    if (!layer->has_adapter()) continue;
    out.emplace_back(kSavedPrefix + name + ".lora_A.weight", layer->lora_A()->weight.detach().to(at::kFloat).contiguous());
    out.emplace_back(kSavedPrefix + name + ".lora_B.weight", layer->lora_B()->weight.detach().to(at::kFloat).contiguous());
  }
  return out;
}

void save_lora_adapter(const TransformerBackbone& model, const LoraOptions& options, const std::string& dir,
                       const std::string& base_model) {
  namespace fs = std::filesystem;
  const NamedTensors tensors = lora_tensors(model);
  if (tensors.empty()) throw std::invalid_argument("save_lora_adapter: the model has no LoRA adapter");
  files::write_file_atomic((fs::path(dir) / "adapter_config.json").string(),
                                      lora_config_json(options, base_model));
  save_safetensors((fs::path(dir) / "adapter_model.safetensors").string(), tensors);
}

std::string lora_config_json(const LoraOptions& options, const std::string& base_model) {
  const detail::Json config = {{"peft_type", "LORA"},
                               {"task_type", nullptr},
                               {"base_model_name_or_path", base_model.empty() ? detail::Json(nullptr) : detail::Json(base_model)},
                               {"r", options.rank()},
                               {"lora_alpha", options.alpha()},
                               {"lora_dropout", options.dropout()},
                               {"target_modules", options.targets()},
                               {"bias", "none"},
                               {"fan_in_fan_out", false},
                               {"use_rslora", options.rslora()},
                               {"use_dora", false},
                               {"init_lora_weights", true},
                               {"modules_to_save", nullptr},
                               {"inference_mode", true}};
  return config.dump(2) + "\n";
}

}  // namespace hf
}  // namespace gradcache
