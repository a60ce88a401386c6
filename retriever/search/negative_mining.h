// Choosing hard negatives from ranked retrieval results (DPR's and Tevatron's recipe): drop the
// query's positives and judged-relevant documents, keep a rank range, optionally keep only
// candidates scored clearly below the positive (positive-aware filtering), and draw a seeded
// sample. Independent of how the ranking was made (dense search or BM25).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

namespace gradcache::retriever {

/// Ranks are 1-based and inclusive: depth 10:100 takes the 10th to the 100th retrieved document.
struct MiningOptions {
  int64_t negatives = 1;     ///< negatives chosen per query
  int64_t first_rank = 10;   ///< first rank candidates are taken from
  int64_t last_rank = 100;   ///< last rank (the search retrieves this many)
  double margin = 0;         ///< > 0: keep a candidate only if its score < margin x the positive's score
  uint64_t seed = 42;        ///< the draw among the candidates left
  /// > 0: a query left with fewer candidates than `negatives` is topped up with documents drawn
  /// at random from rows [0, random_fill_from) that are neither excluded nor already taken
  /// (BM25 finds nothing for a query whose terms are rare; DPR falls back to random negatives).
  int64_t random_fill_from = 0;
  /// Checked before each query (stop_if_signalled): a signal stops the choice at once.
  const std::atomic<int>* stop = nullptr;
};

/// "10:100" -> first_rank 10, last_rank 100. Throws std::invalid_argument naming --depth on
/// anything else (ranks start at 1; first <= last).
void parse_depth(const std::string& text, MiningOptions& options);

/// One query's retrieval result and what must not become its negative.
struct MiningQuery {
  std::vector<int64_t> ranked;                ///< document rows, best first
  std::vector<float> scores;                  ///< their scores (same length as ranked)
  std::unordered_set<int64_t> excluded;       ///< positives and judged-relevant documents
  float positive_score = 0;                   ///< the positive's score (used with a margin)
};

/// Why candidates were not kept, summed over queries, and what was chosen.
struct MiningStats {
  int64_t queries = 0;
  int64_t excluded = 0;       ///< candidates in the rank range that are positives or judged relevant
  int64_t above_margin = 0;   ///< candidates dropped by the positive-aware filter
  int64_t short_queries = 0;  ///< queries left with fewer candidates than options.negatives
  int64_t random_filled = 0;  ///< negatives drawn at random to top such queries up (random_fill_from)
  int64_t fewest_candidates = -1;  ///< the smallest number of candidates any query had left
};

/// For each query, options.negatives document rows drawn without replacement (seeded: the same
/// inputs and seed give the same choice on every machine) from its candidates in the rank range
/// that are not excluded and pass the margin filter, in rank order. A query with fewer
/// candidates gets all it has and is counted in stats.short_queries; with random_fill_from, it
/// is topped up at random first (after its ranked ones) and counted short only if that fails.
std::vector<std::vector<int64_t>> choose_negatives(const std::vector<MiningQuery>& queries,
                                                   const MiningOptions& options, MiningStats& stats);

}  // namespace gradcache::retriever
