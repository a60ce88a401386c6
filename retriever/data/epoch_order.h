// The order in which an epoch visits the training examples: a permutation of [0, n) that depends
// only on (seed, epoch), so that a resumed run and every rank of a distributed one see exactly
// the batches of an uninterrupted run.
//
// Up to kHeldExamples examples it is Fisher-Yates with mt19937_64, held at 4 bytes an example (the
// order every run had before data could be larger than memory: the same seeds give the same
// batches). Beyond, holding it would grow the process with the data (5·10^7 pairs: 200 MB), so
// each position is computed when a batch needs it instead: a keyed Feistel permutation over the
// next power of four, cycle-walked into [0, n) (a bijection, as Fisher-Yates' is, and as
// seed-dependent). --no-duplicates rearranges an order and then holds it whatever its size.
// Several data sets (dataset_mix.h) are each ordered so, and visited a batch at a time.
#pragma once

#include "retriever/data/dataset_mix.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace gradcache::retriever {

/// splitmix64: decorrelates the seeds of per-epoch, per-example and per-rank generators.
uint64_t mix_seed(uint64_t x);

class EpochOrder {
 public:
  /// Orders of more examples than this are computed per position rather than held.
  static constexpr size_t kHeldExamples = size_t{1} << 22;

  /// The order of `epoch` over `n` examples for `seed` (the two kinds above by n).
  static EpochOrder shuffled(size_t n, uint64_t seed, int64_t epoch);
  /// An order given whole (--no-duplicates' rearrangement; tests).
  static EpochOrder held(const std::vector<int64_t>& order);
  /// Several data sets' orders, their examples numbered one after the other (data set d's are
  /// offsets[d] + its own), visited a batch at a time as `schedule` says: position p is in batch
  /// p / batch_size, of its data set at position (batch * batch_size + p % batch_size) of that
  /// data set's order, modulo its size.
  static EpochOrder mixed(std::vector<EpochOrder> orders, std::vector<size_t> offsets,
                          std::vector<BatchSource> schedule, size_t batch_size);

  size_t size() const { return n_; }
  /// The example at position i (< size()).
  int64_t operator[](size_t i) const;
  /// Every position's example, in order.
  std::vector<int64_t> all() const;
  /// Whether the order is held in memory (false: computed per position).
  bool is_held() const { return !keys_ && !mix_; }
  /// The data set of position i (0 unless mixed).
  size_t dataset_of(size_t i) const;

 private:
  size_t n_ = 0;
  std::shared_ptr<const std::vector<uint32_t>> held_;    // examples below 2^32, as Fisher-Yates left them
  std::shared_ptr<const std::vector<int64_t>> held_64_;  // a given order with larger numbers
  std::shared_ptr<const std::vector<uint64_t>> keys_;    // the Feistel rounds' keys
  unsigned half_bits_ = 0;                               // the domain is 2^(2 half_bits_)
  struct Mix;
  std::shared_ptr<const Mix> mix_;
};

}  // namespace gradcache::retriever
