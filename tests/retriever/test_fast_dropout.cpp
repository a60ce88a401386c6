// fast_dropout (retriever/model/fast_dropout.h): masks replay bit for bit from the default CPU
// generator's state (what Gradient Cache restores), and the statistics are dropout's.
#include "retriever/model/encoders.h"
#include "retriever/model/fast_dropout.h"

#include <gradcache/rng_state.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

namespace gr = gradcache::retriever;

namespace {

// Values away from 0, so that an output of 0 means a dropped element.
torch::Tensor nonzero_input(int64_t n, torch::Dtype dtype = torch::kFloat) {
  torch::manual_seed(1);
  return (torch::rand({n}) + 0.5).to(dtype);
}

// The bound on a kept fraction of n Bernoulli(q) draws: 6 binomial standard deviations
// (a false alarm about once in 10^9 runs; the seeds are fixed anyway).
double six_sigma(double q, int64_t n) { return 6 * std::sqrt(q * (1 - q) / static_cast<double>(n)); }

}  // namespace

TEST(FastDropout, ReplaysBitIdenticallyAfterTheGeneratorStateIsRestored) {
  const auto x = nonzero_input(100000);
  const auto state = gradcache::RngState::capture();
  const auto first = gr::fast_dropout(x, 0.1, true), second = gr::fast_dropout(x, 0.1, true);
  state.restore();
  EXPECT_TRUE(torch::equal(gr::fast_dropout(x, 0.1, true), first));
  EXPECT_TRUE(torch::equal(gr::fast_dropout(x, 0.1, true), second));
  EXPECT_FALSE(torch::equal(first, second)) << "two calls drew the same mask";
}

TEST(FastDropout, NoGradAndInferenceModeDrawTheMasksOfTheGradPass) {
  // The cache's step 1 runs without grad, its replay with grad: both must see one mask.
  const auto x = nonzero_input(50000).requires_grad_(true);
  const auto state = gradcache::RngState::capture();
  const auto with_grad = gr::fast_dropout(x, 0.2, true);
  state.restore();
  torch::Tensor no_grad, inference;
  {
    torch::NoGradGuard guard;
    no_grad = gr::fast_dropout(x, 0.2, true);
  }
  state.restore();
  {
    c10::InferenceMode guard;
    inference = gr::fast_dropout(x.detach(), 0.2, true);
  }
  EXPECT_TRUE(torch::equal(with_grad.detach(), no_grad));
  EXPECT_TRUE(torch::equal(with_grad.detach(), inference));
}

TEST(FastDropout, KeepsOneMinusPOfTheElementsIndependentlyAndScalesThemBy1OverOneMinusP) {
  const int64_t n = int64_t{1} << 22;
  const auto x = nonzero_input(n);
  for (double p : {0.1, 0.5, 0.9}) {
    const auto y = gr::fast_dropout(x, p, true);
    const auto kept = y.ne(0);
    const double q = 1 - p;
    EXPECT_NEAR(kept.to(torch::kDouble).mean().item<double>(), q, six_sigma(q, n)) << "p " << p;
    // Neighbours independent: both kept with probability q^2 (a poor hash correlates them).
    const auto both = kept.slice(0, 0, n - 1).logical_and(kept.slice(0, 1, n));
    EXPECT_NEAR(both.to(torch::kDouble).mean().item<double>(), q * q, six_sigma(q * q, n - 1)) << "p " << p;
    EXPECT_TRUE(torch::allclose(y.masked_select(kept), x.masked_select(kept) / q, 1e-6, 0)) << "p " << p;
  }
}

TEST(FastDropout, BackwardIsTheGradientThroughTheSameMaskScaled) {
  const double p = 0.3;
  const auto x = nonzero_input(200000).requires_grad_(true);
  const auto y = gr::fast_dropout(x, p, true);
  const auto grad = torch::randn_like(y);
  y.backward(grad);
  const auto mask = y.detach().ne(0).to(torch::kFloat);
  EXPECT_TRUE(torch::allclose(x.grad(), grad * mask / (1 - p), 1e-6, 0));
  EXPECT_GT(mask.sum().item<double>(), 0);
}

TEST(FastDropout, MasksDoNotDependOnTheThreadCount) {
  // An odd size and 3 threads: ranges start in the middle of a pair of elements.
  const auto x = nonzero_input(3 * 65537);
  const int threads = at::get_num_threads();
  const auto one = gr::dropout_with_seed(x, 12345, 0.4);
  at::set_num_threads(3);
  const auto three = gr::dropout_with_seed(x, 12345, 0.4);
  at::set_num_threads(threads);
  EXPECT_TRUE(torch::equal(one, three));
}

TEST(FastDropout, DifferentCallsDrawDifferentMasks) {
  const auto x = nonzero_input(100000);
  const auto a = gr::fast_dropout(x, 0.5, true).ne(0), b = gr::fast_dropout(x, 0.5, true).ne(0);
  // Independent masks agree on about half the elements.
  EXPECT_NEAR(a.eq(b).to(torch::kDouble).mean().item<double>(), 0.5, six_sigma(0.5, 100000));
}

TEST(FastDropout, EvalModeAndPZeroAreTheIdentityAndPOneIsRefused) {
  const auto x = nonzero_input(1000);
  gr::FastDropout drop(0.3);
  drop->eval();
  EXPECT_TRUE(torch::equal(drop(x), x));
  drop->train();
  EXPECT_FALSE(torch::equal(drop(x), x));
  EXPECT_TRUE(torch::equal(gr::fast_dropout(x, 0.0, true), x));
  EXPECT_THROW(gr::FastDropout(1.0), c10::Error);
}

TEST(FastDropout, Bf16AndDoubleReplayAndScale) {
  for (auto dtype : {torch::kBFloat16, torch::kDouble}) {
    const auto x = nonzero_input(20000, dtype);
    const auto state = gradcache::RngState::capture();
    const auto y = gr::fast_dropout(x, 0.25, true);
    state.restore();
    EXPECT_TRUE(torch::equal(gr::fast_dropout(x, 0.25, true), y));
    const auto kept = y.ne(0);
    EXPECT_TRUE(torch::allclose(y.masked_select(kept).to(torch::kDouble),
                                x.masked_select(kept).to(torch::kDouble) / 0.75, dtype == torch::kDouble ? 1e-12 : 1e-2,
                                0));
  }
}

TEST(FastDropout, EncoderForwardReplaysAfterTheGeneratorStateIsRestored) {
  torch::manual_seed(0);
  gr::TransformerEncoder encoder(gr::EncoderOptions(40).dim(16).heads(2).layers(2).ffn_dim(32).max_len(8).dropout(0.2));
  encoder->train();
  gr::TokenBatch batch{{"input_ids", torch::randint(1, 40, {4, 8})},
                       {"attention_mask", torch::ones({4, 8}, torch::kBool)}};
  const auto state = gradcache::RngState::capture();
  const auto first = encoder->forward(batch);
  state.restore();
  EXPECT_TRUE(torch::equal(encoder->forward(batch), first));
  EXPECT_FALSE(torch::equal(encoder->forward(batch), first)) << "dropout drew the same masks again";
  encoder->eval();
  EXPECT_TRUE(torch::equal(encoder->forward(batch), encoder->forward(batch)));
}
