#include <gradcache/hf/frozen_weights.h>

#include <gradcache/hf/linear.h>
#include <gradcache/hf/transformer.h>

#include <ATen/core/Tensor.h>
#include <c10/core/GradMode.h>
#include <torch/nn/modules/embedding.h>

#include <stdexcept>
#include <string>

namespace gradcache {
namespace hf {

int64_t hold_frozen_weights_in(TransformerBackbone& model, at::ScalarType type) {
  if (type != at::kBFloat16 && type != at::kHalf)
    throw std::invalid_argument(std::string("frozen weights can be held in bf16 or fp16, not ") + c10::toString(type));
  c10::NoGradGuard no_grad;
  int64_t converted = 0;
  auto hold = [&](at::Tensor& weight) {
    if (!weight.defined() || weight.requires_grad() || weight.scalar_type() == type) return;
    weight.set_data(weight.to(type));  // the same parameter (its name, its place in the module), narrower
    converted += weight.numel();
  };
  for (const auto& module : model.modules(/*include_self=*/false)) {
    if (auto* linear = module->as<LinearImpl>()) hold(linear->weight);
    if (auto* table = module->as<torch::nn::EmbeddingImpl>()) hold(table->weight);
  }
  return converted;
}

}  // namespace hf
}  // namespace gradcache
