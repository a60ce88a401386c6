// The one place where LibTorch versions differ (1.13 here; 2.x for users, often with CUDA).
#pragma once

#include <torch/csrc/api/include/torch/version.h>

#define GRADCACHE_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

// c10::Allocator gained a pure virtual copy_data() in LibTorch 2.3.
#if GRADCACHE_TORCH_AT_LEAST(2, 3)
#define GRADCACHE_ALLOCATOR_COPY_DATA                                              \
  void copy_data(void* dest, const void* src, std::size_t count) const override { \
    default_copy_data(dest, src, count);                                          \
  }
#else
#define GRADCACHE_ALLOCATOR_COPY_DATA
#endif

// c10d: process groups became "backends" of a dispatching ProcessGroup in LibTorch 2.0.
#if GRADCACHE_TORCH_AT_LEAST(2, 0)
#define GRADCACHE_C10D_BACKEND c10d::Backend
#else
#define GRADCACHE_C10D_BACKEND c10d::ProcessGroup
#endif
