// Exact maximum-inner-product search over document embeddings, in blocks.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace gradcache::retriever {

/// The k best documents of each query.
struct TopK {
  at::Tensor scores;   ///< [Q, k'] float32, each row in descending order
  at::Tensor indices;  ///< [Q, k'] int64 document rows; among equal scores the lower index comes first
};

/// Exact top-k by inner product of every query with every document row, k' = min(k, D).
///
/// Scans the documents in blocks of `doc_block` rows and the queries in blocks of `query_block`
/// rows, merging each block's top-k into a running top-k, so no [Q, D] score matrix is ever held:
/// memory O(query_block * doc_block + Q * k).
///
/// Ties are deterministic: rows are ordered by (score descending, document index ascending), and
/// when equal scores straddle the k-th place the lower document indices are kept, the same result
/// as a stable descending sort of the full score row. (Plain topk picks arbitrarily among equal
/// scores; rows where that happens are detected and recomputed exactly, at the cost of one host
/// synchronisation per query block.)
///
/// Inputs: `queries` [Q, d] and `docs` [D, d] (D >= 1), floating point, same dtype and device,
/// finite (NaN/Inf is rejected: it usually means the encoder diverged). k, query_block and
/// doc_block must be >= 1. Results are on the inputs' device. Throws std::invalid_argument
/// on bad arguments.
TopK exact_top_k(const at::Tensor& queries, const at::Tensor& docs, int64_t k, int64_t query_block = 1024,
                 int64_t doc_block = 16384);

/// Each query's document rows in rank order, without the -1 rows an approximate search or BM25
/// pads with when it found fewer than k documents (the form compute_metrics takes).
std::vector<std::vector<int64_t>> ranked_lists(const TopK& top);

}  // namespace gradcache::retriever
