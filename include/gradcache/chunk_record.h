// What step 1 keeps of each chunk: where its generators stood (step 3 replays from there), its
// rows, and, for a chunk retention keeps (retention.h), its graph.
#pragma once

#include <gradcache/rng_state.h>

#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace gradcache {

/// What step 1 recorded of one chunk.
struct ChunkRecord {
  RngState rng_state;       ///< the generators before the chunk: step 3 replays from here
  int64_t rows = 0;         ///< rows of its representation
  bool retained = false;    ///< step 1 kept its graph: step 3 runs only its backward
  at::Tensor graph;         ///< the retained representation with its graph, until step 3 frees it
  /// Activations its graph held, kept or not: measured only under a memory limit
  /// (GradCacheOptions::retain_memory); nullopt when not measured (a measured 0 is 0).
  c10::optional<int64_t> graph_bytes;
};

/// Bytes the retained chunks among `chunks` hold (when measured).
inline int64_t retained_bytes(const std::vector<ChunkRecord>& chunks) {
  int64_t bytes = 0;
  for (const auto& r : chunks) bytes += r.retained ? r.graph_bytes.value_or(0) : 0;
  return bytes;
}

/// Step 1's outcome for one model.
struct ForwardResult {
  at::Tensor reps;                  ///< the representations of all chunks, without graph
  std::vector<ChunkRecord> chunks;  ///< one record per chunk, in order

  int64_t retained_chunks() const {
    return std::count_if(chunks.begin(), chunks.end(), [](const ChunkRecord& r) { return r.retained; });
  }
  /// Bytes the retained chunks hold (when measured).
  int64_t retained_bytes() const { return gradcache::retained_bytes(chunks); }
};

}  // namespace gradcache
