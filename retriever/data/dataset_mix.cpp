#include "retriever/data/dataset_mix.h"

#include "retriever/files/comma_items.h"
#include "retriever/data/epoch_order.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>

namespace gradcache::retriever {
namespace {

// The schedule's generator: apart from the data sets' own orders (which mix the seed otherwise).
std::mt19937_64 schedule_rng(uint64_t seed, int64_t epoch) {
  return std::mt19937_64(mix_seed(seed ^ mix_seed(static_cast<uint64_t>(epoch) + 1) ^ 0x6d69782d62617463ULL));
}

}  // namespace

MixRule parse_mix(const std::string& text, size_t datasets) {
  MixRule rule;
  if (text == "proportional") return rule;
  if (text == "round-robin") {
    rule.kind = MixRule::Kind::RoundRobin;
    return rule;
  }
  rule.kind = MixRule::Kind::Weighted;
  for (const auto& item : comma_items(text)) {
    size_t used = 0;
    double weight = 0;
    try {
      weight = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || !std::isfinite(weight) || weight <= 0)
      throw std::invalid_argument("--mix " + text + ": expected proportional, round-robin or one positive weight per "
                                  "--train-file, comma-separated (e.g. 3,1); '" + item + "' is not a positive number");
    rule.weights.push_back(weight);
  }
  if (rule.weights.size() != datasets)
    throw std::invalid_argument("--mix " + text + ": " + std::to_string(rule.weights.size()) + " weights for " +
                                std::to_string(datasets) + " --train-file data sets: give one each");
  return rule;
}

size_t mixed_batches_per_epoch(const std::vector<size_t>& full_batches, const MixRule& rule) {
  if (full_batches.empty()) return 0;
  if (rule.kind == MixRule::Kind::RoundRobin)
    return full_batches.size() * *std::min_element(full_batches.begin(), full_batches.end());
  return std::accumulate(full_batches.begin(), full_batches.end(), size_t{0});
}

std::vector<BatchSource> mix_schedule(const std::vector<size_t>& full_batches, const MixRule& rule, uint64_t seed,
                                      int64_t epoch) {
  const size_t total = mixed_batches_per_epoch(full_batches, rule);
  std::vector<BatchSource> schedule;
  schedule.reserve(total);
  std::vector<uint32_t> given(full_batches.size(), 0);  // each data set's batches so far
  const auto take = [&](size_t dataset) {
    schedule.push_back({static_cast<uint32_t>(dataset), given[dataset]++});
  };
  auto rng = schedule_rng(seed, epoch);
  switch (rule.kind) {
    case MixRule::Kind::RoundRobin:
      for (size_t b = 0; b < total; ++b) take(b % full_batches.size());
      break;
    case MixRule::Kind::Proportional: {
      std::vector<uint32_t> labels;
      for (size_t d = 0; d < full_batches.size(); ++d) labels.insert(labels.end(), full_batches[d], static_cast<uint32_t>(d));
      for (size_t i = labels.size(); i > 1; --i) std::swap(labels[i - 1], labels[rng() % i]);  // Fisher-Yates
      for (const uint32_t d : labels) take(d);
      break;
    }
    case MixRule::Kind::Weighted: {
      std::vector<double> cumulative(rule.weights.size());
      std::partial_sum(rule.weights.begin(), rule.weights.end(), cumulative.begin());
      for (size_t b = 0; b < total; ++b) {
        // 53 random bits: a uniform double in [0, 1), the same on every platform.
        const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53 * cumulative.back();
        const auto it = std::upper_bound(cumulative.begin(), cumulative.end(), u);
        take(std::min<size_t>(static_cast<size_t>(it - cumulative.begin()), cumulative.size() - 1));
      }
      break;
    }
  }
  return schedule;
}

}  // namespace gradcache::retriever
