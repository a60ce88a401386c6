#include <gradcache/hf/linear.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/nn/init.h>

#include <cmath>
#include <stdexcept>
#include <string>

namespace gradcache {
namespace hf {
namespace {

// x W^T for a frozen W held in a narrower type than x (a bf16 base): W is converted for the
// product, and again in the backward, so that the graph keeps the held W (no copy: it is the
// parameter) rather than a converted copy per layer, which would bring the full-width base back
// for the length of every chunk's backward. W gets no gradient (frozen); x gets grad_y W.
struct FrozenWeightProduct : torch::autograd::Function<FrozenWeightProduct> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, const at::Tensor& held) {
    ctx->save_for_backward({held});
    return at::linear(x, held.to(x.scalar_type()));
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const at::Tensor held = ctx->get_saved_variables()[0];
    return {at::matmul(grads[0], held.to(grads[0].scalar_type())), at::Tensor()};
  }
};

}  // namespace

LinearImpl::LinearImpl(int64_t in_features, int64_t out_features, bool with_bias)
    : in_features_(in_features), out_features_(out_features) {
  // Initialised as nn.Linear is; the architectures then apply transformers' _init_weights
  // (detail::initialise_weights), and a checkpoint replaces both.
  weight = register_parameter("weight", at::empty({out_features, in_features}));
  torch::nn::init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (with_bias) {
    const double bound = in_features > 0 ? 1.0 / std::sqrt(static_cast<double>(in_features)) : 0.0;
    bias = register_parameter("bias", at::empty({out_features}));
    torch::nn::init::uniform_(bias, -bound, bound);
  }
}

at::Tensor LinearImpl::forward(const at::Tensor& x) {
  // A frozen weight held narrower than the input (hf/frozen_weights.h); otherwise as nn.Linear
  // (under autocast, at::linear converts what it must).
  const bool held_narrower = !weight.requires_grad() && weight.scalar_type() != x.scalar_type() &&
                             (weight.scalar_type() == at::kBFloat16 || weight.scalar_type() == at::kHalf);
  at::Tensor y = held_narrower ? FrozenWeightProduct::apply(x, weight) : at::linear(x, weight, bias);
  if (held_narrower && bias.defined()) y = y + bias.to(y.scalar_type());
  if (!has_adapter()) return y;
  // PEFT's order: result + lora_B(lora_A(dropout(x))) * scaling.
  const at::Tensor h = is_training() && dropout_ > 0 ? at::dropout(x, dropout_, /*train=*/true) : x;
  return y + lora_B_(lora_A_(h)) * scaling_;
}

void LinearImpl::add_adapter(int64_t rank, double scaling, double dropout) {
  if (rank < 1) throw std::invalid_argument("a LoRA rank must be at least 1, not " + std::to_string(rank));
  if (has_adapter()) throw std::invalid_argument("this linear layer has a LoRA adapter already");
  if (!(dropout >= 0.0 && dropout < 1.0))
    throw std::invalid_argument("LoRA dropout must be in [0, 1), not " + std::to_string(dropout));
  lora_A_ = register_module("lora_A", torch::nn::Linear(torch::nn::LinearOptions(in_features_, rank).bias(false)));
  lora_B_ = register_module("lora_B", torch::nn::Linear(torch::nn::LinearOptions(rank, out_features_).bias(false)));
  c10::NoGradGuard no_grad;
  torch::nn::init::kaiming_uniform_(lora_A_->weight, std::sqrt(5.0));
  lora_B_->weight.zero_();
  lora_A_->to(weight.device());
  lora_B_->to(weight.device());
  scaling_ = scaling;
  dropout_ = dropout;
}

void LinearImpl::merge_adapter() {
  if (!has_adapter()) return;
  {
    c10::NoGradGuard no_grad;
    const at::Tensor delta = at::matmul(lora_B_->weight, lora_A_->weight) * scaling_;
    weight.add_(delta.to(weight.scalar_type()));
  }
  unregister_module("lora_A");
  unregister_module("lora_B");
  lora_A_ = torch::nn::Linear(nullptr);
  lora_B_ = torch::nn::Linear(nullptr);
  scaling_ = dropout_ = 0.0;
}

int64_t LinearImpl::rank() const { return has_adapter() ? lora_A_->weight.size(0) : 0; }

}  // namespace hf
}  // namespace gradcache
