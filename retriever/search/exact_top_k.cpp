#include "retriever/search/exact_top_k.h"
#include "retriever/search/tensor_shape.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>

namespace gradcache::retriever {
namespace {

void check_embeddings(const at::Tensor& t, const char* name) {
  if (!t.defined()) throw std::invalid_argument(std::string("exact_top_k: ") + name + " is an undefined tensor");
  if (t.dim() != 2) {
    throw std::invalid_argument(std::string("exact_top_k: ") + name + " must be 2-d [rows, dim], got shape " +
                                shape_of(t));
  }
  if (!t.is_floating_point()) {
    throw std::invalid_argument(std::string("exact_top_k: ") + name + " must be floating point, got " +
                                std::string(c10::toString(t.scalar_type())));
  }
}

/// The running top-k of a query block and the next block's candidates merged into the new
/// running top-k. Both inputs must list equal scores in ascending document order and every
/// `next` index must exceed every `running` index (blocks are scanned in document order); a stable
/// descending sort then keeps (score desc, index asc) order.
std::tuple<at::Tensor, at::Tensor> merge(const at::Tensor& running_scores, const at::Tensor& running_indices,
                                         const at::Tensor& next_scores, const at::Tensor& next_indices, int64_t k) {
  const at::Tensor scores = at::cat({running_scores, next_scores}, 1);
  const at::Tensor indices = at::cat({running_indices, next_indices}, 1);
  const auto [sorted, order] = scores.sort(/*stable=*/true, /*dim=*/1, /*descending=*/true);
  const int64_t keep = std::min(k, scores.size(1));
  return {sorted.narrow(1, 0, keep), indices.gather(1, order.narrow(1, 0, keep))};
}

/// Columns (ascending) of the `count` highest scores in each row of `scores`, keeping the lowest
/// columns among scores equal to the count-th highest. Several passes over the block: only for
/// rows where topk's arbitrary choice among ties mattered.
at::Tensor top_columns_exact(const at::Tensor& scores, int64_t count) {
  const at::Tensor threshold = std::get<0>(scores.topk(count, 1, true, true)).narrow(1, count - 1, 1);
  const at::Tensor greater = scores > threshold;
  const at::Tensor equal = scores == threshold;
  const at::Tensor ties_needed = count - greater.sum(1, /*keepdim=*/true);
  const at::Tensor take = greater.logical_or(equal.logical_and(equal.cumsum(1).le(ties_needed)));
  // Exactly `count` per row by construction; nonzero lists them row by row, columns ascending.
  return take.nonzero().select(1, 1).view({scores.size(0), count});
}

struct BlockResult {
  at::Tensor scores, indices;
  at::Tensor arbitrary_ties;  ///< [rows] bool: topk chose among ties at the k-th place (fast path only)
};

/// Top-k of `queries` (one query block) against all of `docs`, one document block at a time.
/// Fast path (exact_ties false): topk with one extra candidate per block shows whether the k-th
/// and (k+1)-th scores are equal, i.e. whether topk's choice among ties could be wrong; such rows
/// are flagged for an exact recomputation. Exact path: top_columns_exact on every block.
BlockResult scan_documents(const at::Tensor& queries, const at::Tensor& docs, int64_t k, int64_t doc_block,
                           bool exact_ties) {
  const int64_t rows = queries.size(0);
  const int64_t num_docs = docs.size(0);
  const auto index_options = queries.options().dtype(at::kLong);
  at::Tensor running_scores = at::empty({rows, 0}, queries.options());
  at::Tensor running_indices = at::empty({rows, 0}, index_options);
  at::Tensor arbitrary_ties = at::zeros({rows}, queries.options().dtype(at::kBool));

  for (int64_t start = 0; start < num_docs; start += doc_block) {
    const int64_t count = std::min(doc_block, num_docs - start);
    const at::Tensor scores = queries.mm(docs.narrow(0, start, count).t());  // [rows, count]
    const int64_t take = std::min(k, count);
    at::Tensor columns;  // [rows, take], ascending in each row
    if (take == count) {
      columns = at::arange(count, index_options).expand({rows, count});
    } else if (exact_ties) {
      columns = top_columns_exact(scores, take);
    } else {
      const auto [values, top] = scores.topk(take + 1, 1, /*largest=*/true, /*sorted=*/true);
      arbitrary_ties.logical_or_(values.select(1, take).eq(values.select(1, take - 1)));
      columns = std::get<0>(top.narrow(1, 0, take).sort(1));
    }
    std::tie(running_scores, running_indices) =
        merge(running_scores, running_indices, scores.gather(1, columns), columns + start, k);
  }
  return {running_scores, running_indices, arbitrary_ties};
}

}  // namespace

TopK exact_top_k(const at::Tensor& queries, const at::Tensor& docs, int64_t k, int64_t query_block,
                 int64_t doc_block) {
  check_embeddings(queries, "queries");
  check_embeddings(docs, "docs");
  if (queries.size(1) != docs.size(1)) {
    throw std::invalid_argument("exact_top_k: queries " + shape_of(queries) + " and docs " + shape_of(docs) +
                                " differ in embedding size; encode both with the same model");
  }
  if (queries.scalar_type() != docs.scalar_type() || queries.device() != docs.device()) {
    std::ostringstream out;
    out << "exact_top_k: queries (" << queries.scalar_type() << ", " << queries.device() << ") and docs ("
        << docs.scalar_type() << ", " << docs.device() << ") must have the same dtype and device; convert one";
    throw std::invalid_argument(out.str());
  }
  if (docs.size(0) == 0) throw std::invalid_argument("exact_top_k: docs is empty; there is nothing to search");
  if (k < 1) throw std::invalid_argument("exact_top_k: k must be >= 1, got " + std::to_string(k));
  if (query_block < 1 || doc_block < 1) {
    throw std::invalid_argument("exact_top_k: block sizes must be >= 1, got query_block " +
                                std::to_string(query_block) + " and doc_block " + std::to_string(doc_block));
  }
  if (!queries.isfinite().all().item<bool>() || !docs.isfinite().all().item<bool>()) {
    throw std::invalid_argument("exact_top_k: the embeddings contain NaN or Inf (a diverged encoder?); "
                                "scores would be meaningless");
  }

  const int64_t num_queries = queries.size(0);
  const int64_t kept = std::min(k, docs.size(0));
  TopK result{at::empty({num_queries, kept}, queries.options().dtype(at::kFloat)),
              at::empty({num_queries, kept}, queries.options().dtype(at::kLong))};
  for (int64_t start = 0; start < num_queries; start += query_block) {
    const int64_t count = std::min(query_block, num_queries - start);
    const at::Tensor block = queries.narrow(0, start, count);
    BlockResult found = scan_documents(block, docs, kept, doc_block, /*exact_ties=*/false);
    // One host synchronisation per query block; ties at the k-th place are rare with real embeddings
    // (duplicate documents), so the exact rescan touches few rows.
    if (found.arbitrary_ties.any().item<bool>()) {
      const at::Tensor rows = found.arbitrary_ties.nonzero().select(1, 0);
      const BlockResult exact = scan_documents(block.index_select(0, rows), docs, kept, doc_block, /*exact_ties=*/true);
      found.scores.index_copy_(0, rows, exact.scores);
      found.indices.index_copy_(0, rows, exact.indices);
    }
    result.scores.narrow(0, start, count).copy_(found.scores);
    result.indices.narrow(0, start, count).copy_(found.indices);
  }
  return result;
}

std::vector<std::vector<int64_t>> ranked_lists(const TopK& top) {
  const at::Tensor indices = top.indices.to(at::kCPU).contiguous();
  const auto a = indices.accessor<int64_t, 2>();
  std::vector<std::vector<int64_t>> ranked(static_cast<size_t>(indices.size(0)));
  for (int64_t q = 0; q < indices.size(0); ++q) {
    for (int64_t i = 0; i < indices.size(1) && a[q][i] >= 0; ++i) ranked[q].push_back(a[q][i]);
  }
  return ranked;
}

}  // namespace gradcache::retriever
