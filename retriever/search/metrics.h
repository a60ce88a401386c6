// Retrieval metrics (Recall@k, MRR@10, nDCG@10) over ranked lists and graded relevance judgements.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gradcache::retriever {

/// Standard retrieval metrics, averaged over the evaluated queries.
struct RetrievalMetrics {
  double recall_at_1 = 0, recall_at_10 = 0, recall_at_100 = 0, mrr_at_10 = 0, ndcg_at_10 = 0;
  size_t queries = 0;  ///< queries evaluated (those with at least one relevant document, grade > 0)
};

/// ranked[q]: document indices in rank order (best first; may be shorter than 100);
/// relevant[q]: document index -> grade (> 0 relevant; <= 0 counts as not relevant) for the same query.
/// Recall@k = |relevant in top k| / |relevant|; MRR@10 = 1/rank of the first relevant doc within 10
/// (0 if none); nDCG@10 with gain = grade and discount 1/log2(rank+1) (rank from 1), ideal DCG from
/// the grades sorted in descending order (trec_eval's definition). A document listed more than once
/// counts only at its first rank. Queries with no relevant document are skipped (not counted); if
/// none is left, all metrics are 0 with queries == 0.
/// Throws std::invalid_argument if ranked and relevant differ in size.
RetrievalMetrics compute_metrics(const std::vector<std::vector<int64_t>>& ranked,
                                 const std::vector<std::unordered_map<int64_t, int>>& relevant);

/// Keys: "recall@1", "recall@10", "recall@100", "mrr@10", "ndcg@10", "queries".
nlohmann::json to_json(const RetrievalMetrics& m);
/// The inverse of to_json (checkpoints keep the untrained model's metrics).
RetrievalMetrics metrics_from_json(const nlohmann::json& j);

/// A plain-text table for stdout: a header line, then one row per named result with columns
/// R@1 R@10 R@100 MRR@10 nDCG@10 (4 decimals) and queries, aligned; e.g. rows {"untrained", m0},
/// {"trained", m1}. Every line ends with '\n'.
std::string format_metrics_table(const std::vector<std::pair<std::string, RetrievalMetrics>>& rows);

/// The metrics of one prefix width of the embeddings (Matryoshka representations).
struct PrefixMetrics {
  int64_t dim = 0;
  RetrievalMetrics metrics;
};

/// [{"dim": 64, "recall@10": ..., ...}, ...]: the prefixes in summary.json and eval --json.
nlohmann::json to_json(const std::vector<PrefixMetrics>& prefixes);

/// Rows for format_metrics_table: "`name` @dim" per prefix.
std::vector<std::pair<std::string, RetrievalMetrics>> prefix_rows(const std::string& name,
                                                                 const std::vector<PrefixMetrics>& prefixes);

}  // namespace gradcache::retriever
