#include "retriever/model/fast_dropout.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <torch/autograd.h>

#include <algorithm>
#include <cmath>
#include <mutex>

namespace gradcache {
namespace retriever {

namespace {

// SplitMix64's output function on the element's counter: independent, well-mixed 64 bits per
// index (the generator passes BigCrush), no state, so any thread can compute any element.
inline uint64_t mix(uint64_t seed, uint64_t index) {
  uint64_t z = seed + (index + 1) * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Elements whose 32 bits of hash fall below this are kept: P(keep) = (1-p) to within 2^-32.
uint64_t keep_threshold(double p) {
  const double t = std::floor((1.0 - p) * 4294967296.0);
  return t >= 4294967296.0 ? uint64_t{1} << 32 : static_cast<uint64_t>(t);
}

uint64_t draw_seed() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return at::check_generator<at::CPUGeneratorImpl>(gen)->random64();
}

// The scaling is diagonal and linear, so its backward is itself with the same seed; the
// seed is all that is saved, and double backward works too.
struct SeededDropout : public torch::autograd::Function<SeededDropout> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input, int64_t seed, double p) {
    ctx->saved_data["seed"] = seed;
    ctx->saved_data["p"] = p;
    return dropout_with_seed(input, static_cast<uint64_t>(seed), p);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto seed = ctx->saved_data["seed"].toInt();
    const auto p = ctx->saved_data["p"].toDouble();
    return {SeededDropout::apply(grads[0], seed, p), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor dropout_with_seed(const at::Tensor& input, uint64_t seed, double p) {
  TORCH_CHECK(input.device().is_cpu() && input.is_floating_point(), "dropout_with_seed: a floating-point CPU tensor");
  TORCH_CHECK(p >= 0 && p < 1, "dropout: p must be in [0, 1), got ", p);
  const auto in = input.contiguous();
  auto out = at::empty_like(in, at::MemoryFormat::Contiguous);
  const uint64_t threshold = keep_threshold(p);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, in.scalar_type(), "fast_dropout", [&] {
    using opmath_t = at::opmath_type<scalar_t>;  // float for bf16/half: one rounding, as torch's
    const opmath_t scale = static_cast<opmath_t>(1.0 / (1.0 - p));
    const scalar_t* src = in.data_ptr<scalar_t>();
    scalar_t* dst = out.data_ptr<scalar_t>();
    auto keep_and_scale = [&](int64_t i, uint64_t bits) {
      dst[i] = static_cast<scalar_t>(static_cast<opmath_t>(src[i]) * (bits < threshold ? scale : opmath_t(0)));
    };
    // One hash decides a pair of neighbours, elements 2k and 2k+1 (its high and low 32 bits);
    // hashes are computed a block at a time, a loop the compiler can vectorise (faster here).
    const int64_t n = in.numel();
    at::parallel_for(0, (n + 1) / 2, 1 << 14, [&](int64_t begin, int64_t end) {
      constexpr int64_t kBlock = 256;
      uint64_t hashes[kBlock];
      for (int64_t first = begin; first < end; first += kBlock) {
        const int64_t count = std::min(kBlock, end - first);
        for (int64_t k = 0; k < count; ++k) hashes[k] = mix(seed, static_cast<uint64_t>(first + k));
        for (int64_t k = 0; k < count; ++k) {
          const int64_t i = 2 * (first + k);
          keep_and_scale(i, hashes[k] >> 32);
          if (i + 1 < n) keep_and_scale(i + 1, hashes[k] & 0xffffffffULL);
        }
      }
    });
  });
  return out;
}

at::Tensor fast_dropout(const at::Tensor& input, double p, bool train) {
  TORCH_CHECK(p >= 0 && p < 1, "dropout: p must be in [0, 1), got ", p);
  if (!train || p == 0) return input;
  if (!input.device().is_cpu() || !input.is_floating_point()) return at::dropout(input, p, true);
  const auto seed = static_cast<int64_t>(draw_seed());
  // Without a graph to record (no grad, InferenceMode) the kernel alone does.
  if (!at::GradMode::is_enabled() || !input.requires_grad()) return dropout_with_seed(input, seed, p);
  return SeededDropout::apply(input, seed, p);
}

FastDropoutImpl::FastDropoutImpl(const FastDropoutOptions& options_) : options(options_) { reset(); }

void FastDropoutImpl::reset() {
  TORCH_CHECK(options.p() >= 0 && options.p() < 1, "dropout: p must be in [0, 1), got ", options.p());
}

at::Tensor FastDropoutImpl::forward(const at::Tensor& input) { return fast_dropout(input, options.p(), is_training()); }

void FastDropoutImpl::pretty_print(std::ostream& stream) const {
  stream << "gradcache::retriever::FastDropout(p=" << options.p() << ")";
}

}  // namespace retriever
}  // namespace gradcache
