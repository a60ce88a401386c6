#include "retriever/train/no_duplicates.h"

#include <list>
#include <stdexcept>
#include <unordered_set>

namespace gradcache {
namespace retriever {

OrderWithoutDuplicates without_duplicate_texts(const std::vector<int64_t>& order, int64_t batch_size,
                                               const std::function<std::vector<int64_t>(int64_t)>& texts_of) {
  if (batch_size < 1) throw std::invalid_argument("without_duplicate_texts: batch_size must be positive");
  const auto batch = static_cast<size_t>(batch_size);
  OrderWithoutDuplicates result;
  result.order.reserve(order.size());
  std::list<int64_t> waiting;  // examples put off, in order
  size_t next = 0;
  while (result.order.size() + batch <= order.size()) {
    std::unordered_set<int64_t> seen;
    std::vector<int64_t> taken;
    auto take_if_new = [&](int64_t example) {
      const std::vector<int64_t> texts = texts_of(example);  // may hold one text twice: not a clash
      for (const int64_t text : texts) {
        if (seen.count(text) != 0) return false;
      }
      seen.insert(texts.begin(), texts.end());
      taken.push_back(example);
      return true;
    };
    for (auto it = waiting.begin(); it != waiting.end() && taken.size() < batch;) {
      it = take_if_new(*it) ? waiting.erase(it) : std::next(it);
    }
    while (taken.size() < batch && next < order.size()) {
      const int64_t example = order[next++];
      if (!take_if_new(example)) {
        waiting.push_back(example);  // each example comes from the order once
        ++result.moved;
      }
    }
    if (taken.size() < batch) {  // what is left cannot fill a batch without a duplicate
      waiting.insert(waiting.begin(), taken.begin(), taken.end());
      break;
    }
    result.order.insert(result.order.end(), taken.begin(), taken.end());
  }
  const size_t clean = result.order.size();
  result.order.insert(result.order.end(), waiting.begin(), waiting.end());
  result.order.insert(result.order.end(), order.begin() + static_cast<std::ptrdiff_t>(next), order.end());
  result.batches_with_duplicates = static_cast<int64_t>((order.size() / batch) - clean / batch);
  return result;
}

}  // namespace retriever
}  // namespace gradcache
