// Scoped restoration of module buffers and random generators.
#pragma once

#include <gradcache/rng_state.h>

#include <ATen/core/Tensor.h>

#include <vector>

namespace gradcache {
namespace detail {

/// Saves the values of `buffers` (e.g. BatchNorm running statistics) and writes them back on
/// destruction, unless dismissed. Buffers shared by several modules are saved once.
class BufferGuard {
 public:
  explicit BufferGuard(const std::vector<at::Tensor>& buffers);
  ~BufferGuard();
  BufferGuard(const BufferGuard&) = delete;
  BufferGuard& operator=(const BufferGuard&) = delete;
  void dismiss() { active_ = false; }

 private:
  std::vector<at::Tensor> buffers_, saved_;
  bool active_ = true;
};

/// Puts generators and buffers back as they were at construction, unless committed:
/// a step that fails before touching parameter gradients changes nothing.
class Rollback {
 public:
  Rollback(const std::vector<c10::Device>& devices, const std::vector<at::Tensor>& buffers)
      : rng_(RngState::capture(devices)), buffers_(buffers) {}
  ~Rollback() {
    if (active_) rng_.restore();
  }
  Rollback(const Rollback&) = delete;
  Rollback& operator=(const Rollback&) = delete;
  void commit() {
    active_ = false;
    buffers_.dismiss();
  }

 private:
  RngState rng_;
  BufferGuard buffers_;
  bool active_ = true;
};

}  // namespace detail
}  // namespace gradcache
