// The order of an epoch (retriever/data/epoch_order.h): held orders are exactly the Fisher-Yates
// orders runs always had; orders beyond kHeldExamples, computed per position, are permutations
// that depend on the seed and the epoch and nothing else.
#include "retriever/data/epoch_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

namespace gr = gradcache::retriever;

namespace {

// The order as training_data.cpp computed it before EpochOrder (int64 Fisher-Yates).
std::vector<int64_t> fisher_yates_as_before(size_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(gr::mix_seed(seed ^ gr::mix_seed(static_cast<uint64_t>(epoch) + 1)));
  for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
  return order;
}

bool is_permutation_of_n(const std::vector<int64_t>& order) {
  std::vector<bool> seen(order.size());
  for (const int64_t e : order) {
    if (e < 0 || static_cast<size_t>(e) >= order.size() || seen[static_cast<size_t>(e)]) return false;
    seen[static_cast<size_t>(e)] = true;
  }
  return true;
}

}  // namespace

TEST(EpochOrder, AHeldOrderIsTheFisherYatesOrderRunsHadBefore) {
  for (const size_t n : {size_t{1}, size_t{2}, size_t{97}, size_t{10000}}) {
    for (const int64_t epoch : {0, 3}) {
      const auto order = gr::EpochOrder::shuffled(n, 42, epoch);
      EXPECT_TRUE(order.is_held());
      EXPECT_EQ(order.all(), fisher_yates_as_before(n, 42, epoch)) << n << " examples, epoch " << epoch;
    }
  }
  const auto given = gr::EpochOrder::held({2, 0, 1});
  EXPECT_EQ(given.size(), 3u);
  EXPECT_EQ(given[0], 2);
  EXPECT_THROW(given[3], std::out_of_range);
}

TEST(EpochOrder, BeyondWhatIsHeldEachPositionIsComputedAndTheOrderIsAPermutation) {
  const size_t n = gr::EpochOrder::kHeldExamples + 12345;  // the domain is 4^11, about 1.0 n
  const auto order = gr::EpochOrder::shuffled(n, 42, 0);
  EXPECT_FALSE(order.is_held());
  const std::vector<int64_t> all = order.all();
  ASSERT_TRUE(is_permutation_of_n(all));
  // Seeded: the same (seed, epoch) gives the same order; another epoch or seed another.
  const auto again = gr::EpochOrder::shuffled(n, 42, 0);
  for (const size_t i : {size_t{0}, size_t{1}, n / 2, n - 1}) EXPECT_EQ(again[i], all[i]);
  const auto next_epoch = gr::EpochOrder::shuffled(n, 42, 1).all(), other_seed = gr::EpochOrder::shuffled(n, 7, 0).all();
  size_t same_place = 0, same_place_seed = 0, fixed = 0, ascending = 0;
  for (size_t i = 0; i < n; ++i) {
    same_place += next_epoch[i] == all[i];
    same_place_seed += other_seed[i] == all[i];
    fixed += all[i] == static_cast<int64_t>(i);
    ascending += i > 0 && all[i] > all[i - 1];
  }
  // A uniform permutation has about one fixed point and ascends about half the time: far from
  // the identity, from a shift, and from the other epoch's order.
  EXPECT_LT(same_place, 100u);
  EXPECT_LT(same_place_seed, 100u);
  EXPECT_LT(fixed, 100u);
  EXPECT_NEAR(static_cast<double>(ascending) / static_cast<double>(n), 0.5, 0.01);
  EXPECT_THROW(order[n], std::out_of_range);
}

TEST(DatasetMix, MixRulesAreReadAndRefusedWithTheFlagsName) {
  EXPECT_EQ(gr::parse_mix("proportional", 2).kind, gr::MixRule::Kind::Proportional);
  EXPECT_EQ(gr::parse_mix("round-robin", 3).kind, gr::MixRule::Kind::RoundRobin);
  const auto weighted = gr::parse_mix("3,0.5", 2);
  EXPECT_EQ(weighted.kind, gr::MixRule::Kind::Weighted);
  EXPECT_EQ(weighted.weights, (std::vector<double>{3, 0.5}));
  for (const char* bad : {"3", "3,1,1", "3,0", "3,-1", "3,x", "3,", "roundrobin", "inf,1", "1e999,1"}) {
    try {
      gr::parse_mix(bad, 2);
      ADD_FAILURE() << "--mix " << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("--mix"), std::string::npos) << e.what();
    }
  }
}

