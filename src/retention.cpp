#include <gradcache/retention.h>

#include <gradcache/memory.h>

#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>

#include <algorithm>

namespace gradcache {

RetentionPolicy::RetentionPolicy(int64_t max_chunks, int64_t memory) : max_chunks_(max_chunks), memory_(memory) {
  TORCH_CHECK(max_chunks >= -1, "GradCache: retain_chunks must be >= 0 (or -1: as many as retain_memory allows), got ",
              max_chunks);
  TORCH_CHECK(memory >= 0, "GradCache: retain_memory must be >= 0 bytes, got ", memory);
}

bool RetentionPolicy::should_retain(const std::vector<ChunkRecord>& so_far, size_t num_chunks,
                                    c10::optional<int64_t> rows, int64_t earlier_models) const {
  const auto n = static_cast<int64_t>(num_chunks);
  const int64_t limit = max_chunks_ >= 0 ? std::min(max_chunks_, n) : (measures() ? n : 0);
  const int64_t kept = std::count_if(so_far.begin(), so_far.end(), [](const ChunkRecord& r) { return r.retained; });
  if (kept >= limit) return false;
  if (!measures()) return true;
  // A measured chunk that did not fit ends retention for this model.
  const auto measured =
      std::find_if(so_far.rbegin(), so_far.rend(), [](const ChunkRecord& r) { return r.graph_bytes.has_value(); });
  if (measured == so_far.rend()) return true;  // the probe
  if (!measured->retained) return false;
  if (!rows || measured->rows <= 0) return true;
  const double bytes_per_row = static_cast<double>(*measured->graph_bytes) / measured->rows;
  return bytes_per_row * *rows <= bytes_left(so_far, earlier_models);
}

bool RetentionPolicy::fits(const std::vector<ChunkRecord>& so_far, int64_t earlier_models, int64_t bytes) const {
  return !measures() || bytes <= bytes_left(so_far, earlier_models);
}

int64_t RetentionPolicy::bytes_left(const std::vector<ChunkRecord>& so_far, int64_t earlier_models) const {
  return memory_ - earlier_models - retained_bytes(so_far);
}

std::shared_ptr<const RetentionPolicy> make_retention(int64_t retain_chunks, int64_t retain_memory) {
  auto policy = std::make_shared<const RetentionPolicy>(retain_chunks, retain_memory);  // checks both
  const bool keeps_none = retain_chunks == 0 || (retain_chunks == -1 && retain_memory == 0);
  return keeps_none ? nullptr : policy;
}

bool should_retain(const RetentionPolicy& policy, const std::vector<ChunkRecord>& so_far, size_t num_chunks,
                   c10::optional<int64_t> rows, int64_t earlier_models) {
  return policy.should_retain(so_far, num_chunks, rows, earlier_models);
}

at::Tensor forward_retained(const RetentionPolicy& policy, c10::Device device, const std::function<at::Tensor()>& forward,
                            const std::vector<ChunkRecord>& so_far, int64_t earlier_models, ChunkRecord& record) {
  TORCH_CHECK(!policy.measures() || memory_stats(device).has_value(), "GradCache: retain_memory needs to ",
              "measure tensor memory on ", device, "; on CPU call gradcache::CpuMemoryTracker::install() first");
  c10::AutoGradMode with_grad(true);
  const int64_t before = policy.measures() ? memory_stats(device)->current : 0;
  at::Tensor rep = forward();
  if (policy.measures()) record.graph_bytes = memory_stats(device)->current - before;
  // A chunk that does not fit drops its graph here and is replayed in step 3.
  record.retained = policy.fits(so_far, earlier_models, record.graph_bytes.value_or(0));
  if (record.retained) record.graph = rep;
  return rep;
}

}  // namespace gradcache
