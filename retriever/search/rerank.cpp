#include "retriever/search/rerank.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace gradcache {
namespace retriever {

TopK rerank_top_k(const TopK& dense, const at::Tensor& queries, const at::Tensor& docs, LearnedSimilarity& phi,
                  int64_t k, int64_t pairs_per_batch) {
  if (k < 1 || pairs_per_batch < 1) {
    throw std::invalid_argument("rerank_top_k: k and pairs_per_batch must be positive, got " + std::to_string(k) +
                                " and " + std::to_string(pairs_per_batch));
  }
  if (dense.indices.dim() != 2 || dense.indices.size(0) != queries.size(0)) {
    throw std::invalid_argument("rerank_top_k: the dense ranking does not have one row per query");
  }
  c10::NoGradGuard no_grad;
  const int64_t n = queries.size(0), width = std::min(k, dense.indices.size(1));
  const auto candidates = dense.indices.narrow(1, 0, width).to(docs.device());
  const int64_t rows_per_batch = std::max<int64_t>(1, pairs_per_batch / std::max<int64_t>(1, width));
  std::vector<at::Tensor> scores, indices;
  for (int64_t start = 0; start < n; start += rows_per_batch) {
    const int64_t rows = std::min(rows_per_batch, n - start);
    const auto idx = candidates.narrow(0, start, rows);                // [rows, width], -1: none
    const auto cand = docs.index_select(0, idx.clamp_min(0).flatten());  // [rows * width, d]
    const auto q = queries.narrow(0, start, rows).repeat_interleave(width, 0);
    auto s = phi->score_pairs(q, cand).view({rows, width}).to(at::kFloat);
    s.masked_fill_(idx < 0, -std::numeric_limits<float>::infinity());
    // Stable: among equal Phi scores the dense order stays.
    const auto sorted = at::sort(s, /*stable=*/true, /*dim=*/1, /*descending=*/true);
    scores.push_back(std::get<0>(sorted));
    indices.push_back(idx.gather(1, std::get<1>(sorted)));
  }
  return {at::cat(scores, 0), at::cat(indices, 0)};
}

}  // namespace retriever
}  // namespace gradcache
