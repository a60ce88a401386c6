#include "retriever/data/epoch_order.h"

#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

namespace gradcache::retriever {
namespace {

constexpr int kFeistelRounds = 6;

// The Feistel permutation of [0, 4^half_bits): each round swaps the halves and mixes one into
// the other with its key, which is a bijection whatever the round function.
uint64_t feistel(uint64_t x, const std::vector<uint64_t>& keys, unsigned half_bits) {
  const uint64_t mask = (uint64_t{1} << half_bits) - 1;
  uint64_t left = x >> half_bits, right = x & mask;
  for (const uint64_t key : keys) {
    const uint64_t mixed = left ^ (mix_seed(right ^ key) & mask);
    left = right;
    right = mixed;
  }
  return (left << half_bits) | right;
}

}  // namespace

struct EpochOrder::Mix {
  std::vector<EpochOrder> orders;
  std::vector<size_t> offsets;
  std::vector<BatchSource> schedule;
  size_t batch_size = 0;
};

uint64_t mix_seed(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

EpochOrder EpochOrder::shuffled(size_t n, uint64_t seed, int64_t epoch) {
  EpochOrder order;
  order.n_ = n;
  const uint64_t epoch_seed = mix_seed(seed ^ mix_seed(static_cast<uint64_t>(epoch) + 1));
  if (n <= kHeldExamples) {
    // Fisher-Yates with mt19937_64 (std::shuffle's algorithm is implementation-defined).
    auto held = std::make_shared<std::vector<uint32_t>>(n);
    std::iota(held->begin(), held->end(), 0u);
    std::mt19937_64 rng(epoch_seed);
    for (size_t i = n; i > 1; --i) std::swap((*held)[i - 1], (*held)[rng() % i]);
    order.held_ = std::move(held);
    return order;
  }
  while ((uint64_t{1} << (2 * order.half_bits_)) < n) ++order.half_bits_;
  auto keys = std::make_shared<std::vector<uint64_t>>();
  for (int round = 0; round < kFeistelRounds; ++round) keys->push_back(mix_seed(epoch_seed ^ mix_seed(round + 1)));
  order.keys_ = std::move(keys);
  return order;
}

EpochOrder EpochOrder::held(const std::vector<int64_t>& given) {
  EpochOrder order;
  order.n_ = given.size();
  order.held_64_ = std::make_shared<const std::vector<int64_t>>(given);
  return order;
}

EpochOrder EpochOrder::mixed(std::vector<EpochOrder> orders, std::vector<size_t> offsets,
                             std::vector<BatchSource> schedule, size_t batch_size) {
  if (orders.size() != offsets.size() || batch_size == 0)
    throw std::invalid_argument("EpochOrder::mixed: one offset per order and a positive batch size");
  for (const auto& source : schedule) {
    if (source.dataset >= orders.size() || orders[source.dataset].size() == 0)
      throw std::invalid_argument("EpochOrder::mixed: the schedule names a data set that is not there or is empty");
  }
  EpochOrder order;
  order.n_ = schedule.size() * batch_size;
  order.mix_ = std::make_shared<const Mix>(Mix{std::move(orders), std::move(offsets), std::move(schedule), batch_size});
  return order;
}

size_t EpochOrder::dataset_of(size_t i) const {
  if (i >= n_) throw std::out_of_range("position " + std::to_string(i) + " of an epoch of " + std::to_string(n_));
  return mix_ ? mix_->schedule[i / mix_->batch_size].dataset : 0;
}

int64_t EpochOrder::operator[](size_t i) const {
  if (i >= n_) throw std::out_of_range("position " + std::to_string(i) + " of an epoch of " + std::to_string(n_));
  if (held_) return (*held_)[i];
  if (mix_) {
    const BatchSource& source = mix_->schedule[i / mix_->batch_size];
    const EpochOrder& own = mix_->orders[source.dataset];
    const size_t at = (static_cast<size_t>(source.batch) * mix_->batch_size + i % mix_->batch_size) % own.size();
    return static_cast<int64_t>(mix_->offsets[source.dataset]) + own[at];
  }
  if (held_64_) return (*held_64_)[i];
  // Cycle-walking: the domain is under 4n, so a walk takes fewer than 4 steps on average, and it
  // ends because the permutation's cycle through i holds i itself, which is below n.
  uint64_t x = i;
  do x = feistel(x, *keys_, half_bits_);
  while (x >= n_);
  return static_cast<int64_t>(x);
}

std::vector<int64_t> EpochOrder::all() const {
  std::vector<int64_t> every(n_);
  for (size_t i = 0; i < n_; ++i) every[i] = (*this)[i];
  return every;
}

}  // namespace gradcache::retriever
