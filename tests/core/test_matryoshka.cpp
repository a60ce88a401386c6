// The Matryoshka loss: its value, its exactness under the cache, and its inner losses.
//
// Tolerances as in test_grad_cache.cpp: the cache and the streaming tiles only change the
// order of summation, so float64 errors are about n * eps for n ~ 100 terms (kTol64 = 1e-13,
// relative to the largest gradient entry). A missing or mis-weighted prefix changes the
// gradients by order 1e-2..1.
#include "test_util.h"

#include <gradcache/matryoshka_loss.h>

#include <cmath>
#include <limits>

namespace gc = gradcache;
using gctest::error_of;
using gctest::kTol64;
using gctest::max_rel_error;
using gctest::report_error;

namespace {

torch::Tensor unit_prefix(const torch::Tensor& x, int64_t m) {
  return torch::nn::functional::normalize(x.slice(1, 0, m), torch::nn::functional::NormalizeFuncOptions().dim(1));
}

gc::MatryoshkaOptions options_8_4_2() {
  return gc::MatryoshkaOptions().dims({8, 4, 2}).weights({1.0, 0.5, 2.0}).normalize_prefixes(true);
}

std::vector<torch::Tensor> params_of(gctest::Mlp& q, gctest::Mlp& p) {
  auto out = q->parameters();
  for (auto& t : p->parameters()) out.push_back(t);
  return out;
}

}  // namespace

TEST(Matryoshka, ValueIsTheWeightedSumOverPrefixes) {
  torch::manual_seed(0);
  auto q = torch::randn({6, 8}, torch::kFloat64), p = torch::randn({12, 8}, torch::kFloat64);
  const auto inner = gc::SimpleContrastiveLoss(gc::ContrastiveLossOptions().temperature(0.1));
  const auto loss = gc::MatryoshkaLoss(inner, options_8_4_2())({q, p}, {});
  // The full width is left as it is; the shorter prefixes are re-normalised.
  const auto expected = inner(q, p) + 0.5 * inner(unit_prefix(q, 4), unit_prefix(p, 4)) +
                        2.0 * inner(unit_prefix(q, 2), unit_prefix(p, 2));
  EXPECT_NEAR(loss.item<double>(), expected.item<double>(), 1e-12);
  // Without normalisation and weights: the plain sum of the sliced losses, in any dims order.
  const auto plain = gc::MatryoshkaLoss(inner, gc::MatryoshkaOptions().dims({3, 8}))({q, p}, {});
  EXPECT_NEAR(plain.item<double>(), (inner(q, p) + inner(q.slice(1, 0, 3), p.slice(1, 0, 3))).item<double>(), 1e-12);
  // LossArgs pass through to the inner loss.
  const auto summed = gc::MatryoshkaLoss(inner, gc::MatryoshkaOptions().dims({4}))({q, p}, {{"reduction", "sum"}});
  EXPECT_NEAR(summed.item<double>(), 6 * inner(q.slice(1, 0, 4), p.slice(1, 0, 4)).item<double>(), 1e-10);
}

TEST(Matryoshka, GradCacheWithDropoutMatchesTheFullBatchFloat64) {
  torch::manual_seed(3);
  gctest::Mlp q(8, 32, 8, /*dropout=*/0.3), p(8, 32, 8, /*dropout=*/0.3);
  q->to(torch::kFloat64);
  p->to(torch::kFloat64);
  auto x = torch::randn({16, 8}, torch::kFloat64), y = torch::randn({16, 8}, torch::kFloat64);
  const gc::Loss loss = gc::MatryoshkaLoss(gc::SymmetricContrastiveLoss(), options_8_4_2());
  gc::GradCache cache({q, p}, 5, loss, gc::GradCacheOptions().retain_chunks(0));
  auto params = params_of(q, p);

  // The full batch: the same chunks forward with grad, in the cache's order (same dropout
  // masks), one backward through the whole loss.
  torch::manual_seed(42);
  gctest::zero_grads(params);
  std::vector<torch::Tensor> qs, ps;
  for (const auto& c : x.split(5)) qs.push_back(q(c));
  for (const auto& c : y.split(5)) ps.push_back(p(c));
  const auto full_loss = loss({torch::cat(qs), torch::cat(ps)});
  full_loss.backward();
  const auto full = gctest::grads_of(params);

  torch::manual_seed(42);
  gctest::zero_grads(params);
  const auto cached_loss = cache({x, y});
  const auto cached = gctest::grads_of(params);
  const double err = max_rel_error(cached, full);
  report_error("Matryoshka 8,4,2 (weighted, normalised), dropout 0.3, float64, 16 rows in chunks of 5", err);
  EXPECT_LT(err, kTol64);
  EXPECT_NEAR(cached_loss.item<double>(), full_loss.item<double>(), 1e-12);
  // The prefixes matter: the gradients differ from those of the full width alone.
  torch::manual_seed(42);
  gctest::zero_grads(params);
  gc::GradCache({q, p}, 5, gc::SymmetricContrastiveLoss(), gc::GradCacheOptions().retain_chunks(0))({x, y});
  EXPECT_GT(max_rel_error(gctest::grads_of(params), full), 1e-3);
}