TEST(DatasetMix, SchedulesGiveEachDataSetItsShareAndDependOnTheSeedAndEpochAlone) {
  const std::vector<size_t> batches{30, 10, 5};
  const auto count = [](const std::vector<gr::BatchSource>& schedule, size_t datasets) {
    std::vector<size_t> counts(datasets);
    std::vector<uint32_t> next(datasets);
    for (const auto& source : schedule) {
      EXPECT_EQ(source.batch, next[source.dataset]++) << "each data set's batches in their order";
      ++counts[source.dataset];
    }
    return counts;
  };
  // Proportional: every full batch once, shuffled; the same for the same (seed, epoch) only.
  const auto proportional = gr::mix_schedule(batches, gr::parse_mix("proportional", 3), 42, 0);
  EXPECT_EQ(count(proportional, 3), batches);
  const auto again = gr::mix_schedule(batches, gr::parse_mix("proportional", 3), 42, 0);
  const auto next = gr::mix_schedule(batches, gr::parse_mix("proportional", 3), 42, 1);
  size_t same = 0, same_next = 0;
  for (size_t b = 0; b < proportional.size(); ++b) {
    same += proportional[b].dataset == again[b].dataset;
    same_next += proportional[b].dataset == next[b].dataset;
  }
  EXPECT_EQ(same, proportional.size());
  EXPECT_LT(same_next, proportional.size());
  // Round-robin: one of each in turn until the smallest (5 batches) is spent.
  const auto round_robin = gr::mix_schedule(batches, gr::parse_mix("round-robin", 3), 42, 0);
  ASSERT_EQ(round_robin.size(), 15u);
  for (size_t b = 0; b < round_robin.size(); ++b) EXPECT_EQ(round_robin[b].dataset, b % 3);
  // Weighted 2,1,1 over 45 batches an epoch, 20 epochs: about half from the first.
  size_t first = 0, all = 0;
  for (int64_t epoch = 0; epoch < 20; ++epoch) {
    const auto weighted = gr::mix_schedule(batches, gr::parse_mix("2,1,1", 3), 42, epoch);
    ASSERT_EQ(weighted.size(), 45u);
    first += count(weighted, 3)[0];
    all += weighted.size();
  }
  EXPECT_NEAR(static_cast<double>(first) / static_cast<double>(all), 0.5, 0.05);  // 900 draws: sd 0.017
}

TEST(DatasetMix, AMixedOrderDrawsEachBatchFromOneDataSetAndEachExampleOnce) {
  // Data sets of 10, 7 and 12 examples, batches of 3: 3, 2 and 4 full batches (one example of
  // the first, one of the second left out of the epoch: different ones each epoch).
  const std::vector<size_t> sizes{10, 7, 12}, offsets{0, 10, 17};
  const size_t batch = 3;
  std::vector<gr::EpochOrder> orders;
  std::vector<size_t> full;
  for (size_t d = 0; d < sizes.size(); ++d) {
    orders.push_back(gr::EpochOrder::shuffled(sizes[d], 100 + d, 0));
    full.push_back(sizes[d] / batch);
  }
  const auto order = gr::EpochOrder::mixed(orders, offsets, gr::mix_schedule(full, gr::parse_mix("proportional", 3), 1, 0), batch);
  ASSERT_EQ(order.size(), 9 * batch);
  std::vector<int> seen(29, 0);
  for (size_t p = 0; p < order.size(); ++p) {
    const size_t d = order.dataset_of(p);
    EXPECT_EQ(d, order.dataset_of(p - p % batch)) << "a batch from one data set";
    const int64_t e = order[p];
    EXPECT_GE(e, static_cast<int64_t>(offsets[d]));
    EXPECT_LT(e, static_cast<int64_t>(offsets[d] + sizes[d]));
    ++seen[static_cast<size_t>(e)];
  }
  for (const int times : seen) EXPECT_LE(times, 1) << "an example twice in an epoch";
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), 27);
  EXPECT_THROW(order[order.size()], std::out_of_range);
  EXPECT_THROW(gr::EpochOrder::mixed(orders, {0, 10}, {}, batch), std::invalid_argument);
}
