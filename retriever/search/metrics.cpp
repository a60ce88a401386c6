#include "retriever/search/metrics.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <unordered_set>

namespace gradcache::retriever {
namespace {

/// 1 / log2(rank + 1) for ranks 1..10.
double discount(size_t rank) { return 1.0 / std::log2(static_cast<double>(rank) + 1.0); }

}  // namespace

RetrievalMetrics compute_metrics(const std::vector<std::vector<int64_t>>& ranked,
                                 const std::vector<std::unordered_map<int64_t, int>>& relevant) {
  if (ranked.size() != relevant.size()) {
    throw std::invalid_argument("compute_metrics: " + std::to_string(ranked.size()) + " ranked lists but " +
                                std::to_string(relevant.size()) +
                                " relevance sets; they must be given for the same queries, in the same order");
  }
  RetrievalMetrics sum;
  std::vector<int> grades;
  std::unordered_set<int64_t> seen;
  for (size_t q = 0; q < ranked.size(); ++q) {
    grades.clear();
    for (const auto& [doc, grade] : relevant[q]) {
      if (grade > 0) grades.push_back(grade);
    }
    if (grades.empty()) continue;  // nothing to find: the query says nothing about the ranking
    const auto num_relevant = static_cast<double>(grades.size());

    size_t found_at_1 = 0, found_at_10 = 0, found_at_100 = 0;
    double reciprocal_rank = 0, dcg = 0;
    seen.clear();
    const size_t depth = std::min<size_t>(ranked[q].size(), 100);
    for (size_t position = 0; position < depth; ++position) {
      const int64_t doc = ranked[q][position];
      if (!seen.insert(doc).second) continue;  // a repeated document scores only once
      const auto it = relevant[q].find(doc);
      if (it == relevant[q].end() || it->second <= 0) continue;
      const size_t rank = position + 1;
      ++found_at_100;
      if (rank <= 10) {
        ++found_at_10;
        dcg += it->second * discount(rank);
        if (reciprocal_rank == 0) reciprocal_rank = 1.0 / static_cast<double>(rank);
      }
      if (rank == 1) ++found_at_1;
    }
    std::sort(grades.begin(), grades.end(), std::greater<int>());
    double ideal_dcg = 0;
    for (size_t i = 0; i < grades.size() && i < 10; ++i) ideal_dcg += grades[i] * discount(i + 1);

    sum.recall_at_1 += static_cast<double>(found_at_1) / num_relevant;
    sum.recall_at_10 += static_cast<double>(found_at_10) / num_relevant;
    sum.recall_at_100 += static_cast<double>(found_at_100) / num_relevant;
    sum.mrr_at_10 += reciprocal_rank;
    sum.ndcg_at_10 += dcg / ideal_dcg;
    ++sum.queries;
  }
  if (sum.queries == 0) return sum;
  const auto n = static_cast<double>(sum.queries);
  sum.recall_at_1 /= n;
  sum.recall_at_10 /= n;
  sum.recall_at_100 /= n;
  sum.mrr_at_10 /= n;
  sum.ndcg_at_10 /= n;
  return sum;
}

nlohmann::json to_json(const RetrievalMetrics& m) {
  return nlohmann::json{{"recall@1", m.recall_at_1},   {"recall@10", m.recall_at_10}, {"recall@100", m.recall_at_100},
                        {"mrr@10", m.mrr_at_10},       {"ndcg@10", m.ndcg_at_10},     {"queries", m.queries}};
}

RetrievalMetrics metrics_from_json(const nlohmann::json& j) {
  RetrievalMetrics m;
  m.recall_at_1 = j.at("recall@1");
  m.recall_at_10 = j.at("recall@10");
  m.recall_at_100 = j.at("recall@100");
  m.mrr_at_10 = j.at("mrr@10");
  m.ndcg_at_10 = j.at("ndcg@10");
  m.queries = j.at("queries");
  return m;
}

std::string format_metrics_table(const std::vector<std::pair<std::string, RetrievalMetrics>>& rows) {
  size_t name_width = 5;  // "model"
  for (const auto& row : rows) name_width = std::max(name_width, row.first.size());

  std::string table;
  char line[256];
  // Names are appended separately so a long one cannot overflow the buffer.
  table += "model" + std::string(name_width - 5, ' ');
  std::snprintf(line, sizeof line, " %8s %8s %8s %8s %8s %8s\n", "R@1", "R@10", "R@100", "MRR@10", "nDCG@10",
                "queries");
  table += line;
  for (const auto& [name, m] : rows) {
    table += name + std::string(name_width - name.size(), ' ');
    std::snprintf(line, sizeof line, " %8.4f %8.4f %8.4f %8.4f %8.4f %8zu\n", m.recall_at_1, m.recall_at_10,
                  m.recall_at_100, m.mrr_at_10, m.ndcg_at_10, m.queries);
    table += line;
  }
  return table;
}

nlohmann::json to_json(const std::vector<PrefixMetrics>& prefixes) {
  auto list = nlohmann::json::array();
  for (const auto& p : prefixes) {
    auto j = to_json(p.metrics);
    j["dim"] = p.dim;
    list.push_back(j);
  }
  return list;
}

std::vector<std::pair<std::string, RetrievalMetrics>> prefix_rows(const std::string& name,
                                                                 const std::vector<PrefixMetrics>& prefixes) {
  std::vector<std::pair<std::string, RetrievalMetrics>> rows;
  for (const auto& p : prefixes) rows.emplace_back(name + " @" + std::to_string(p.dim), p.metrics);
  return rows;
}

}  // namespace gradcache::retriever
