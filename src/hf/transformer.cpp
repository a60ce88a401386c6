// The architecture registry, and loading / saving an encoder's weights under its Hugging Face names.
#include <gradcache/hf/transformer.h>

#include <gradcache/hf/lora.h>

#include "files/atomic_file.h"
#include "hf/model_json.h"
#include "hf/models/architectures.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/ones_like.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace gradcache {
namespace hf {
namespace {

using detail::Architecture;

struct Registry {
  std::mutex mutex;
  std::map<std::string, Architecture> architectures = detail::builtin_architectures();
};

Registry& registry() {
  static Registry instance;
  return instance;
}

std::string shape_text(at::IntArrayRef sizes) {
  std::ostringstream out;
  out << sizes;
  return out.str();
}

std::string listed(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

at::Tensor pick(const c10::IValue& output, const std::string& key, const char* why_missing) {
  if (!output.isGenericDict())
    throw std::invalid_argument("hf::" + key + ": the model output is not the dict a TransformerBackbone returns");
  const auto dict = output.toGenericDict();
  const auto it = dict.find(key);
  if (it == dict.end()) throw std::invalid_argument("hf::" + key + ": the model output has no " + key + " (" + why_missing + ")");
  return it->value().toTensor();
}

}  // namespace

c10::Dict<std::string, at::Tensor> TransformerBackbone::forward(const std::map<std::string, at::Tensor>& batch) {
  auto get = [&](const char* key) {
    auto it = batch.find(key);
    return it == batch.end() ? at::Tensor() : it->second;
  };
  const at::Tensor ids = get("input_ids");
  TORCH_CHECK(ids.defined(), "TransformerBackbone::forward: the batch has no \"input_ids\"");
  at::Tensor mask = get("attention_mask");
  if (!mask.defined()) mask = at::ones_like(ids);
  const TransformerOutput out = encode(ids, mask, get("token_type_ids"), has_pooler());
  c10::Dict<std::string, at::Tensor> result;
  result.insert("last_hidden_state", out.last_hidden_state);
  if (out.pooler_output.defined()) result.insert("pooler_output", out.pooler_output);
  return result;
}

at::Tensor pooler_output(const c10::IValue& model_output) {
  return pick(model_output, "pooler_output", "the checkpoint had no pooler weights");
}

at::Tensor last_hidden_state(const c10::IValue& model_output) {
  return pick(model_output, "last_hidden_state", "not a TransformerBackbone's output");
}

void register_architecture(const std::string& model_type, ArchitectureBuilder builder, ParameterCounter counter) {
  TORCH_CHECK(!model_type.empty() && builder, "register_architecture: needs a model_type and a builder");
  std::lock_guard<std::mutex> lock(registry().mutex);
  registry().architectures[model_type] = {std::move(builder), std::move(counter), /*read=*/nullptr};
}

bool unregister_architecture(const std::string& model_type) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  return registry().architectures.erase(model_type) > 0;
}

std::vector<std::string> supported_model_types() {
  std::lock_guard<std::mutex> lock(registry().mutex);
  std::vector<std::string> names;
  for (const auto& entry : registry().architectures) names.push_back(entry.first);
  return names;
}

namespace {

// The architecture config.json names; ModelFileError listing the supported ones otherwise.
Architecture find_architecture(const detail::Json& config, const std::string& config_file) {
  detail::require_object(config, config_file);
  const std::string type = detail::string_field(config, "model_type", "", config_file);
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    auto it = registry().architectures.find(type);
    if (it != registry().architectures.end()) return it->second;
  }
  throw ModelFileError(config_file, (type.empty() ? std::string("has no \"model_type\"")
                                                  : "model_type " + detail::quoted(type) + " is not supported") +
                                        " (supported: " + listed(supported_model_types()) + ")");
}

// config.json read once for the built-ins (Architecture::read); a registered architecture's
// counter (when it has one) and builder each read the text.
detail::ReadConfig read_config(const std::string& config_text, const std::string& config_file) {
  const detail::Json config = detail::parse_json(config_text, config_file);
  const Architecture architecture = find_architecture(config, config_file);
  if (architecture.read) return architecture.read(config, config_text, config_file);
  detail::ReadConfig read;
  read.parameters = architecture.count ? architecture.count(config_text, config_file) : -1;
  read.build = [architecture, config_text, config_file] { return architecture.build(config_text, config_file); };
  return read;
}

}  // namespace

