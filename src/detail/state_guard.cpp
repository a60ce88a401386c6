#include "detail/state_guard.h"

#include <c10/core/GradMode.h>

#include <algorithm>

namespace gradcache {
namespace detail {

BufferGuard::BufferGuard(const std::vector<at::Tensor>& buffers) {
  for (const auto& b : buffers) {
    if (!b.defined()) continue;
    const bool seen = std::any_of(buffers_.begin(), buffers_.end(), [&](const at::Tensor& x) { return x.is_same(b); });
    if (seen) continue;
    buffers_.push_back(b);
    saved_.push_back(b.clone());
  }
}

BufferGuard::~BufferGuard() {
  if (!active_) return;
  c10::NoGradGuard no_grad;
  for (size_t i = 0; i < buffers_.size(); ++i) buffers_[i].copy_(saved_[i]);
}

}  // namespace detail
}  // namespace gradcache
