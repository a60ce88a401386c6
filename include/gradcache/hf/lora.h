// LoRA adapters on a Hugging Face encoder, as PEFT makes, saves and loads them: adapters on the
// linear layers PEFT's target_modules names (a module is a target when its name is one of them
// or ends with "." and one), y = W x + b + (alpha / r) B A dropout(x), and the adapter directory
// PEFT writes (adapter_config.json, adapter_model.safetensors with names
// "base_model.model.<module>.lora_A.weight"), so that peft.PeftModel.from_pretrained loads ours
// and we load PEFT's. tests/hf/test_architectures.cpp compares both ways on every architecture.
#pragma once

#include <gradcache/hf/safetensors.h>

#include <torch/arg.h>

#include <cstdint>
#include <string>
#include <vector>

namespace torch {
namespace nn {
class Module;
}
}  // namespace torch

namespace gradcache {
namespace hf {

class TransformerBackbone;

struct LoraOptions {
  explicit LoraOptions(int64_t rank = 8) : rank_(rank), alpha_(static_cast<double>(rank)) {}
  /// r: the adapters' rank.
  TORCH_ARG(int64_t, rank);
  /// lora_alpha: the update is scaled by alpha / rank (PEFT's defaults: r = alpha = 8, scaling 1).
  TORCH_ARG(double, alpha);
  /// Dropout on each adapter's input in training mode (PEFT's lora_dropout).
  TORCH_ARG(double, dropout) = 0.0;
  /// target_modules; empty: default_lora_targets of the model's type.
  TORCH_ARG(std::vector<std::string>, targets);
  /// use_rslora: scaled by alpha / sqrt(rank) instead.
  TORCH_ARG(bool, rslora) = false;

 public:
  double scaling() const;
};

/// The targets of `model_type` when none are given, as Tevatron's and sentence-transformers'
/// recipes set them (PEFT's own defaults adapt only the query and value projections):
/// q/k/v/o/gate/up/down projections for the decoders (llama, mistral, qwen2, qwen3), every
/// linear layer of BLOOM's blocks, query/key/value/dense for BERT, RoBERTa and XLM-RoBERTa,
/// q/k/v/o/dense for MPNet, Wqkv/Wo/Wi for ModernBERT. Empty for another type.
std::vector<std::string> default_lora_targets(const std::string& model_type);

/// PEFT's rule for a list of target_modules: `module` is one of `targets` or ends with "." + one.
bool is_lora_target(const std::string& module, const std::vector<std::string>& targets);

/// Adds an adapter (options.rank, scaling, dropout) to every target linear layer of `model`
/// (their A from the current generator, B zero: the model computes what it did). Returns the
/// options with the targets resolved. Throws std::invalid_argument for a bad rank, alpha or
/// dropout, a model that has adapters already, no default targets for its type, or targets
/// that match no linear layer (the message lists the names there are).
LoraOptions add_lora(TransformerBackbone& model, LoraOptions options);

/// Whether any linear layer of `module` carries an adapter.
bool has_lora(const torch::nn::Module& module);

/// How many numbers the adapters of `module` hold.
int64_t lora_numbers(const torch::nn::Module& module);

/// W += scaling B A in every adapted layer, the adapters removed: a plain model that computes
/// what the adapted one did (PEFT's merge_and_unload).
void merge_lora(torch::nn::Module& module);

/// An adapter_config.json's text (`file` names it in errors): rank, alpha, dropout, targets,
/// use_rslora. ModelFileError naming the file for what is missing or malformed, and for what
/// PEFT supports and this does not (DoRA, a bias, fan_in_fan_out, rank or alpha patterns,
/// modules_to_save, a regex or layer selection of targets, a peft_type other than LORA).
LoraOptions parse_lora_config(const std::string& text, const std::string& file);
/// parse_lora_config of `dir`/adapter_config.json.
LoraOptions read_lora_config(const std::string& dir);
/// The adapter_config.json PeftModel.save_pretrained writes for `options` (its fields of a plain
/// LoRA; PEFT gives the others their defaults when it reads the file back).
std::string lora_config_json(const LoraOptions& options, const std::string& base_model);

/// Loads the adapter directory `dir` onto `model` (which has none): adapters as its config says,
/// then its weights, every one checked (name, shape, floating type, none missing, none left
/// over). Returns the options. ModelFileError naming the file otherwise.
LoraOptions load_lora_adapter(TransformerBackbone& model, const std::string& dir);

/// The adapters' tensors under PEFT's saved names ("base_model.model.<module>.lora_A.weight").
NamedTensors lora_tensors(const torch::nn::Module& module);

/// Writes adapter_config.json and adapter_model.safetensors (fp32) of `model`'s adapters into
/// the existing directory `dir`, as PeftModel.save_pretrained does; `base_model` is recorded as
/// base_model_name_or_path. Throws std::invalid_argument when the model has no adapter.
void save_lora_adapter(const TransformerBackbone& model, const LoraOptions& options, const std::string& dir,
                       const std::string& base_model);

}  // namespace hf
}  // namespace gradcache
