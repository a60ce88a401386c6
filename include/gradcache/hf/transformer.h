// Transformer encoders of Hugging Face model directories, by model_type: what every
// architecture gives (TransformerBackbone), the registry that builds one from config.json, and
// loading and saving weights under the Hugging Face parameter names.
#pragma once

#include <gradcache/hf/model_file_error.h>
#include <gradcache/hf/safetensors.h>
#include <gradcache/hf/stored_weights.h>

#include <ATen/core/Tensor.h>
#include <ATen/core/Dict.h>
#include <ATen/core/ivalue.h>
#include <torch/nn/module.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace gradcache {
namespace hf {

/// What an encoder computes for a batch (transformers' BaseModelOutputWithPooling).
struct TransformerOutput {
  at::Tensor last_hidden_state;  ///< [B, T, hidden]
  at::Tensor pooler_output;      ///< [B, hidden]; undefined when not asked for or the model has no pooler
};

/// An encoder of a Hugging Face directory. Its named_parameters() are the names of the
/// checkpoint (those of transformers' model class), so loading and saving are name for name.
/// Random ops draw from LibTorch's default generators, so GradCache's generator replay
/// reproduces them exactly.
class TransformerBackbone : public torch::nn::Module {
 public:
  using torch::nn::Module::Module;

  /// input_ids [B, T] (int64 or int32), attention_mask [B, T] (bool or integer, nonzero = real
  /// token), token_type_ids [B, T] or undefined (all 0). `with_pooler` computes pooler_output.
  virtual TransformerOutput encode(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                   const at::Tensor& token_type_ids = {}, bool with_pooler = true) = 0;

  /// For gradcache::Model: batch {"input_ids", "attention_mask"[, "token_type_ids"]} ->
  /// {"last_hidden_state", "pooler_output" (if the model has a pooler)}; pick one with
  /// GradCacheOptions().get_rep_fn(hf::pooler_output), as the reference's example does.
  c10::Dict<std::string, at::Tensor> forward(const std::map<std::string, at::Tensor>& batch);

  /// "bert", ...
  virtual std::string model_type() const = 0;
  /// The config.json to save with the weights.
  virtual std::string config_json() const = 0;
  virtual int64_t hidden_size() const = 0;
  virtual int64_t vocab_size() const = 0;
  /// The most tokens one text may have: max_position_embeddings, less the positions RoBERTa's
  /// offset skips; for rotary models the length the config declares.
  virtual int64_t max_tokens() const = 0;
  /// The prefix under which task models of transformers hold this encoder ("bert." in
  /// BertForPreTraining); checkpoints with it load too.
  virtual std::string checkpoint_prefix() const = 0;
  /// The pooler (a layer after [CLS]) is optional: a checkpoint without its weights loads
  /// without it, and pooler_output is then undefined.
  virtual bool has_pooler() const { return false; }
  virtual void remove_pooler() {}
};

/// get_rep_fn for a TransformerBackbone used as a gradcache::Model: the pooler output, or the
/// last hidden state. Throw std::invalid_argument when the output does not hold it.
at::Tensor pooler_output(const c10::IValue& model_output);
at::Tensor last_hidden_state(const c10::IValue& model_output);

/// Builds an architecture from the text of its config.json (validated; ModelFileError naming
/// `config_file` otherwise), with freshly initialised weights.
using ArchitectureBuilder =
    std::function<std::shared_ptr<TransformerBackbone>(const std::string& config_text, const std::string& config_file)>;

/// How many weights (numbers) a checkpoint of this config.json must hold at least (optional
/// parts such as the pooler left out): load_transformer compares it with the weights file
/// before building, so that a config.json that disagrees with the weights, or a hostile one
/// asking for terabytes, is refused before anything is allocated.
using ParameterCounter = std::function<int64_t(const std::string& config_text, const std::string& config_file)>;

/// Adds (or replaces) the builder of `model_type` (and its counter, if any). "bert" is built in.
void register_architecture(const std::string& model_type, ArchitectureBuilder builder, ParameterCounter counter = nullptr);

/// Removes the builder of `model_type`; whether there was one. For a registration that must
/// not outlive its scope (a test's, a plugin's).
bool unregister_architecture(const std::string& model_type);

/// The model types that can be built, sorted.
std::vector<std::string> supported_model_types();

/// The architecture config.json's "model_type" names, built from it. ModelFileError naming
/// `config_file` when model_type is missing or not supported (the message lists what is).
std::shared_ptr<TransformerBackbone> build_transformer(const std::string& config_text, const std::string& config_file);

/// The weights (numbers) of the architecture config.json describes, parsing and validating it
/// without building anything (the counter load_transformer compares with the weights file).
/// ModelFileError naming `config_file` for a bad config, or an architecture registered without
/// a counter.
int64_t count_parameters(const std::string& config_text, const std::string& config_file);

/// Copies `checkpoint`'s tensors into `model`'s parameters, name for name (with or without the
/// checkpoint_prefix()), converting floating dtypes (F16/BF16 files load into fp32 parameters).
/// A parameter the checkpoint lacks, or a tensor whose shape disagrees with the config, is a
/// ModelFileError naming `file` and the tensor; the pooler is removed if the checkpoint has none.
/// Tensors the model does not use (task heads) are ignored, as transformers does.
void load_weights(TransformerBackbone& model, const NamedTensors& checkpoint, const std::string& file);

/// The same from a model directory's files, read one tensor at a time (StoredWeights): every
/// name, shape and dtype is checked before the first tensor is read.
void load_weights(TransformerBackbone& model, const StoredWeights& weights);

/// The weights of a model directory: model.safetensors; else the shards listed by
/// model.safetensors.index.json; else pytorch_model.bin (see read_pytorch_bin). `file_out` (if given) receives the file read (or the index).
NamedTensors read_weights(const std::string& dir, std::string* file_out = nullptr);

/// A pytorch_model.bin: a plain dict of tensors saved by torch.save in its zip format (the
/// default since PyTorch 1.6), or by torch::pickle_save. LibTorch's unpickler cannot read the
/// OrderedDict that model.state_dict() is (what transformers writes), nor the older non-zip
/// format: those are a ModelFileError naming `path` that says how to convert the file to
/// model.safetensors in Python.
NamedTensors read_pytorch_bin(const std::string& path);

/// config.json and the weights of `dir` (see read_weights): a ready encoder in eval mode. The
/// weight files' headers are read first, and a config.json asking for more weights than they hold
/// is refused before the model is built; then each tensor is read into its parameter, so the
/// load's peak memory is the model and one stored tensor (not the model and the whole file).
std::shared_ptr<TransformerBackbone> load_transformer(const std::string& dir);

/// Writes config.json and model.safetensors (fp32 as the parameters are, metadata format "pt")
/// into the existing directory `dir`, as transformers' save_pretrained does.
void save_transformer(const TransformerBackbone& model, const std::string& dir);

}  // namespace hf
}  // namespace gradcache