std::shared_ptr<TransformerBackbone> build_transformer(const std::string& config_text, const std::string& config_file) {
  return read_config(config_text, config_file).build();
}

int64_t count_parameters(const std::string& config_text, const std::string& config_file) {
  const int64_t parameters = read_config(config_text, config_file).parameters;
  if (parameters < 0) throw ModelFileError(config_file, "its architecture was registered without a parameter counter");
  return parameters;
}

void load_weights(TransformerBackbone& model, const StoredWeights& weights) {
  const std::string& file = weights.file();
  const std::string prefix = model.checkpoint_prefix();
  auto lookup = [&](const std::string& name) -> std::optional<std::string> {
    for (const std::string& key : {name, prefix + name}) {
      if (weights.find(key) != nullptr) return key;
    }
    return std::nullopt;
  };
  if (model.has_pooler()) {
    bool any = false;
    for (const auto& item : model.named_parameters()) any = any || (item.key().rfind("pooler.", 0) == 0 && lookup(item.key()));
    if (!any) model.remove_pooler();
  }
  // Every tensor is checked before the first is read: a wrong file fails fast, and whole.
  std::vector<std::pair<at::Tensor, std::string>> sources;
  for (auto& item : model.named_parameters()) {
    const std::string& name = item.key();
    const std::optional<std::string> key = lookup(name);
    if (!key)
      throw ModelFileError(file, "has no tensor " + detail::quoted(name) + " (nor " + detail::quoted(prefix + name) + "), which a " +
                                     model.model_type() + " model of this config.json has; is it another architecture's checkpoint?");
    const StoredWeights::Description& stored = *weights.find(*key);
    if (c10::IntArrayRef(stored.shape) != item.value().sizes())
      throw ModelFileError(file, "tensor " + detail::quoted(name) + " has shape " + shape_text(stored.shape) +
                                     " but config.json gives the model " + shape_text(item.value().sizes()));
    if (!c10::isFloatingType(stored.dtype))
      throw ModelFileError(file, "tensor " + detail::quoted(name) + " holds " + std::string(c10::toString(stored.dtype)) +
                                     ", not floating-point weights");
    sources.emplace_back(item.value(), *key);
  }
  c10::NoGradGuard no_grad;
  for (auto& [parameter, key] : sources) weights.read_into(key, parameter);  // no copy of the file beside the model
}

void load_weights(TransformerBackbone& model, const NamedTensors& checkpoint, const std::string& file) {
  load_weights(model, StoredWeights(checkpoint, file));
}

std::shared_ptr<TransformerBackbone> load_transformer(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) throw ModelFileError(dir, "not a directory");
  const std::string config_file = (fs::path(dir) / "config.json").string();
  const std::string config_text = detail::read_text_file(config_file);
  const detail::ReadConfig config = read_config(config_text, config_file);  // the one parse
  const StoredWeights weights = StoredWeights::open(dir);  // headers only: tensors are read into the model
  if (config.parameters >= 0) {
    const int64_t held = weights.floating_point_elements();
    const int64_t other = weights.other_elements();
    if (config.parameters > held && held + other >= config.parameters)  // "holds 0 weights" before
      throw ModelFileError(weights.file(), "holds its weights as integers (" + std::to_string(other) +
                                               " elements in integer tensors, " + std::to_string(held) +
                                               " in floating-point ones): a quantized model (int8, say), which this "
                                               "program cannot load or train; give the model in fp32, fp16 or bf16");
    if (config.parameters > held)
      throw ModelFileError(config_file, "describes a model of " + std::to_string(config.parameters) + " weights but " +
                                            weights.file() + " holds " + std::to_string(held) +
                                            ": the config and the weights disagree");
  }
  std::shared_ptr<TransformerBackbone> model = config.build();
  load_weights(*model, weights);
  model->eval();
  return model;
}

void save_transformer(const TransformerBackbone& model, const std::string& dir) {
  namespace fs = std::filesystem;
  if (has_lora(model))
    throw std::invalid_argument("save_transformer: the model carries LoRA adapters, which transformers' weights have no "
                                "place for: merge_lora first (a plain model), or save_lora_adapter (PEFT's directory)");
  files::write_file_atomic((fs::path(dir) / "config.json").string(), model.config_json());
  NamedTensors tensors;
  for (const auto& item : model.named_parameters()) tensors.emplace_back(item.key(), item.value());
  save_safetensors((fs::path(dir) / "model.safetensors").string(), tensors);
}

}  // namespace hf
}  // namespace gradcache
