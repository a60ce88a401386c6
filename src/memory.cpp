#include <gradcache/memory.h>

#include "detail/compat.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#ifdef GRADCACHE_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include <atomic>
#include <mutex>

namespace gradcache {
namespace {

std::atomic<int64_t> cpu_current{0}, cpu_peak{0};
c10::DeleterFnPtr inner_free = nullptr;  // the wrapped allocator's deleter (one tracker per process)

void count_allocation(int64_t bytes) {
  const int64_t now = cpu_current.fetch_add(bytes) + bytes;
  int64_t peak = cpu_peak.load();
  while (now > peak && !cpu_peak.compare_exchange_weak(peak, now)) {
  }
}

// Wraps the CPU allocator and counts each allocation's bytes until it is freed. The size is
// kept in a header in front of the block, so the data pointer stays its own context and
// raw_allocate()/raw_deleter() keep working (LibTorch uses them for some CPU buffers).
class TrackingAllocator final : public c10::Allocator {
 public:
  // A multiple of c10's 64-byte alignment, so the data after the header stays aligned.
  static constexpr size_t kHeader = 64;

  explicit TrackingAllocator(c10::Allocator* inner) : inner_(inner) {
    inner_free = inner->raw_deleter();
    TORCH_CHECK(inner_free != nullptr, "CpuMemoryTracker: the CPU allocator has no raw deleter to wrap");
  }

  GRADCACHE_ALLOCATOR_ALLOCATE(n) {
    c10::DataPtr block = inner_->allocate(n + kHeader);
    const c10::Device device = block.device();
    auto* base = static_cast<char*>(block.release_context());
    *reinterpret_cast<int64_t*>(base) = static_cast<int64_t>(n);
    count_allocation(static_cast<int64_t>(n));
    void* data = base + kHeader;
    return {data, data, &release, device};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
  GRADCACHE_ALLOCATOR_COPY_DATA

 private:
  static void release(void* data) {
    if (data == nullptr) return;
    auto* base = static_cast<char*>(data) - kHeader;
    cpu_current.fetch_sub(*reinterpret_cast<int64_t*>(base));
    inner_free(base);
  }
  c10::Allocator* inner_;
};

std::once_flag install_once;
std::atomic<bool> is_installed{false};

}  // namespace

void CpuMemoryTracker::install() {
  std::call_once(install_once, [] {
    static TrackingAllocator tracker(c10::GetCPUAllocator());
    c10::SetCPUAllocator(&tracker, /*priority=*/100);
    is_installed = true;
  });
}

bool CpuMemoryTracker::installed() { return is_installed; }

MemoryStats CpuMemoryTracker::stats() { return {cpu_current.load(), cpu_peak.load()}; }

void CpuMemoryTracker::reset_peak() { cpu_peak.store(cpu_current.load()); }

c10::optional<MemoryStats> memory_stats(const c10::Device& device) {
  if (device.is_cpu()) {
    if (!CpuMemoryTracker::installed()) return c10::nullopt;
    return CpuMemoryTracker::stats();
  }
#ifdef GRADCACHE_WITH_CUDA
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.has_index() ? device.index() : 0);
    const auto& bytes = stats.allocated_bytes[detail::kAggregateStat];
    return MemoryStats{bytes.current, bytes.peak};
  }
#endif
  return c10::nullopt;
}

void reset_peak_memory(const c10::Device& device) {
  if (device.is_cpu()) {
    if (CpuMemoryTracker::installed()) CpuMemoryTracker::reset_peak();
    return;
  }
#ifdef GRADCACHE_WITH_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.has_index() ? device.index() : 0);
#endif
}

}  // namespace gradcache
