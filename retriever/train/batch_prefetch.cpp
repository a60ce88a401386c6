#include "retriever/train/batch_prefetch.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace gradcache {
namespace retriever {

BatchPrefetch::BatchPrefetch(Prepare prepare, int64_t first, int64_t end, int64_t depth)
    : prepare_(std::move(prepare)), next_to_give_(first), end_(end), depth_(static_cast<size_t>(std::max<int64_t>(0, depth))) {
  if (depth_ > 0 && first < end) worker_ = std::thread([this, first] {
    for (int64_t b = first; b < end_; ++b) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [this] { return stopping_ || ready_.size() < depth_; });
        if (stopping_) return;
      }
      Prepared prepared;
      try {
        prepared.batch = prepare_(b);
      } catch (...) {
        prepared.error = std::current_exception();
      }
      const bool failed = prepared.error != nullptr;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ready_.push_back(std::move(prepared));
      }
      changed_.notify_all();
      if (failed) return;  // next() throws it when it comes to that batch
    }
  });
}

BatchPrefetch::~BatchPrefetch() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (worker_.joinable()) worker_.join();
}

PreparedBatch BatchPrefetch::next() {
  if (next_to_give_ >= end_)
    throw std::out_of_range("batch " + std::to_string(next_to_give_ + 1) + " asked of a prefetch that ends at batch " +
                            std::to_string(end_));
  const int64_t b = next_to_give_++;
  if (depth_ == 0) return prepare_(b);
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return !ready_.empty(); });
  Prepared prepared = std::move(ready_.front());
  ready_.pop_front();
  lock.unlock();
  changed_.notify_all();
  if (prepared.error) {
    next_to_give_ = end_;  // the thread stopped at this batch: no later one will come
    std::rethrow_exception(prepared.error);
  }
  return std::move(prepared.batch);
}

}  // namespace retriever
}  // namespace gradcache
