#include "hf/layers/feed_forward.h"

#include "hf/layers/module_tree.h"

#include <ATen/ATen.h>

#include <stdexcept>

namespace gradcache {
namespace hf {
namespace detail {

at::Tensor activate(const std::string& name, const at::Tensor& x) {
  if (name == "gelu") return at::gelu(x);
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast") return at::gelu(x, "tanh");
  if (name == "relu") return at::relu(x);
  if (name == "silu" || name == "swish") return at::silu(x);
  throw std::invalid_argument("activation \"" + name + "\" is not supported");
}

GatedFeedForwardImpl::GatedFeedForwardImpl(int64_t hidden, int64_t intermediate, std::string activation, bool bias)
    : activation_(std::move(activation)) {
  gate_ = linear(*this, "gate_proj", hidden, intermediate, bias);
  up_ = linear(*this, "up_proj", hidden, intermediate, bias);
  down_ = linear(*this, "down_proj", intermediate, hidden, bias);
}

at::Tensor GatedFeedForwardImpl::forward(const at::Tensor& x) { return down_(activate(activation_, gate_(x)) * up_(x)); }

}  // namespace detail
}  // namespace hf
}  // namespace gradcache
