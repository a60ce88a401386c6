// The BM25 baseline: a Xapian index of a corpus's texts (English stemming, BM25 weighting),
// searched with plain query text. Answers like DenseIndex: the top k of each query.
#pragma once

#include "retriever/data/text_data.h"
#include "retriever/search/exact_top_k.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace gradcache::retriever {

/// How the BM25 index is built and weighted.
struct Bm25Options {
  double k1 = 0.9;  ///< term frequency saturation (Anserini's default)
  double b = 0.4;   ///< document length normalisation (Anserini's default)
  /// Where the Xapian database lives. "": a temporary directory, removed with the index. A
  /// named directory is reused when it holds the same corpus (document count and a fingerprint
  /// of ids and texts, stored as database metadata) and rebuilt otherwise; a directory that
  /// holds something else is refused, never deleted.
  std::string index_dir;
  /// Once it holds a signal number, indexing and searching stop between documents / queries
  /// (StoppedBySignal), leaving no half-built index behind.
  const std::atomic<int>* stop = nullptr;
};

/// A BM25 index over a corpus; document rows are the corpus's rows.
class Bm25Index {
 public:
  /// Indexes `corpus` (or reuses options.index_dir). `log` (may be empty) hears one line on
  /// what was done and how long it took. Throws std::runtime_error naming the directory when
  /// it cannot be created, read or written.
  Bm25Index(const TextCollection& corpus, const Bm25Options& options = {},
            const std::function<void(const std::string&)>& log = {});
  ~Bm25Index();
  Bm25Index(Bm25Index&&) noexcept;
  Bm25Index& operator=(Bm25Index&&) noexcept;

  /// The k best documents of each query text (scores descending, equal scores by row
  /// ascending). Queries are bags of words: their stemmed terms joined by OR, so quotes, AND,
  /// NOT or any other characters are only text. A row with fewer matches (or none: an empty
  /// query) ends in index -1 and score -inf. Results on the CPU, [Q, k].
  TopK search(const std::vector<std::string>& queries, int64_t k) const;

  size_t size() const;           ///< documents indexed
  bool reused() const;           ///< the named directory already held this corpus
  double build_seconds() const;  ///< time spent indexing (0 when reused)
  const std::string& path() const;  ///< the database directory

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gradcache::retriever
