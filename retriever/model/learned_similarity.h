// The retriever's learned similarity Phi (--similarity mlp): the library's PairMlp, optionally
// on top of the encoders' scaled dot product, trained with them through the dual gradient
// cache (gradcache/similarity.h) and used to re-rank the dense top K.
#pragma once

#include <gradcache/similarity.h>

#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>

namespace gradcache {
namespace retriever {

/// The pair MLP's options (dim, hidden, dropout: PairMlpOptions, declared once there) and the
/// dot term.
struct LearnedSimilarityOptions : PairMlpOptions {
  LearnedSimilarityOptions(int64_t dim, int64_t hidden) : PairMlpOptions(dim, hidden) {}
  /// PairMlpOptions' dropout, its setter returning this type so that a chain can go on to
  /// dot_temperature (it hides the base's setters, whose rvalue overload would return the base).
  LearnedSimilarityOptions& dropout(double p) {
    PairMlpOptions::dropout(p);
    return *this;
  }
  const double& dropout() const noexcept { return PairMlpOptions::dropout(); }
  /// > 0: Phi adds q . p / dot_temperature to the MLP, so that the encoders keep being trained
  /// for the dot product the first stage ranks by (the MLP learns a correction); 0: the MLP alone.
  TORCH_ARG(double, dot_temperature) = 0.0;
};

/// Phi(q, p) = MLP(q, p) [+ q . p / dot_temperature]. forward(q [a, d], p [b, d]) -> [a, b]
/// (all pairs, what the dual cache scores); score_pairs(q [k, d], p [k, d]) -> [k] (aligned
/// pairs, what re-ranking scores).
struct LearnedSimilarityImpl : torch::nn::Module {
  explicit LearnedSimilarityImpl(LearnedSimilarityOptions options);
  at::Tensor forward(const at::Tensor& q, const at::Tensor& p);
  at::Tensor score_pairs(const at::Tensor& q, const at::Tensor& p);

  LearnedSimilarityOptions options;
  PairMlp mlp{nullptr};
};
TORCH_MODULE(LearnedSimilarity);

}  // namespace retriever
}  // namespace gradcache
