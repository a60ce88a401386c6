// Dense retrieval over document embeddings: exact search (FAISS's IndexFlatIP or the blocked
// exact_top_k) or an approximate FAISS index (HNSW, IVF-PQ), all by inner product, behind one
// interface: build from [D, d] embeddings, then the top k documents of each query.
#pragma once

#include "retriever/search/exact_top_k.h"

#include <ATen/core/Tensor.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace gradcache::retriever {

/// How a DenseIndex searches. Defaults suit the WordNet task (~100k passages, d = 64).
struct DenseIndexOptions {
  /// "exact": the faster exact method (FAISS flat on CPU, measured in docs/figures/search.json; the
  /// blocked exact_top_k on other devices); "flat": FAISS IndexFlatIP; "blocked": exact_top_k;
  /// "hnsw": IndexHNSWFlat; "ivfpq": IndexIVFPQ (approximate, compressed).
  std::string type = "exact";
  int64_t hnsw_m = 32;            ///< HNSW: neighbours per node (memory and recall grow with it)
  int64_t ef_construction = 100;  ///< HNSW: candidates while building (build time vs graph quality)
  int64_t ef_search = 128;        ///< HNSW: candidates while searching (raised to k when smaller)
  int64_t nlist = 0;              ///< IVF: coarse clusters; 0: about sqrt(D)
  int64_t nprobe = 16;            ///< IVF: clusters visited per query
  int64_t pq_m = 0;               ///< PQ: sub-quantizers, must divide d; 0: the largest divisor of d <= d/4
  int64_t pq_bits = 8;            ///< PQ: bits per sub-quantizer code (1..16)
  int64_t train_sample = 0;       ///< IVF-PQ: documents to train on (evenly spaced); 0: min(D, 65536, max(64 nlist, 39 x 2^pq_bits))
  int64_t threads = 0;            ///< OpenMP and BLAS threads while building and searching; 0: leave as set
  /// Once it holds a signal number, building and searching stop between blocks of rows
  /// (StoppedBySignal): a signal during ranking is obeyed, not swallowed (issue 27).
  const std::atomic<int>* stop = nullptr;
};

/// Whether `type` names an index type ("exact", "flat", "blocked", "hnsw", "ivfpq").
bool is_dense_index_type(const std::string& type);
/// Whether the index type returns exactly exact_top_k's documents (exact, flat, blocked).
bool is_exact_index_type(const std::string& type);

/// An index over document embeddings, built once and searched any number of times.
class DenseIndex {
 public:
  /// Builds the index over `docs` [D, d] (floating point, finite, D >= 1; copied as float32
  /// to the CPU for FAISS types). Throws std::invalid_argument on bad options or data (e.g.
  /// --nlist above D, --pq-m not dividing d), naming the option, and FAISS's own errors as
  /// std::runtime_error with a readable message.
  DenseIndex(const at::Tensor& docs, const DenseIndexOptions& options = {});
  ~DenseIndex();
  DenseIndex(DenseIndex&&) noexcept;
  DenseIndex& operator=(DenseIndex&&) noexcept;

  /// The k' = min(k, D) best documents of each query of `queries` [Q, d]: scores descending,
  /// among equal scores the lower document row first (as exact_top_k). An approximate index
  /// may find fewer than k' documents for a query: the row then ends in index -1, score -inf.
  /// Results are on the CPU (on the documents' device for "blocked").
  TopK search(const at::Tensor& queries, int64_t k) const;

  /// The type actually used ("flat" or "blocked" for "exact").
  const std::string& type() const;
  int64_t size() const;       ///< D
  int64_t dimension() const;  ///< d
  /// The parameters in a few words, e.g. "hnsw M 32, efConstruction 100, efSearch 128".
  std::string describe() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The fraction of each query's first k exact documents that `found` lists in its first k,
/// averaged over queries (recall of an approximate search against the exact one; k <= the
/// width of both). Throws std::invalid_argument when the shapes disagree.
double recall_against(const TopK& found, const TopK& exact, int64_t k);

}  // namespace gradcache::retriever
