// --no-duplicates: batches in which no text appears twice, as sentence-transformers'
// NoDuplicatesBatchSampler draws them. A text twice in a contrastive batch is a negative equal to
// a positive: the loss pushes a text away from itself.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace gradcache {
namespace retriever {

/// An epoch's order rearranged so that its batches hold no text twice.
struct OrderWithoutDuplicates {
  std::vector<int64_t> order;           ///< a permutation of the order given
  int64_t moved = 0;                    ///< examples put in a later batch than the order had them
  int64_t batches_with_duplicates = 0;  ///< of the epoch's full batches, the last ones that could not be filled without one
};

/// Walks `order` filling batches of `batch_size`: an example one of whose texts (`texts_of`:
/// ids, equal for equal texts) is already in the batch waits, and each new batch takes the
/// waiting examples first, in order, then the order's next. The same order gives the same
/// batches (a resumed run, each rank). When the examples left cannot fill a batch without a
/// duplicate, they follow in order, and the batches they make are counted.
OrderWithoutDuplicates without_duplicate_texts(const std::vector<int64_t>& order, int64_t batch_size,
                                               const std::function<std::vector<int64_t>(int64_t)>& texts_of);

}  // namespace retriever
}  // namespace gradcache
