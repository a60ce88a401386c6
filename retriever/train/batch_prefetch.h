// Batches prepared ahead of the step that uses them, in one background thread, so that
// tokenizing and padding leave the step's critical path (as a PyTorch DataLoader's worker
// does). The batches come out in order and are exactly those preparing them one by one gives:
// a run with prefetch is bit-identical to one without, and resumes the same.
#pragma once

#include "retriever/train/training_data.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace gradcache {
namespace retriever {

class BatchPrefetch {
 public:
  /// Prepares batch b (of one epoch) on the background thread.
  using Prepare = std::function<PreparedBatch(int64_t b)>;
  /// Batches first, first + 1, ..., end - 1, at most `depth` of them prepared before they are
  /// asked for. Depth 0: no thread; next() prepares each batch when asked.
  BatchPrefetch(Prepare prepare, int64_t first, int64_t end, int64_t depth);
  /// Waits for the batch being prepared, if any (one batch's tokenization), then returns.
  ~BatchPrefetch();
  BatchPrefetch(const BatchPrefetch&) = delete;
  BatchPrefetch& operator=(const BatchPrefetch&) = delete;

  /// The next batch, waiting for it if it is not ready. What preparing it threw is thrown here;
  /// asking past `end` throws std::out_of_range.
  PreparedBatch next();

 private:
  struct Prepared {
    PreparedBatch batch;
    std::exception_ptr error;
  };
  void work();

  Prepare prepare_;
  int64_t next_to_give_, end_;
  size_t depth_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Prepared> ready_;
  bool stopping_ = false;
  std::thread worker_;  // last: started once the members above are built
};

}  // namespace retriever
}  // namespace gradcache
