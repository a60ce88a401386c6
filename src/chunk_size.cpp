#include <gradcache/chunk_size.h>

#include "detail/state_guard.h"

#include <gradcache/memory.h>

#include <torch/csrc/autograd/autograd.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>

namespace gradcache {
namespace {

// Peak tensor memory (above what was in use before) of one forward and backward of the
// first `rows` rows of `sample`; nothing it does survives it.
int64_t measure_chunk(const Model& model, const ModelInput& sample, int64_t rows, const GradCacheOptions& options,
                      const std::vector<at::Tensor>& params, const c10::Device& device) {
  const auto chunks = options.split_input_fn() ? options.split_input_fn()(sample, rows) : split_input(sample, rows);
  RngStateGuard generators(devices_of(params));
  detail::BufferGuard buffers(model.buffers());
  c10::AutoGradMode with_grad(true);
  reset_peak_memory(device);
  const int64_t before = memory_stats(device)->current;
  {
    // As step 3 runs it: under autocast for the precision, so bf16 chunks are measured in bf16.
    const at::Tensor rep = chunk_representation(model, chunks.front(), options.precision(), options.get_rep_fn());
    // Gradients are returned, not accumulated into the parameters.
    torch::autograd::grad({rep}, params, {at::ones_like(rep)}, /*retain_graph=*/false, /*create_graph=*/false,
                          /*allow_unused=*/true);
  }
  return memory_stats(device)->peak - before;
}

}  // namespace

ChunkSizeProbe find_chunk_size(const Model& model, const ModelInput& sample, int64_t chunk_memory,
                               const GradCacheOptions& options) {
  TORCH_CHECK(chunk_memory > 0, "find_chunk_size: chunk_memory (bytes one chunk may use) must be positive, got ", chunk_memory);
  std::vector<at::Tensor> params;
  for (auto& p : model.parameters()) {
    if (p.requires_grad()) params.push_back(p);
  }
  TORCH_CHECK(!params.empty(), "find_chunk_size: model ", model.name(), " has no parameters that require grad ",
              "(for a callable, name its module with with_state_of)");
  const auto devices = devices_of(params);
  const c10::Device device = devices.empty() ? c10::Device(c10::kCPU) : devices.front();
  TORCH_CHECK(memory_stats(device).has_value(), "find_chunk_size: cannot measure tensor memory on ", device,
              "; on CPU call gradcache::CpuMemoryTracker::install() first");
  const auto total = sample.batch_size();
  TORCH_CHECK(total && *total > 0, "find_chunk_size: the sample needs rows (a batch dimension)");

  ChunkSizeProbe probe;
  const int64_t small = std::min<int64_t>(*total, 4), large = std::min<int64_t>(*total, 16);
  const int64_t peak_small = measure_chunk(model, sample, small, options, params, device);
  const int64_t peak_large = large > small ? measure_chunk(model, sample, large, options, params, device) : peak_small;
  probe.bytes_per_row =
      large > small ? std::max(0.0, static_cast<double>(peak_large - peak_small) / (large - small))
                    : static_cast<double>(peak_small) / small;
  probe.fixed_bytes = std::max<int64_t>(0, peak_small - static_cast<int64_t>(probe.bytes_per_row * small));
  TORCH_CHECK(peak_small <= chunk_memory, "find_chunk_size: even ", small, " rows need ", peak_small,
              " bytes, more than the budget of ", chunk_memory, " bytes");

  // A bracket search: `lo` fits (measured), `hi` does not (or is past the sample). Guesses
  // come from the straight line, then from the line through the last two measurements
  // (peaks grow a little faster than linearly: allocator blocks, GEMM workspaces).
  int64_t lo = small, hi = *total + 1, peak_lo = peak_small;
  int64_t last_rows = large, last_peak = peak_large;
  double slope = probe.bytes_per_row;
  int64_t guess = slope > 0 ? small + static_cast<int64_t>((chunk_memory - peak_small) / slope) : *total;
  for (int round = 0; round < 10; ++round) {
    guess = std::clamp<int64_t>(guess, lo + 1, hi - 1);
    if (guess <= lo || guess >= hi) break;
    const int64_t peak = measure_chunk(model, sample, guess, options, params, device);
    if (peak <= chunk_memory) {
      lo = guess;
      peak_lo = peak;
    } else {
      hi = guess;
    }
    if (hi - lo <= std::max<int64_t>(1, lo / 20)) break;  // within 5%
    if (guess != last_rows) slope = std::max(1.0, static_cast<double>(peak - last_peak) / (guess - last_rows));
    last_rows = guess;
    last_peak = peak;
    guess = guess + static_cast<int64_t>((chunk_memory - peak) / slope);
    if (guess >= hi) guess = (lo + hi) / 2;  // the line overshoots: bisect
    if (guess <= lo) guess = (lo + hi) / 2;
  }
  const int64_t rows = lo;
  probe.measured_peak = peak_lo;
  probe.chunk_size = rows;
  return probe;
}

}  // namespace gradcache
