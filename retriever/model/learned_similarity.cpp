#include "retriever/model/learned_similarity.h"

#include <ATen/ATen.h>

namespace gradcache {
namespace retriever {

LearnedSimilarityImpl::LearnedSimilarityImpl(LearnedSimilarityOptions options_) : options(std::move(options_)) {
  TORCH_CHECK(options.dot_temperature() >= 0, "LearnedSimilarity: dot_temperature must be >= 0 (0: no dot term), got ",
              options.dot_temperature());
  mlp = register_module("mlp", PairMlp(static_cast<const PairMlpOptions&>(options)));
}

at::Tensor LearnedSimilarityImpl::forward(const at::Tensor& q, const at::Tensor& p) {
  auto scores = mlp->forward(q, p);
  if (options.dot_temperature() > 0) scores = scores + q.matmul(p.t()) / options.dot_temperature();
  return scores;
}

at::Tensor LearnedSimilarityImpl::score_pairs(const at::Tensor& q, const at::Tensor& p) {
  auto scores = mlp->forward_concat(q, p);
  if (options.dot_temperature() > 0) scores = scores + (q * p).sum(1) / options.dot_temperature();
  return scores;
}

}  // namespace retriever
}  // namespace gradcache
