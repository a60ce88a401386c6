#include "retriever/search/evaluate.h"

#include "retriever/model/batching.h"
#include "retriever/search/exact_top_k.h"
#include "retriever/search/rerank.h"

#include <gradcache/matryoshka_loss.h>

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <string>

namespace gradcache {
namespace retriever {

TokenizedEvalSet tokenize_eval_set(std::string name, const TextCollection& corpus, const TextCollection& queries,
                                   const Qrels& qrels, const Tokenizer& tokenizer, size_t query_max_len,
                                   size_t passage_max_len) {
  TokenizedEvalSet out;
  out.name = std::move(name);
  for (const auto& text : corpus.texts) out.corpus.push_back(tokenizer.encode_passage(text, passage_max_len));
  for (const auto& text : queries.texts) out.queries.push_back(tokenizer.encode_query(text, query_max_len));
  out.relevant.resize(queries.size());
  for (size_t q = 0; q < queries.size(); ++q) {
    auto judged = qrels.find(queries.ids[q]);
    if (judged == qrels.end()) continue;
    for (const auto& [doc, grade] : judged->second) {
      auto row = corpus.index.find(doc);
      if (row != corpus.index.end()) out.relevant[q][static_cast<int64_t>(row->second)] = grade;
    }
  }
  return out;
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The first k columns of a ranking (all when it has fewer).
TopK first_columns(const TopK& top, int64_t k) {
  const int64_t width = std::min(k, top.indices.size(1));
  return {top.scores.narrow(1, 0, width), top.indices.narrow(1, 0, width)};
}

// The corpus's and the queries' embeddings, without dropout.
std::pair<at::Tensor, at::Tensor> encode_eval_set(BiEncoder& model, const TokenizedEvalSet& data,
                                                  const EvalOptions& options) {
  // The caller's mode comes back even if encoding throws.
  struct ModeGuard {
    BiEncoder& model;
    bool training;
    ~ModeGuard() { model.train(training); }
  } restore{model, model.is_training()};
  model.train(false);
  auto docs = encode_all(model.passage_model(), data.corpus, options.batch_size, options.device, options.stop);
  auto queries = encode_all(model.query_model(), data.queries, options.batch_size, options.device, options.stop);
  return {docs, queries};
}

// The first options.prefix_dim dimensions (all when 0).
at::Tensor prefix_of(const at::Tensor& embeddings, const EvalOptions& options) {
  if (options.prefix_dim <= 0) return embeddings;
  if (options.prefix_dim > embeddings.size(1)) {
    throw std::invalid_argument("prefix dimension " + std::to_string(options.prefix_dim) +
                                " is larger than the embeddings' width " + std::to_string(embeddings.size(1)));
  }
  return gradcache::matryoshka_prefix(embeddings, options.prefix_dim, options.normalize_prefix).contiguous();
}

// Ranks the corpus for every query and scores the ranking (and Phi's re-ranking of it, for the
// full embeddings: Phi was trained on them, not on a prefix).
void search_and_score(BiEncoder& model, const at::Tensor& all_docs, const at::Tensor& all_queries,
                      const TokenizedEvalSet& data, const EvalOptions& options, DenseEvaluation& out) {
  const auto docs = prefix_of(all_docs, options), queries = prefix_of(all_queries, options);
  auto start = std::chrono::steady_clock::now();
  const DenseIndex index(docs, options.index);
  out.index = index.describe();
  out.index_seconds = seconds_since(start);
  if (options.log) {
    options.log("searching with " + out.index +
                (options.prefix_dim > 0 ? " (first " + std::to_string(options.prefix_dim) + " dimensions)" : ""));
  }
  start = std::chrono::steady_clock::now();
  const bool rerank = options.rerank_k > 0 && model.similarity() && options.prefix_dim <= 0;
  const TopK searched = index.search(queries, rerank ? std::max(options.top_k, options.rerank_k) : options.top_k);
  out.search_seconds = seconds_since(start);
  const TopK top = first_columns(searched, options.top_k);
  out.metrics = compute_metrics(ranked_lists(top), data.relevant);
  if (rerank) {
    start = std::chrono::steady_clock::now();
    auto phi = model.similarity();
    const TopK reranked = rerank_top_k(searched, queries, docs, phi, options.rerank_k);
    out.reranked = compute_metrics(ranked_lists(reranked), data.relevant);
    out.rerank_k = reranked.indices.size(1);
    out.rerank_seconds = seconds_since(start);
  }
  if (!is_exact_index_type(options.index.type)) {
    DenseIndexOptions exact_options = options.index;
    exact_options.type = "exact";
    const TopK exact = DenseIndex(docs, exact_options).search(queries, options.top_k);
    const int64_t width = top.indices.size(1);
    out.recall_vs_exact_at_10 = recall_against(top, exact, std::min<int64_t>(10, width));
    if (width >= 100) out.recall_vs_exact_at_100 = recall_against(top, exact, 100);
  }
}

}  // namespace

DenseEvaluation evaluate_dense(BiEncoder& model, const TokenizedEvalSet& data, const EvalOptions& options) {
  DenseEvaluation out;
  const auto start = std::chrono::steady_clock::now();
  const auto [docs, queries] = encode_eval_set(model, data, options);
  out.encode_seconds = seconds_since(start);
  search_and_score(model, docs, queries, data, options, out);
  return out;
}

std::vector<PrefixMetrics> evaluate_prefixes(BiEncoder& model, const TokenizedEvalSet& data,
                                             const EvalOptions& options, const std::vector<int64_t>& dims,
                                             bool normalize) {
  const auto [docs, queries] = encode_eval_set(model, data, options);
  std::vector<PrefixMetrics> out;
  for (int64_t dim : dims) {
    EvalOptions prefix = options;
    prefix.prefix_dim = dim;
    prefix.normalize_prefix = normalize;
    DenseEvaluation evaluation;
    search_and_score(model, docs, queries, data, prefix, evaluation);
    out.push_back({dim, evaluation.metrics});
  }
  return out;
}

std::vector<PrefixMetrics> evaluate_prefixes_and_describe(BiEncoder& model, const TokenizedEvalSet& data,
                                                          const EvalOptions& options, const std::vector<int64_t>& dims,
                                                          bool normalize, const std::string& what,
                                                          std::vector<std::string>& lines) {
  const auto start = std::chrono::steady_clock::now();
  auto all = evaluate_prefixes(model, data, options, dims, normalize);
  for (const auto& p : all) {
    char line[256];
    std::snprintf(line, sizeof line, "%s%s: %s, %zu queries against %zu passages: R@10 %.4f  MRR@10 %.4f (%.1f s)",
                  what.c_str(), p.dim > 0 ? (" @" + std::to_string(p.dim)).c_str() : "", data.name.c_str(),
                  p.metrics.queries, data.corpus.size(), p.metrics.recall_at_10, p.metrics.mrr_at_10,
                  seconds_since(start));
    lines.push_back(line);
  }
  return all;
}

Bm25Evaluation evaluate_bm25(const TextCollection& corpus, const TextCollection& queries,
                             const TokenizedEvalSet& data, const Bm25Options& options, int64_t top_k,
                             const std::function<void(const std::string&)>& log) {
  TORCH_CHECK(corpus.size() == data.corpus.size() && queries.size() == data.queries.size(),
              "evaluate_bm25: the texts are not those of the evaluation set");
  Bm25Evaluation out;
  const Bm25Index index(corpus, options, log);
  out.index_seconds = index.build_seconds();
  out.reused = index.reused();
  const auto start = std::chrono::steady_clock::now();
  const TopK top = index.search(queries.texts, top_k);
  out.search_seconds = seconds_since(start);
  out.metrics = compute_metrics(ranked_lists(top), data.relevant);
  return out;
}

RetrievalMetrics evaluate_and_describe(BiEncoder& model, const TokenizedEvalSet& data, const EvalOptions& options,
                                       const std::string& what, std::string& line,
                                       std::optional<RetrievalMetrics>* reranked) {
  const auto start = std::chrono::steady_clock::now();
  EvalOptions dense_options = options;
  if (!reranked) dense_options.rerank_k = 0;
  const auto evaluation = evaluate_dense(model, data, dense_options);
  const auto& metrics = evaluation.metrics;
  char text[256];
  std::snprintf(text, sizeof text, "%s: %s, %zu queries against %zu passages: R@10 %.4f  MRR@10 %.4f",
                what.c_str(), data.name.c_str(), metrics.queries, data.corpus.size(), metrics.recall_at_10,
                metrics.mrr_at_10);
  line = text;
  if (evaluation.reranked) {
    std::snprintf(text, sizeof text, "; re-ranked by Phi (top %lld): R@10 %.4f  MRR@10 %.4f",
                  static_cast<long long>(evaluation.rerank_k), evaluation.reranked->recall_at_10,
                  evaluation.reranked->mrr_at_10);
    line += text;
    *reranked = evaluation.reranked;
  }
  std::snprintf(text, sizeof text, " (%.1f s)", seconds_since(start));
  line += text;
  return metrics;
}

}  // namespace retriever
}  // namespace gradcache