TEST(Matryoshka, StreamingInnerEqualsDenseInner) {
  torch::manual_seed(5);
  for (bool symmetric : {false, true}) {
    auto q = torch::randn({9, 8}, torch::kFloat64).requires_grad_(true);
    auto p = torch::randn({18, 8}, torch::kFloat64).requires_grad_(true);
    const auto tau = gc::ContrastiveLossOptions().temperature(0.2);
    const auto dense_inner =
        symmetric ? gc::Loss(gc::SymmetricContrastiveLoss(tau)) : gc::Loss(gc::SimpleContrastiveLoss(tau));
    const auto streaming_inner =
        gc::StreamingContrastiveLoss(gc::StreamingLossOptions().temperature(0.2).tile_size(4).symmetric(symmetric));
    const auto dense = gc::MatryoshkaLoss(dense_inner, options_8_4_2())({q, p}, {});
    dense.backward();
    const std::vector<torch::Tensor> dense_grads = {q.grad().clone(), p.grad().clone()};
    gctest::zero_grads({q, p});
    const auto streaming = gc::MatryoshkaLoss(streaming_inner, options_8_4_2())({q, p}, {});
    streaming.backward();
    EXPECT_NEAR(streaming.item<double>(), dense.item<double>(), 1e-12) << symmetric;
    const double err = max_rel_error({q.grad(), p.grad()}, dense_grads);
    report_error(std::string("Matryoshka over the streaming loss vs dense") + (symmetric ? ", symmetric" : ""), err);
    EXPECT_LT(err, kTol64);
  }
}

TEST(Matryoshka, BadOptionsAreRefusedWithMessages) {
  const gc::Loss inner = gc::SimpleContrastiveLoss();
  auto make = [&](gc::MatryoshkaOptions o) { return [inner, o] { gc::MatryoshkaLoss(inner, o); }; };
  EXPECT_NE(error_of(make(gc::MatryoshkaOptions())).find("no prefix dimensions"), std::string::npos);
  EXPECT_NE(error_of(make(gc::MatryoshkaOptions().dims({8, 0}))).find("prefix dimension 0 must be positive"),
            std::string::npos);
  EXPECT_NE(error_of(make(gc::MatryoshkaOptions().dims({8, 4, 8}))).find("prefix dimension 8 is given twice"),
            std::string::npos);
  EXPECT_NE(error_of(make(gc::MatryoshkaOptions().dims({8, 4}).weights({1}))).find("1 weights for 2 prefix"),
            std::string::npos);
  EXPECT_NE(error_of(make(gc::MatryoshkaOptions().dims({8, 4}).weights({1, -1}))).find("weight -1 must be finite"),
            std::string::npos);
  EXPECT_NE(error_of(make(gc::MatryoshkaOptions().dims({8}).weights({std::nan("")}))).find("must be finite"),
            std::string::npos);
  EXPECT_NE(error_of(make(gc::MatryoshkaOptions().dims({8, 4}).weights({0, 0}))).find("all weights are 0"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gc::MatryoshkaLoss(gc::Loss(), gc::MatryoshkaOptions().dims({4})); }).find("undefined"),
            std::string::npos);
  // A prefix wider than the representations is refused when the loss sees them.
  const gc::MatryoshkaLoss loss(inner, gc::MatryoshkaOptions().dims({16, 4}));
  const auto msg = error_of([&] { loss({torch::randn({2, 8}), torch::randn({2, 8})}, {}); });
  EXPECT_NE(msg.find("prefix dimension 16 is larger than the representation width 8"), std::string::npos) << msg;
}
