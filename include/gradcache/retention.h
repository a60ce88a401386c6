// What step 1 keeps of each chunk, and which chunks keep their graph (docs/design.md §3,
// "Retain"): a retained chunk runs with grad in step 1, so step 3 only runs its backward.
#pragma once

#include <gradcache/rng_state.h>

#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>

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

/// Step 1's outcome for one model.
struct ForwardResult {
  at::Tensor reps;                  ///< the representations of all chunks, without graph
  std::vector<ChunkRecord> chunks;  ///< one record per chunk, in order
  int64_t retained_chunks() const;
  int64_t retained_bytes() const;  ///< bytes the retained chunks hold (when measured)
};

/// Which chunks of a model keep their graph. Stateless: it decides from the records of the
/// model's chunks so far and the bytes the models before it retained in this step.
class RetentionPolicy {
 public:
  /// `max_chunks` per model (the first ones); -1: as many as `memory` allows, none without it.
  /// `memory`: bytes all retained chunks of a step may hold together; 0: no limit. A limit
  /// is kept by measuring: the first chunk runs with grad as a probe, later ones are
  /// predicted from its bytes per row.
  RetentionPolicy(int64_t max_chunks = -1, int64_t memory = 0);

  /// Whether chunks are measured (a memory limit is set).
  bool measures() const { return memory_ > 0; }
  /// Whether the next chunk (of `rows` rows, of `num_chunks`) should run with grad, given the
  /// model's chunks `so_far` and the bytes `earlier_models` retained in this step.
  bool should_retain(const std::vector<ChunkRecord>& so_far, size_t num_chunks, c10::optional<int64_t> rows,
                     int64_t earlier_models) const;
  /// Whether a chunk whose graph measured `bytes` still fits.
  bool fits(const std::vector<ChunkRecord>& so_far, int64_t earlier_models, int64_t bytes) const;

 private:
  // Bytes the limit leaves for this model's next chunk.
  int64_t bytes_left(const std::vector<ChunkRecord>& so_far, int64_t earlier_models) const;

  int64_t max_chunks_;
  int64_t memory_;
};

}  // namespace gradcache
