#include "hf/layers/module_tree.h"

#include "hf/layers/norm.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/normalization.h>

namespace gradcache {
namespace hf {
namespace detail {

std::shared_ptr<torch::nn::Module> scope(torch::nn::Module& parent, const std::string& name) {
  return parent.register_module(name, std::make_shared<torch::nn::Module>());
}

Linear linear(torch::nn::Module& parent, const std::string& name, int64_t in, int64_t out, bool bias) {
  return parent.register_module(name, Linear(in, out, bias));
}

torch::nn::LayerNorm layer_norm(torch::nn::Module& parent, const std::string& name, int64_t size, double eps) {
  return parent.register_module(name, torch::nn::LayerNorm(torch::nn::LayerNormOptions({size}).eps(eps)));
}

void initialise_weights(torch::nn::Module& model, double std) {
  c10::NoGradGuard no_grad;
  // Without the model itself: a constructor calls this before a shared_ptr holds the model.
  for (const auto& module : model.modules(/*include_self=*/false)) {
    const bool normalises = module->as<NormImpl>() != nullptr || module->as<torch::nn::LayerNormImpl>() != nullptr;
    // Not the LoRA adapters (torch::nn::Linear inside a Linear): they are added after, initialised as PEFT does.
    const bool projects = module->as<LinearImpl>() != nullptr || module->as<torch::nn::EmbeddingImpl>() != nullptr;
    if (!normalises && !projects) continue;
    for (auto& item : module->named_parameters(/*recurse=*/false)) {
      if (item.key() == "bias") {
        item.value().zero_();
      } else if (normalises) {
        item.value().fill_(1.0);
      } else {
        item.value().normal_(0.0, std);
      }
    }
  }
}

at::Tensor widened(const at::Tensor& rows) {
  const bool narrow = rows.scalar_type() == at::kBFloat16 || rows.scalar_type() == at::kHalf;
  return narrow ? rows.to(at::kFloat) : rows;
}

at::Tensor maybe_dropout(const at::Tensor& x, double p, bool training) {
  return training && p > 0 ? at::dropout(x, p, /*train=*/true) : x;
}

}  // namespace detail
}  // namespace hf
}  // namespace gradcache
