// Measuring tensor memory: exact counts on CPU (a tracking allocator) and on CUDA (the
// caching allocator's statistics). GradCache uses them to keep chunks within a budget.
#pragma once

#include <c10/core/Device.h>
#include <c10/util/Optional.h>

#include <cstdint>

namespace gradcache {

/// Bytes of tensor memory in use on a device, and the most in use since the last reset.
struct MemoryStats {
  int64_t current = 0;
  int64_t peak = 0;
};

/// Counts the bytes of every CPU tensor allocated after install(): it wraps LibTorch's CPU
/// allocator (c10::SetCPUAllocator). Installing it is a process-wide choice the program
/// makes (the library never installs it by itself); it costs two atomic updates per
/// allocation. Tensors allocated before install() are not counted.
class CpuMemoryTracker {
 public:
  /// Installs the tracker (idempotent, thread-safe).
  static void install();
  static bool installed();
  static MemoryStats stats();
  /// Sets the peak to the current value.
  static void reset_peak();
};

/// Tensor memory on `device`: CPU through CpuMemoryTracker (nullopt if it is not installed),
/// CUDA through the caching allocator (nullopt when LibTorch was built without CUDA).
c10::optional<MemoryStats> memory_stats(const c10::Device& device);

/// Resets the peak of `device` to its current value (no-op where memory_stats is nullopt).
void reset_peak_memory(const c10::Device& device);

}  // namespace gradcache
