// Two-stage retrieval: the dense top K re-ranked by the learned similarity Phi.
#pragma once

#include "retriever/model/learned_similarity.h"
#include "retriever/search/exact_top_k.h"

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace gradcache {
namespace retriever {

/// Each query's first `k` dense candidates (`dense`, as exact_top_k returns them; -1 rows of an
/// approximate search are left out, last) re-ordered by Phi(q, p) descending, ties by dense
/// rank. queries [Q, d] and docs [D, d] are the representations `dense` was searched with.
/// Phi runs without graph in its current mode (the caller sets eval) on `pairs_per_batch`
/// (query, candidate) pairs at a time. Returns scores = Phi's, indices = document rows, [Q, k'].
TopK rerank_top_k(const TopK& dense, const at::Tensor& queries, const at::Tensor& docs, LearnedSimilarity& phi,
                  int64_t k, int64_t pairs_per_batch = 8192);

}  // namespace retriever
}  // namespace gradcache
