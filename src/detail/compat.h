// The one place where LibTorch versions differ. Built and tested against 2.15 (the torch wheel of
// requirements.txt, the default build) and Debian's 1.13 (scripts/test_libtorch113.sh); LibTorch
// 2.x raises its users to C++20 (TorchConfig.cmake), and the sources compile as C++17 and C++20.
#pragma once

#include <torch/csrc/api/include/torch/version.h>

#define GRADCACHE_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

// c10::Allocator gained a pure virtual copy_data() in LibTorch 2.3, and allocate() lost its
// const in the same rework: GRADCACHE_ALLOCATOR_ALLOCATE is the signature to override.
#if GRADCACHE_TORCH_AT_LEAST(2, 3)
#define GRADCACHE_ALLOCATOR_COPY_DATA                                              \
  void copy_data(void* dest, const void* src, std::size_t count) const override { \
    default_copy_data(dest, src, count);                                          \
  }
#define GRADCACHE_ALLOCATOR_ALLOCATE(n) c10::DataPtr allocate(size_t n) override
#else
#define GRADCACHE_ALLOCATOR_COPY_DATA
#define GRADCACHE_ALLOCATOR_ALLOCATE(n) c10::DataPtr allocate(size_t n) const override
#endif

// Fused scaled-dot-product attention (at::scaled_dot_product_attention, with its flash and
// memory-efficient kernels) arrived in LibTorch 2.0; before it, gradcache::hf computes attention
// from its definition (src/hf/attention.cpp). Both draw attention dropout from the default
// generator of the device.
#define GRADCACHE_HAS_SDPA GRADCACHE_TORCH_AT_LEAST(2, 0)

// c10d: process groups became "backends" of a dispatching ProcessGroup in LibTorch 2.0.
#if GRADCACHE_TORCH_AT_LEAST(2, 0)
#define GRADCACHE_C10D_BACKEND c10d::Backend
#else
#define GRADCACHE_C10D_BACKEND c10d::ProcessGroup
#endif

// Autocast: LibTorch 2.4 replaced the per-device functions (set_cpu_enabled,
// set_autocast_gpu_dtype, ...) by ones taking the device type. Only CPU and CUDA are used.
#include <ATen/autocast_mode.h>

namespace gradcache {
namespace detail {

// CUDA allocator statistics: the StatType enum moved from c10::cuda::CUDACachingAllocator to
// c10::CachingAllocator during 2.x; its AGGREGATE entry (all pools) is index 0 in every version.
constexpr size_t kAggregateStat = 0;

// fp16 autocast on CPU arrived with the device-generic API; 1.13 supports only bf16 there.
constexpr bool kCpuAutocastHalf = GRADCACHE_TORCH_AT_LEAST(2, 4);

#if GRADCACHE_TORCH_AT_LEAST(2, 4)
inline bool autocast_enabled(c10::DeviceType type) { return at::autocast::is_autocast_enabled(type); }
inline void set_autocast_enabled(c10::DeviceType type, bool on) { at::autocast::set_autocast_enabled(type, on); }
inline c10::ScalarType autocast_dtype(c10::DeviceType type) { return at::autocast::get_autocast_dtype(type); }
inline void set_autocast_dtype(c10::DeviceType type, c10::ScalarType dtype) {
  at::autocast::set_autocast_dtype(type, dtype);
}
#else
inline bool autocast_enabled(c10::DeviceType type) {
  return type == c10::kCUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
}
inline void set_autocast_enabled(c10::DeviceType type, bool on) {
  if (type == c10::kCUDA) {
    at::autocast::set_enabled(on);
  } else {
    at::autocast::set_cpu_enabled(on);
  }
}
inline c10::ScalarType autocast_dtype(c10::DeviceType type) {
  return type == c10::kCUDA ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
}
inline void set_autocast_dtype(c10::DeviceType type, c10::ScalarType dtype) {
  if (type == c10::kCUDA) {
    at::autocast::set_autocast_gpu_dtype(dtype);
  } else {
    at::autocast::set_autocast_cpu_dtype(dtype);
  }
}
#endif

}  // namespace detail
}  // namespace gradcache
