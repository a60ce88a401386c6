#include <gradcache/precision.h>

#include "detail/compat.h"

#include <gradcache/model_call.h>  // call_model_in_precision, declared there
#include <gradcache/rng_state.h>   // devices_of

#include <ATen/ATen.h>
#include <c10/util/Exception.h>


namespace gradcache {

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

c10::IValue call_model_in_precision(const Model& model, const ModelInput& chunk, Precision precision) {
  auto devices = devices_of(model.parameters());
  for (const auto& d : devices_of(chunk.tensors())) devices.push_back(d);
  return call_in_precision(precision, devices, [&] { return model(chunk); });
}

}  // namespace gradcache
