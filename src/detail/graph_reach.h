// Which leaves a tensor's autograd graph reaches, without running it.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace gradcache {
namespace detail {

/// Whether the graph of `loss` reaches each leaf, found before any backward runs so that an
/// unused representation is reported without touching any gradient.
std::vector<bool> leaves_reached(const at::Tensor& loss, const std::vector<at::Tensor>& leaves);

}  // namespace detail
}  // namespace gradcache
