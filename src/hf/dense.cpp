#include <gradcache/hf/dense.h>

#include <gradcache/hf/safetensors.h>

#include "files/atomic_file.h"
#include "hf/model_json.h"

#include <torch/nn/functional/activation.h>

#include <array>
#include <filesystem>
#include <utility>

namespace gradcache {
namespace hf {
namespace {

namespace fs = std::filesystem;
using detail::Json;

constexpr int64_t kMaxFeatures = 1 << 20;

// As sentence-transformers writes them: the full class path of the torch module.
constexpr std::array<std::pair<DenseActivation, const char*>, 6> kActivations = {{
    {DenseActivation::Identity, "torch.nn.modules.linear.Identity"},
    {DenseActivation::Tanh, "torch.nn.modules.activation.Tanh"},
    {DenseActivation::ReLU, "torch.nn.modules.activation.ReLU"},
    {DenseActivation::GELU, "torch.nn.modules.activation.GELU"},
    {DenseActivation::Sigmoid, "torch.nn.modules.activation.Sigmoid"},
    {DenseActivation::SiLU, "torch.nn.modules.activation.SiLU"},
}};

// "torch.nn.Tanh" and "torch.nn.modules.activation.Tanh" name the same class.
std::string class_name(const std::string& path) { return path.substr(path.rfind('.') + 1); }

}  // namespace

DenseImpl::DenseImpl(DenseOptions options) : options_(std::move(options)) {
  TORCH_CHECK(options_.in_features() >= 1 && options_.out_features() >= 1, "Dense: sizes must be positive, got ",
              options_.in_features(), " -> ", options_.out_features());
  linear_ = register_module(
      "linear", torch::nn::Linear(torch::nn::LinearOptions(options_.in_features(), options_.out_features()).bias(options_.bias())));
  if (options_.use_residual() && options_.in_features() != options_.out_features()) {
    residual_ = register_module(
        "residual",
        torch::nn::Linear(torch::nn::LinearOptions(options_.in_features(), options_.out_features()).bias(false)));
  }
}

at::Tensor DenseImpl::forward(const at::Tensor& x) {
  at::Tensor y = linear_(x);
  switch (options_.activation()) {
    case DenseActivation::Identity: break;
    case DenseActivation::Tanh: y = y.tanh(); break;
    case DenseActivation::ReLU: y = y.relu(); break;
    case DenseActivation::GELU: y = at::gelu(y); break;
    case DenseActivation::Sigmoid: y = y.sigmoid(); break;
    case DenseActivation::SiLU: y = at::silu(y); break;
  }
  if (!options_.use_residual()) return y;
  return y + (residual_ ? residual_(x) : x);
}

DenseOptions parse_dense_config(const std::string& text, const std::string& file) {
  const Json config = detail::parse_json(text, file);
  detail::require_object(config, file);
  DenseOptions options(detail::int_field(config, "in_features", 0, 1, kMaxFeatures, file),
                       detail::int_field(config, "out_features", 0, 1, kMaxFeatures, file));
  if (options.in_features() == 0 || options.out_features() == 0)
    throw ModelFileError(file, "needs \"in_features\" and \"out_features\" (the sizes of the linear layer)");
  options.bias(detail::bool_field(config, "bias", true, file));
  options.use_residual(detail::bool_field(config, "use_residual", false, file));
  const std::string activation = detail::string_field(config, "activation_function", kActivations[1].second, file);
  bool known = false;
  std::string names;
  for (const auto& [kind, path] : kActivations) {
    names += (names.empty() ? "" : ", ") + class_name(path);
    if (activation.rfind("torch.", 0) == 0 && class_name(activation) == class_name(path)) {
      options.activation(kind);
      known = true;
    }
  }
  if (!known)
    throw ModelFileError(file, "activation_function " + detail::quoted(activation) + " is not supported (supported: torch.nn's " +
                                   names + ")");
  for (const char* key : {"module_input_name", "module_output_name"}) {
    const std::string name = detail::string_field(config, key, "sentence_embedding", file);
    if (name != "sentence_embedding")
      throw ModelFileError(file, std::string("\"") + key + "\" is " + detail::quoted(name) +
                                     "; only a Dense module on the sentence embedding is supported");
  }
  return options;
}

std::string dense_config_json(const DenseOptions& options) {
  std::string activation;
  for (const auto& [kind, path] : kActivations)
    if (kind == options.activation()) activation = path;
  Json config = {{"in_features", options.in_features()},
                 {"out_features", options.out_features()},
                 {"bias", options.bias()},
                 {"activation_function", activation}};
  if (options.use_residual()) config["use_residual"] = true;  // omitted at its default, as sentence-transformers
  return config.dump(2) + "\n";
}

Dense load_dense(const std::string& dir) {
  const std::string config_file = (fs::path(dir) / "config.json").string();
  Dense dense(parse_dense_config(detail::read_text_file(config_file), config_file));
  const std::string weights_file = (fs::path(dir) / "model.safetensors").string();
  if (!fs::exists(weights_file)) {
    const bool pickled = fs::exists(fs::path(dir) / "pytorch_model.bin");
    throw ModelFileError(weights_file, pickled ? "missing; the module has only pytorch_model.bin, which is not read here: "
                                                 "save the model again with sentence-transformers (safetensors by default)"
                                               : "missing: the Dense module has no weights");
  }
  const SafetensorsContents weights = read_safetensors(weights_file);
  torch::NoGradGuard no_grad;
  for (auto& item : dense->named_parameters()) {
    const at::Tensor* stored = weights.find(item.key());
    if (stored == nullptr) throw ModelFileError(weights_file, "has no tensor " + detail::quoted(item.key()));
    if (stored->sizes() != item.value().sizes())
      throw ModelFileError(weights_file, detail::quoted(item.key()) + " has shape " + c10::str(stored->sizes()) +
                                             " where config.json asks for " + c10::str(item.value().sizes()));
    item.value().copy_(*stored);
  }
  if (weights.tensors.size() != dense->named_parameters().size())
    throw ModelFileError(weights_file, "holds " + std::to_string(weights.tensors.size()) + " tensors where the module has " +
                                           std::to_string(dense->named_parameters().size()) + " (config.json disagrees with the weights)");
  return dense;
}

void save_dense(const Dense& dense, const std::string& dir) {
  files::write_file_atomic((fs::path(dir) / "config.json").string(), dense_config_json(dense->options()));
  NamedTensors tensors;
  for (const auto& item : dense->named_parameters()) tensors.emplace_back(item.key(), item.value().detach().to(at::kCPU));
  save_safetensors((fs::path(dir) / "model.safetensors").string(), tensors);
}

}  // namespace hf
}  // namespace gradcache
