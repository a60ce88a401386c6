// Retrieval evaluation of a tokenized evaluation set (tokenize_eval_set): dense search with any
// index (evaluate_dense; every Matryoshka prefix from one encoding: evaluate_prefixes; Phi's
// re-ranking of the dense top k), or BM25 (evaluate_bm25); Recall@k, MRR@10 and nDCG@10. The
// *_and_describe forms also time the evaluation and describe it in a line for a log.
#pragma once

#include "retriever/data/text_data.h"
#include "retriever/model/encode_all.h"
#include "retriever/model/encoders.h"
#include "retriever/model/tokenizer.h"
#include "retriever/search/bm25.h"
#include "retriever/search/dense_index.h"
#include "retriever/search/metrics.h"

#include <gradcache/model.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace gradcache {
namespace retriever {

/// An evaluation set in token form, ready to be encoded any number of times.
struct TokenizedEvalSet {
  std::string name;                                      ///< e.g. "wordnet test"
  std::vector<std::vector<int64_t>> corpus, queries;     ///< token ids
  std::vector<std::unordered_map<int64_t, int>> relevant;  ///< per query: corpus row -> grade
};

/// Tokenizes `corpus` and `queries` and maps `qrels` onto corpus rows (judgements of ids not
/// in those collections are left out: check_judgements reports them).
TokenizedEvalSet tokenize_eval_set(std::string name, const TextCollection& corpus, const TextCollection& queries,
                                   const Qrels& qrels, const Tokenizer& tokenizer, size_t query_max_len,
                                   size_t passage_max_len);

struct EvalOptions {
  int64_t batch_size = 512;
  int64_t top_k = 100;
  c10::Device device = c10::Device(c10::kCPU);
  /// How the corpus is searched (default: the faster exact method).
  DenseIndexOptions index;
  /// Set (to a signal number) from elsewhere to stop between encoding batches: StoppedBySignal.
  const std::atomic<int>* stop = nullptr;
  /// > 0: rank with the embeddings' first prefix_dim dimensions only (Matryoshka
  /// representations), re-normalised when normalize_prefix (the encoder normalises).
  int64_t prefix_dim = 0;
  bool normalize_prefix = false;
  /// > 0 and the model has a learned similarity Phi: also re-rank each query's dense top
  /// rerank_k with Phi (DenseEvaluation::reranked). 0: the dense ranking only.
  int64_t rerank_k = 0;
  /// Hears a line as each search starts ("searching with exact"), so that a log shows the
  /// phase a long evaluation is in (may be empty).
  std::function<void(const std::string&)> log;
};

/// A dense evaluation and how its search went.
struct DenseEvaluation {
  RetrievalMetrics metrics;
  std::string index;  ///< DenseIndex::describe()
  double encode_seconds = 0, index_seconds = 0, search_seconds = 0;
  /// With an approximate index: the fraction of the exact search's top 10 (top 100) that it
  /// found in its own, averaged over queries; unset for an exact index (and @100 when
  /// top_k < 100).
  std::optional<double> recall_vs_exact_at_10, recall_vs_exact_at_100;
  /// With EvalOptions::rerank_k and a model with Phi: the metrics of the same dense top
  /// rerank_k re-ordered by Phi (the second stage), and how long Phi took.
  std::optional<RetrievalMetrics> reranked;
  int64_t rerank_k = 0;
  double rerank_seconds = 0;
};

/// Encodes the corpus and the queries, ranks the corpus for every query with the index
/// options.index describes, and computes Recall@1/10/100, MRR@10 and nDCG@10.
DenseEvaluation evaluate_dense(BiEncoder& model, const TokenizedEvalSet& data, const EvalOptions& options = {});

/// Encodes once, then evaluates the first `dims` dimensions of the embeddings each (as
/// evaluate_dense with options.prefix_dim = dim, options.normalize_prefix = `normalize`; a
/// dim of 0 is all of them).
std::vector<PrefixMetrics> evaluate_prefixes(BiEncoder& model, const TokenizedEvalSet& data,
                                             const EvalOptions& options, const std::vector<int64_t>& dims,
                                             bool normalize);

/// evaluate_prefixes, timed, each prefix described in a line for a log as evaluate_and_describe
/// does ("what @dim: name, N queries against M passages: R@10 ...", "what: ..." for dim 0).
std::vector<PrefixMetrics> evaluate_prefixes_and_describe(BiEncoder& model, const TokenizedEvalSet& data,
                                                          const EvalOptions& options, const std::vector<int64_t>& dims,
                                                          bool normalize, const std::string& what,
                                                          std::vector<std::string>& lines);

/// The BM25 baseline of an evaluation set and how long it took.
struct Bm25Evaluation {
  RetrievalMetrics metrics;
  double index_seconds = 0, search_seconds = 0;
  bool reused = false;  ///< the --bm25-index directory already held this corpus
};

/// Indexes `corpus` with BM25 (Bm25Index), ranks it for every text of `queries`, and scores
/// the ranking with `data`'s judgements (`data` must be tokenize_eval_set of the same corpus
/// and queries). `log` (may be empty) hears what indexing did.
Bm25Evaluation evaluate_bm25(const TextCollection& corpus, const TextCollection& queries,
                             const TokenizedEvalSet& data, const Bm25Options& options, int64_t top_k,
                             const std::function<void(const std::string&)>& log = {});

/// evaluate(), timed, and described in one line for a log in `line`:
/// "what: name, N queries against M passages: R@10 0.1234  MRR@10 0.0567 (1.2 s)".
/// With `reranked` given (and options.rerank_k, and a model with Phi): the re-ranked metrics
/// there too, and in the line: "...; re-ranked by Phi (top 100): R@10 0.2345  MRR@10 0.0789".
RetrievalMetrics evaluate_and_describe(BiEncoder& model, const TokenizedEvalSet& data, const EvalOptions& options,
                                       const std::string& what, std::string& line,
                                       std::optional<RetrievalMetrics>* reranked = nullptr);

}  // namespace retriever
}  // namespace gradcache
