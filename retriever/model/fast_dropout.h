// Dropout whose masks cost about as much as one multiply: a counter-based hash instead of
// LibTorch 1.13's per-element Bernoulli loop on the CPU, still replayable by Gradient Cache.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>
#include <torch/arg.h>

#include <cstdint>
#include <ostream>

namespace gradcache {
namespace retriever {

/// Dropout of `input` with probability `p` (kept values scaled by 1/(1-p)); the identity when
/// `train` is false or p is 0. On the CPU each call draws one 64-bit seed from the default CPU
/// generator and keeps element i when a hash of (seed, i) is below (1-p) * 2^32: restoring the
/// generator state (gradcache::RngState) reproduces the mask bit for bit, and the backward
/// rebuilds the mask from the seed (nothing stored). Other devices use torch::dropout.
at::Tensor fast_dropout(const at::Tensor& input, double p, bool train);

/// The CPU kernel under fast_dropout, for tests: input * mask(seed, p) / (1-p), no autograd.
at::Tensor dropout_with_seed(const at::Tensor& input, uint64_t seed, double p);

/// Options of FastDropout, as torch::nn::DropoutOptions.
struct FastDropoutOptions {
  /* implicit */ FastDropoutOptions(double p = 0.5) : p_(p) {}  // NOLINT: as torch::nn::DropoutOptions
  /// Probability of zeroing an element, in [0, 1).
  TORCH_ARG(double, p);
};

/// A drop-in for torch::nn::Dropout (same options, follows is_training()) that calls
/// fast_dropout: the built-in encoder's dropout no longer costs a forward pass of its own.
class FastDropoutImpl : public torch::nn::Cloneable<FastDropoutImpl> {
 public:
  explicit FastDropoutImpl(const FastDropoutOptions& options = {});
  /// Checks p; nothing else to (re)initialise.
  void reset() override;
  at::Tensor forward(const at::Tensor& input);
  /// "gradcache::retriever::FastDropout(p=0.1)".
  void pretty_print(std::ostream& stream) const override;

  FastDropoutOptions options;
};
TORCH_MODULE(FastDropout);

}  // namespace retriever
}  // namespace gradcache
