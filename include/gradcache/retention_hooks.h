// How the cache step enters retention (retention.h: GradCacheOptions::retain_chunks,
// retain_memory), an extension: with the defaults nothing is kept and the step never calls these.
// The step needs only these declarations; they are defined with RetentionPolicy, in retention.cpp.
#pragma once

#include <gradcache/chunk_record.h>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/util/Optional.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace gradcache {

class RetentionPolicy;

/// The policy for `retain_chunks` and `retain_memory`, both checked; null when they keep no
/// chunk (the paper's algorithm).
std::shared_ptr<const RetentionPolicy> make_retention(int64_t retain_chunks, int64_t retain_memory);

/// Whether the next chunk runs with grad and keeps its graph (RetentionPolicy::should_retain).
bool should_retain(const RetentionPolicy& policy, const std::vector<ChunkRecord>& so_far, size_t num_chunks,
                   c10::optional<int64_t> rows, int64_t earlier_models);

/// Step 1 for a chunk `policy` retains: `forward()` with grad, measured on `device` under a
/// memory limit; the chunk keeps its graph in `record` if it fits, else step 3 replays it.
at::Tensor forward_retained(const RetentionPolicy& policy, c10::Device device, const std::function<at::Tensor()>& forward,
                            const std::vector<ChunkRecord>& so_far, int64_t earlier_models, ChunkRecord& record);

}  // namespace gradcache
