#include <gradcache/functional.h>

#include "detail/state_guard.h"

#include <torch/csrc/autograd/autograd.h>
#include <torch/nn/module.h>
#include <torch/script.h>

namespace gradcache {
namespace functional {
namespace detail {

void CallState::add_input(const ModelInput& input) {
  for (auto& t : input.tensors()) tensors.push_back(std::move(t));
}

void CallState::add_module(const std::shared_ptr<torch::nn::Module>& module) {
  if (!module) return;
  for (auto& p : module->parameters()) tensors.push_back(std::move(p));
  for (auto& b : module->buffers()) buffers.push_back(std::move(b));
}

void CallState::add_module(const torch::jit::Module& module) {
  for (const auto& p : module.parameters()) tensors.push_back(p);
  for (const auto& b : module.buffers()) buffers.push_back(b);
}

void CallState::add_model(const Model& model) {
  for (auto& p : model.parameters()) tensors.push_back(std::move(p));
  for (auto& b : model.buffers()) buffers.push_back(std::move(b));
}

at::Tensor cat_rows(const std::vector<at::Tensor>& tensors) {
  TORCH_CHECK(!tensors.empty(), "cat_input_tensor: an empty list of representations");
  return tensors.size() == 1 ? tensors[0] : at::cat(tensors, 0);
}

}  // namespace detail

void Replay::run(const std::vector<at::Tensor>& reps) const {
  std::vector<at::Tensor> grads;
  for (size_t i = 0; i < reps.size(); ++i) {
    TORCH_CHECK(reps[i].defined() && reps[i].grad().defined(), "cached replay: representation ", i,
                " has no gradient; backpropagate the loss into the cached representations before calling the replay");
    grads.push_back(reps[i].grad());
  }
  std::vector<at::Tensor> outputs;
  {
    RngStateGuard generators_as_they_are(devices_);
    gradcache::detail::BufferGuard buffers_updated_once(buffers_);
    rng_state_.restore();
    outputs = forward_();
    TORCH_CHECK(outputs.size() == grads.size(), "cached replay: the function returned ", outputs.size(),
                " tensors but ", grads.size(), " representations were given");
    torch::autograd::backward(outputs, grads);
  }
}

}  // namespace functional
}  // namespace gradcache
