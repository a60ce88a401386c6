// Which chunks keep their graph (docs/design.md §3, "Retain"): a retained chunk runs with grad
// in step 1, so step 3 only runs its backward. An extension of the cache step, which enters it
// only through retention_hooks.h.
#pragma once

#include <gradcache/chunk_record.h>
#include <gradcache/retention_hooks.h>

#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>

#include <cstdint>
#include <vector>

namespace gradcache {

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
