// sentence-transformers' Dense module: a linear layer and an activation after pooling
// (EmbeddingGemma's 2_Dense and 3_Dense, the projections of SGPT-era and LaBSE models), read
// from and written to its directory (config.json + model.safetensors).
#pragma once

#include <gradcache/hf/model_file_error.h>

#include <ATen/core/Tensor.h>
#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <string>

namespace gradcache {
namespace hf {

/// The activations a Dense module's config may name (torch.nn classes without parameters).
enum class DenseActivation { Identity, Tanh, ReLU, GELU, Sigmoid, SiLU };

struct DenseOptions {
  DenseOptions(int64_t in_features, int64_t out_features) : in_features_(in_features), out_features_(out_features) {}
  TORCH_ARG(int64_t, in_features);
  TORCH_ARG(int64_t, out_features);
  TORCH_ARG(bool, bias) = true;
  /// sentence-transformers' default is Tanh.
  TORCH_ARG(DenseActivation, activation) = DenseActivation::Tanh;
  /// Adds the input (projected by a bias-free "residual" linear when the sizes differ).
  TORCH_ARG(bool, use_residual) = false;
};

/// activation(linear(x)) [+ x or residual(x)], with the parameter names of sentence-transformers
/// ("linear.weight", "linear.bias", "residual.weight").
class DenseImpl : public torch::nn::Module {
 public:
  explicit DenseImpl(DenseOptions options);
  at::Tensor forward(const at::Tensor& x);
  const DenseOptions& options() const { return options_; }

 private:
  DenseOptions options_;
  torch::nn::Linear linear_{nullptr}, residual_{nullptr};
};
TORCH_MODULE(Dense);

/// A Dense module's config.json. Refuses, naming the file: sizes outside 1 .. 2^20, an
/// activation other than those above (its torch class path is given, as sentence-transformers
/// writes it), and inputs or outputs other than the sentence embedding.
DenseOptions parse_dense_config(const std::string& text, const std::string& file);
/// The config.json that parse_dense_config reads back and sentence-transformers loads.
std::string dense_config_json(const DenseOptions& options);

/// Loads `dir`'s Dense module: config.json, then model.safetensors into a new module, every
/// weight present with its shape. ModelFileError naming the file otherwise (a
/// pytorch_model.bin alone is refused with how to convert it).
Dense load_dense(const std::string& dir);
/// Writes config.json and model.safetensors into `dir` (which must exist).
void save_dense(const Dense& dense, const std::string& dir);

}  // namespace hf
}  // namespace gradcache
