// Mixed precision: autocast scoped to one model call. An extension of the cache step, which
// names a precision (precision_kind.h) and calls a model in it through call_model_in_precision.
#pragma once

#include <gradcache/precision_kind.h>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <vector>

namespace gradcache {

/// The dtype autocast computes in: kFloat, kBFloat16 or kHalf.
c10::ScalarType scalar_type(Precision precision);
/// Whether this LibTorch can autocast to `precision` on `device_type` (fp32 always can).
bool autocast_supported(Precision precision, c10::DeviceType device_type);

/// Enables autocast to `precision` for `device`'s type while it lives (nothing for fp32).
/// On exit it restores the previous autocast state and clears autocast's cast cache (as
/// leaving Python's autocast does), so that no weight cast made in one call is reused by
/// another: not one made under no-grad in step 1 by the replay, and not one whose graph a
/// chunk's backward has freed by the next chunk. Scope it to one model call.
/// Throws (naming the device and the LibTorch version) where autocast cannot do it, e.g.
/// fp16 on CPU before LibTorch 2.4.
class AutocastScope {
 public:
  AutocastScope(Precision precision, c10::Device device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false;
  c10::DeviceType device_type_ = c10::kCPU;
  bool was_enabled_ = false;
  c10::ScalarType previous_dtype_ = c10::kFloat;
};

/// The device whose autocast applies to a call computing on tensors of `devices`: the first
/// accelerator among them (CPU tensors there are indices and such), else CPU.
c10::Device autocast_device(const std::vector<c10::Device>& devices);

/// Runs `fn()` under an autocast scope for `precision` on the device the call computes on:
/// the first accelerator among `devices`, else CPU (nothing is enabled for fp32).
template <class Fn>
decltype(auto) call_in_precision(Precision precision, const std::vector<c10::Device>& devices, Fn&& fn) {
  AutocastScope autocast(precision, autocast_device(devices));
  return fn();
}

}  // namespace gradcache
