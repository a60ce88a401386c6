#include <gradcache/precision.h>

#include "detail/compat.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cctype>

namespace gradcache {

Precision parse_precision(const std::string& name) {
  std::string n = name;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (n == "fp32" || n == "float32" || n == "float") return Precision::fp32;
  if (n == "bf16" || n == "bfloat16") return Precision::bf16;
  if (n == "fp16" || n == "float16" || n == "half") return Precision::fp16;
  TORCH_CHECK(false, "precision must be fp32, bf16 or fp16, got '", name, "'");
}

std::string to_string(Precision precision) {
  switch (precision) {
    case Precision::fp32:
      return "fp32";
    case Precision::bf16:
      return "bf16";
    case Precision::fp16:
      return "fp16";
  }
  return "?";
}

c10::ScalarType scalar_type(Precision precision) {
  switch (precision) {
    case Precision::bf16:
      return c10::kBFloat16;
    case Precision::fp16:
      return c10::kHalf;
    case Precision::fp32:
      break;
  }
  return c10::kFloat;
}

bool autocast_supported(Precision precision, c10::DeviceType device_type) {
  if (precision == Precision::fp32) return true;
  if (device_type == c10::kCUDA) return true;
  if (device_type == c10::kCPU) return precision == Precision::bf16 || detail::kCpuAutocastHalf;
  return false;
}

AutocastScope::AutocastScope(Precision precision, c10::Device device) : device_type_(device.type()) {
  if (precision == Precision::fp32) return;
  TORCH_CHECK(device_type_ == c10::kCPU || device_type_ == c10::kCUDA, "AutocastScope: ", to_string(precision),
              " autocast on ", device, " is not supported by gradcache (CPU and CUDA are); use fp32");
  TORCH_CHECK(autocast_supported(precision, device_type_), "AutocastScope: ", to_string(precision),
              " autocast on ", device, " needs LibTorch 2.4 or later (this is ", TORCH_VERSION_MAJOR, ".",
              TORCH_VERSION_MINOR, ", whose CPU autocast supports only bf16); use bf16 on CPU, or fp16 on CUDA");
  was_enabled_ = detail::autocast_enabled(device_type_);
  previous_dtype_ = detail::autocast_dtype(device_type_);
  detail::set_autocast_dtype(device_type_, scalar_type(precision));
  detail::set_autocast_enabled(device_type_, true);
  at::autocast::increment_nesting();
  active_ = true;
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  at::autocast::decrement_nesting();
  // Always, not only at nesting level 0 (inside a caller's own autocast too): every model
  // call casts the weights afresh, so no cast, nor its graph, is shared between calls.
  at::autocast::clear_cache();
  detail::set_autocast_enabled(device_type_, was_enabled_);
  detail::set_autocast_dtype(device_type_, previous_dtype_);
}

c10::Device autocast_device(const std::vector<c10::Device>& devices) {
  for (const auto& d : devices) {
    if (!d.is_cpu()) return d;
  }
  return c10::Device(c10::kCPU);
}

at::Tensor to_full_precision(const at::Tensor& t) {
  if (t.defined() && (t.scalar_type() == c10::kBFloat16 || t.scalar_type() == c10::kHalf)) return t.to(c10::kFloat);
  return t;
}

}  // namespace gradcache
