// Mixed precision: the precision models run in, and autocast scoped to one model call.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <string>
#include <vector>

namespace gradcache {

/// The precision the models compute in (docs/design.md §2, "Autocast"). The loss, the
/// representations it sees and the gradient cache are always fp32.
/// - fp32: no autocast (default).
/// - bf16: autocast to bfloat16; on CPU and CUDA. No loss scaling needed (fp32's exponent range).
/// - fp16: autocast to float16; on CUDA (on CPU with LibTorch 2.4 or later). Use a GradScaler:
///   small gradients underflow in fp16 otherwise.
enum class Precision { fp32, bf16, fp16 };

/// "fp32", "bf16" or "fp16" (also "float32", "bfloat16", "float16"); throws otherwise.
Precision parse_precision(const std::string& name);
/// "fp32", "bf16" or "fp16".
std::string to_string(Precision precision);
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

/// `t` in fp32 if it is bf16 or fp16 (differentiably), otherwise `t` itself. What the loss sees.
at::Tensor to_full_precision(const at::Tensor& t);

}  // namespace gradcache
