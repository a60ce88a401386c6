#include "retriever/search/negative_mining.h"

#include "retriever/launch/stop_signal.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <unordered_set>

namespace gradcache::retriever {
namespace {

// SplitMix64: a small generator whose output is fixed by its definition, so a seed draws the
// same negatives with every standard library (std::uniform_int_distribution is not).
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
};

int64_t parse_rank(const std::string& text, const std::string& whole) {
  size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || value < 1)
    throw std::invalid_argument("--depth " + whole + ": expected FIRST:LAST, ranks from 1 (e.g. 10:100)");
  return value;
}

// The candidates of one query in its rank range that may become negatives, best first.
std::vector<int64_t> candidates(const MiningQuery& q, const MiningOptions& options, MiningStats& stats) {
  std::vector<int64_t> kept;
  const size_t first = static_cast<size_t>(options.first_rank - 1);
  const size_t last = std::min(q.ranked.size(), static_cast<size_t>(options.last_rank));
  for (size_t r = first; r < last; ++r) {
    if (q.excluded.count(q.ranked[r])) {
      ++stats.excluded;
    } else if (options.margin > 0 && q.scores[r] >= options.margin * q.positive_score) {
      ++stats.above_margin;
    } else {
      kept.push_back(q.ranked[r]);
    }
  }
  return kept;
}

// Adds random documents to `chosen` until it holds options.negatives: rows below
// random_fill_from that are not excluded, not candidates of the query and not taken. Gives up
// after a bounded number of draws (a corpus with too few such documents): 64 per document
// wanted, and no more documents can be wanted than the range holds, however large --negatives.
void top_up_at_random(const MiningQuery& q, const std::vector<int64_t>& pool, const MiningOptions& options,
                      SplitMix64& rng, std::vector<int64_t>& chosen, MiningStats& stats) {
  std::unordered_set<int64_t> taken(pool.begin(), pool.end());
  const auto range = static_cast<uint64_t>(options.random_fill_from);
  const int64_t max_tries = 64 * std::min(options.negatives, options.random_fill_from);
  for (int64_t tries = 0; static_cast<int64_t>(chosen.size()) < options.negatives && tries < max_tries; ++tries) {
    const auto row = static_cast<int64_t>(rng.next() % range);
    if (q.excluded.count(row) || !taken.insert(row).second) continue;
    chosen.push_back(row);
    ++stats.random_filled;
  }
}

}  // namespace

void parse_depth(const std::string& text, MiningOptions& options) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos)
    throw std::invalid_argument("--depth " + text + ": expected FIRST:LAST, ranks from 1 (e.g. 10:100)");
  const int64_t first = parse_rank(text.substr(0, colon), text);
  const int64_t last = parse_rank(text.substr(colon + 1), text);
  if (first > last) throw std::invalid_argument("--depth " + text + ": the first rank is after the last");
  options.first_rank = first;
  options.last_rank = last;
}

std::vector<std::vector<int64_t>> choose_negatives(const std::vector<MiningQuery>& queries,
                                                   const MiningOptions& options, MiningStats& stats) {
  if (options.negatives < 1) throw std::invalid_argument("--negatives must be at least 1");
  if (options.first_rank < 1 || options.first_rank > options.last_rank)
    throw std::invalid_argument("--depth: ranks start at 1 and the first may not be after the last");
  std::vector<std::vector<int64_t>> chosen(queries.size());
  for (size_t i = 0; i < queries.size(); ++i) {
    stop_if_signalled(options.stop);
    const MiningQuery& q = queries[i];
    if (q.scores.size() != q.ranked.size())
      throw std::invalid_argument("choose_negatives: query " + std::to_string(i) + " has " +
                                  std::to_string(q.ranked.size()) + " documents but " +
                                  std::to_string(q.scores.size()) + " scores");
    std::vector<int64_t> pool = candidates(q, options, stats);
    const int64_t left = static_cast<int64_t>(pool.size());
    if (stats.fewest_candidates < 0 || left < stats.fewest_candidates) stats.fewest_candidates = left;
    // A partial Fisher-Yates shuffle draws min(n, left) without replacement; the draw is then put
    // back in rank order so that the file reads naturally (hardest first).
    std::vector<size_t> order(pool.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    SplitMix64 rng{options.seed * 0x100000001B3ULL + i};
    const size_t take = static_cast<size_t>(std::min<int64_t>(options.negatives, left));
    for (size_t k = 0; k < take; ++k) {
      const size_t j = k + static_cast<size_t>(rng.next() % (order.size() - k));
      std::swap(order[k], order[j]);
    }
    order.resize(take);
    std::sort(order.begin(), order.end());
    for (size_t k : order) chosen[i].push_back(pool[k]);
    if (left < options.negatives && options.random_fill_from > 0)
      top_up_at_random(q, pool, options, rng, chosen[i], stats);
    if (static_cast<int64_t>(chosen[i].size()) < options.negatives) ++stats.short_queries;
  }
  stats.queries += static_cast<int64_t>(queries.size());
  return chosen;
}

}  // namespace gradcache::retriever
