// Recording and replaying the random generators a chunk's forward draws from (dropout).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <utility>
#include <vector>

namespace gradcache {

/// The states of the CPU generator and of the default generator of each given device.
/// Device-generic: CUDA (or any other accelerator) generators are captured through
/// at::globalContext().defaultGenerator(device).
class RngState {
 public:
  RngState() = default;

  /// Captures the CPU generator and the default generator of every device in `devices`
  /// (CPU entries and duplicates are ignored).
  static RngState capture(const std::vector<c10::Device>& devices = {});

  /// Puts every captured generator back into the captured state.
  void restore() const;

  bool empty() const { return states_.empty(); }
  /// The devices captured, CPU first.
  std::vector<c10::Device> devices() const;

 private:
  std::vector<std::pair<c10::Device, at::Tensor>> states_;
};

/// Restores on destruction the generator states it captured on construction
/// (like torch.random.fork_rng).
class RngStateGuard {
 public:
  explicit RngStateGuard(const std::vector<c10::Device>& devices = {}) : state_(RngState::capture(devices)) {}
  ~RngStateGuard() { state_.restore(); }
  RngStateGuard(const RngStateGuard&) = delete;
  RngStateGuard& operator=(const RngStateGuard&) = delete;

 private:
  RngState state_;
};

/// The distinct non-CPU devices among `tensors` (undefined tensors are skipped).
std::vector<c10::Device> devices_of(const std::vector<at::Tensor>& tensors);

}  // namespace gradcache
