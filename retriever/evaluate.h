// Retrieval evaluation: encode a corpus and queries, exact top-k, standard metrics.
#pragma once

#include "retriever/encoder.h"
#include "retriever/metrics.h"
#include "retriever/text_data.h"
#include "retriever/tokenizer.h"

#include <gradcache/model.h>

#include <atomic>
#include <cstdint>
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

/// An evaluation stopped before its end by a signal (see EvalOptions::stop): nothing computed.
class EvalStopped : public std::runtime_error {
 public:
  explicit EvalStopped(int signal);
  int signal() const { return signal_; }

 private:
  int signal_;
};

/// Representations [N, d] of token sequences, computed without graph in batches of
/// `batch_size`, shortest sequences together (less padding), returned in input order.
/// The model's training mode is left as it was. Throws EvalStopped before a batch once
/// `stop` (when given) holds a signal number.
at::Tensor encode_all(const gradcache::Model& model, const std::vector<std::vector<int64_t>>& tokens,
                      int64_t batch_size, const c10::Device& device, const std::atomic<int>* stop = nullptr);

struct EvalOptions {
  int64_t batch_size = 512;
  int64_t top_k = 100;
  c10::Device device = c10::Device(c10::kCPU);
  /// Set (to a signal number) from elsewhere to stop between encoding batches: EvalStopped.
  const std::atomic<int>* stop = nullptr;
};

/// Ranks every corpus document for every query (exact, blocked) and computes
/// Recall@1/10/100, MRR@10 and nDCG@10.
RetrievalMetrics evaluate(BiEncoder& model, const TokenizedEvalSet& data, const EvalOptions& options = {});

/// evaluate(), timed, and described in one line for a log in `line`:
/// "what: name, N queries against M passages: R@10 0.1234  MRR@10 0.0567 (1.2 s)".
RetrievalMetrics evaluate_and_describe(BiEncoder& model, const TokenizedEvalSet& data, const EvalOptions& options,
                                       const std::string& what, std::string& line);

}  // namespace retriever
}  // namespace gradcache
