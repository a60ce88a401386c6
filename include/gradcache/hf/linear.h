// The linear layer of the Hugging Face architectures: nn.Linear under transformers' names
// ("weight", "bias"), which can carry a LoRA adapter as PEFT's lora.Linear does
// ("lora_A.weight" [r, in], "lora_B.weight" [out, r]):
//     y = x W^T + b + scaling * dropout(x) A^T B^T
// and whose frozen weight may be held in another floating type than the input (bf16 for a
// frozen base in fp32 training, hf/frozen_weights.h: the weight is converted for each product,
// and the graph keeps the held weight, not the converted copy).
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>

namespace gradcache {
namespace hf {

class LinearImpl : public torch::nn::Module {
 public:
  LinearImpl(int64_t in_features, int64_t out_features, bool bias = true);

  at::Tensor forward(const at::Tensor& x);

  /// Adds a LoRA adapter of rank `rank`: A initialised as PEFT does (Kaiming-uniform, a = sqrt(5),
  /// from the current generator), B zero, so that the layer computes what it did. `dropout`
  /// applies to the adapter's input in training mode only, drawn from the default generator (so
  /// GradCache replays it). Throws std::invalid_argument for a rank < 1 or a second adapter.
  void add_adapter(int64_t rank, double scaling, double dropout);
  bool has_adapter() const { return !lora_A_.is_empty(); }
  /// W += scaling B A, and the adapter removed: the layer computes what it did, as a plain linear.
  void merge_adapter();

  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }
  int64_t rank() const;
  double scaling() const { return scaling_; }
  double adapter_dropout() const { return dropout_; }
  /// The adapter's modules (empty holders without one).
  torch::nn::Linear lora_A() const { return lora_A_; }
  torch::nn::Linear lora_B() const { return lora_B_; }

  at::Tensor weight, bias;

 private:
  int64_t in_features_, out_features_;
  torch::nn::Linear lora_A_{nullptr}, lora_B_{nullptr};
  double scaling_ = 0.0, dropout_ = 0.0;
};
TORCH_MODULE(Linear);

}  // namespace hf
}  // namespace gradcache
