// Choosing the chunk size from a memory budget, by measurement.
#pragma once

#include <gradcache/grad_cache.h>

#include <cstdint>

namespace gradcache {

/// What find_chunk_size measured.
struct ChunkSizeProbe {
  int64_t chunk_size = 0;     ///< the largest chunk whose forward + backward fits the budget
  int64_t fixed_bytes = 0;    ///< peak memory of a chunk that does not grow with its rows
  double bytes_per_row = 0;   ///< and what each row adds
  int64_t measured_peak = 0;  ///< the peak measured at chunk_size
};

/// Chunk size "auto": the largest number of rows of `sample` whose forward and backward (what
/// step 3 of the cache runs, under autocast for `options.precision()`) stay within
/// `chunk_memory` bytes of tensor memory on the model's device. It measures: chunks of two
/// sizes give peak = fixed + per_row * rows; the size this predicts is then run and shrunk
/// until its measured peak fits. At most the rows of `sample`. Gradients, buffers and
/// generators are left as they were. Needs memory_stats() for the device (on CPU:
/// CpuMemoryTracker::install()) and a model whose parameters are known (a module, or a
/// callable with with_state_of).
ChunkSizeProbe find_chunk_size(const Model& model, const ModelInput& sample, int64_t chunk_memory,
                               const GradCacheOptions& options = {});

}  // namespace gradcache
