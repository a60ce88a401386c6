// The dual cache for a learned similarity (PairMlp, DualGradCache) against dense autograd on
// small batches.
//
// Tolerances, as in test_grad_cache.cpp: tiling only changes the summation order, so errors
// are bounded by n * eps for reductions of n ~ 100 terms: 1e-13 in float64, 1e-5 in float32,
// relative to the largest entry (gctest::max_rel_error). A wrong tile edge, a lost tile or a
// mis-scaled gradient gives errors of order 1e-2..1.
#include "test_util.h"

#include <cmath>
#include <limits>

namespace gc = gradcache;
using gctest::error_of;
using gctest::grads_of;
using gctest::kTol32;
using gctest::kTol64;
using gctest::max_rel_error;
using gctest::report_error;
using gctest::zero_grads;

// ---- learned similarity: PairMlp and the dual cache ----------------------------------------

namespace {

// Dense InfoNCE over a full score matrix, both directions as symmetric_contrastive_loss.
torch::Tensor loss_from_scores(const torch::Tensor& s, const torch::Tensor& t, gc::Reduction red, bool symmetric) {
  const auto r = red == gc::Reduction::Sum ? at::Reduction::Sum : at::Reduction::Mean;
  auto loss = at::cross_entropy_loss(s, t, {}, r);
  if (!symmetric) return loss;
  auto back = at::cross_entropy_loss(s.index_select(1, t).t(), torch::arange(s.size(0)), {}, r);
  return (loss + back) / 2;
}

// The full-batch reference for the dual cache: encoders chunk by chunk WITH grad in the cache's
// order, then Phi tile by tile WITH grad in the cache's order (so every dropout mask is the
// same), the [N, M] scores assembled with their graph, one backward through the dense loss.
torch::Tensor dense_dual_step(gctest::Mlp& fq, gctest::Mlp& fp, gc::PairMlp& phi, const torch::Tensor& x,
                              const torch::Tensor& y, int64_t chunk, const gc::DualCacheOptions& o,
                              const torch::Tensor& target) {
  std::vector<torch::Tensor> qs, ps;
  for (const auto& c : x.split(chunk)) qs.push_back(fq(c));
  for (const auto& c : y.split(chunk)) ps.push_back(fp(c));
  const auto q = torch::cat(qs), p = torch::cat(ps);
  std::vector<torch::Tensor> rows;
  for (const auto& qi : q.split(o.tile_size())) {
    std::vector<torch::Tensor> cols;
    for (const auto& pj : p.split(o.tile_size())) cols.push_back(phi(qi, pj));
    rows.push_back(torch::cat(cols, 1));
  }
  const auto s = torch::cat(rows, 0) / o.temperature();
  const auto t = target.defined() ? target : torch::arange(0, p.size(0), p.size(0) / q.size(0), torch::kLong);
  auto loss = loss_from_scores(s, t, o.reduction(), o.symmetric());
  loss.backward();
  return loss.detach();
}

struct DualSetup {
  gctest::Mlp fq, fp;
  gc::PairMlp phi;
  std::vector<torch::Tensor> params;
  DualSetup(int64_t in, int64_t dim, double dropout, torch::Dtype dtype)
      : fq(in, 16, dim, dropout), fp(in, 16, dim, dropout), phi(gc::PairMlpOptions(dim, 12).dropout(dropout)) {
    fq->to(dtype);
    fp->to(dtype);
    phi->to(dtype);
    for (auto* m : {fq.ptr().get(), fp.ptr().get()}) {
      for (auto& t : m->parameters()) params.push_back(t);
    }
    for (auto& t : phi->parameters()) params.push_back(t);
  }
  void eval() {
    fq->eval();
    fp->eval();
    phi->eval();
  }
};

double dual_vs_dense(DualSetup& s, const torch::Tensor& x, const torch::Tensor& y, int64_t chunk,
                     const gc::DualCacheOptions& o, const torch::Tensor& target = {}) {
  gc::LossArgs args;
  if (target.defined()) args.set("target", target);
  zero_grads(s.params);
  torch::manual_seed(21);
  const auto dense_loss = dense_dual_step(s.fq, s.fp, s.phi, x, y, chunk, o, target);
  const auto full = grads_of(s.params);
  const auto generator_dense = at::globalContext().defaultGenerator(c10::kCPU).get_state();

  zero_grads(s.params);
  torch::manual_seed(21);
  gc::DualGradCache cache({s.fq, s.fp}, chunk, s.phi, o);
  const auto loss = cache({x, y}, args);
  const auto cached = grads_of(s.params);
  // Generators end where the full-batch step left them (every draw made once).
  EXPECT_TRUE(torch::equal(at::globalContext().defaultGenerator(c10::kCPU).get_state(), generator_dense));
  EXPECT_NEAR(loss.item<double>(), dense_loss.item<double>(), 1e-6 * std::abs(dense_loss.item<double>()));
  EXPECT_TRUE(gctest::any_grad(s.phi->parameters()));
  EXPECT_TRUE(gctest::any_grad(s.fq->parameters()));
  return max_rel_error(cached, full);
}

}  // namespace

TEST(PairMlp, BlockFormEqualsTheMlpOnTheConcatenation) {
  torch::manual_seed(12);
  gc::PairMlp phi(gc::PairMlpOptions(5, 7));
  phi->to(torch::kFloat64);
  auto q = torch::randn({3, 5}, torch::kFloat64), p = torch::randn({4, 5}, torch::kFloat64);
  const auto all = phi(q, p);
  ASSERT_EQ(all.sizes(), (std::vector<int64_t>{3, 4}));
  const auto qq = q.repeat_interleave(4, 0), pp = p.repeat({3, 1});  // pairs row by row
  EXPECT_LT((all.reshape(-1) - phi->forward_concat(qq, pp)).abs().max().item<double>(), 1e-14);
  // With dropout in train mode, the masks are drawn in the same (pair-major) order too.
  gc::PairMlp drop(gc::PairMlpOptions(5, 7).dropout(0.5));
  drop->to(torch::kFloat64);
  torch::manual_seed(3);
  const auto a = drop(q, p);
  torch::manual_seed(3);
  const auto b = drop->forward_concat(qq, pp);
  EXPECT_LT((a.reshape(-1) - b).abs().max().item<double>(), 1e-14);
  EXPECT_NE(error_of([&] { phi(q, torch::randn({4, 6}, torch::kFloat64)); }).find("q and p must be [rows, 5]"),
            std::string::npos);
}

TEST(DualGradCache, MatchesDenseFullBatchInEvalModeFloat64) {
  torch::manual_seed(13);
  DualSetup s(6, 8, 0.0, torch::kFloat64);
  s.eval();
  auto x = torch::randn({10, 6}, torch::kFloat64), y = torch::randn({20, 6}, torch::kFloat64);  // 1 hard negative
  double worst = 0;
  for (int64_t tile : {3, 7, 20, 64}) {  // uneven edges, one tile, tile > batch
    const double err = dual_vs_dense(s, x, y, 4, gc::DualCacheOptions().tile_size(tile).temperature(0.5));
    EXPECT_LT(err, kTol64) << "tile " << tile;
    worst = std::max(worst, err);
  }
  report_error("dual cache, eval, 10 x 20 pairs, tiles 3/7/20/64, encoders + Phi, float64", worst);
}

TEST(DualGradCache, DropoutEverywhereSymmetricExplicitTargetsFloat64) {
  torch::manual_seed(14);
  DualSetup s(6, 8, 0.3, torch::kFloat64);
  auto x = torch::randn({9, 6}, torch::kFloat64), y = torch::randn({13, 6}, torch::kFloat64);
  const auto target = torch::tensor({12, 0, 4, 4, 7, 1, 2, 11, 9}, torch::kLong);
  double worst = 0;
  for (bool symmetric : {false, true}) {
    for (auto red : {gc::Reduction::Mean, gc::Reduction::Sum}) {
      const auto o = gc::DualCacheOptions().tile_size(4).symmetric(symmetric).reduction(red);
      const double err = dual_vs_dense(s, x, y, 5, o, target);
      EXPECT_LT(err, kTol64) << "symmetric " << symmetric;
      worst = std::max(worst, err);
    }
  }
  report_error("dual cache, dropout 0.3 in encoders and Phi, symmetric, explicit targets, float64", worst);
}

TEST(DualGradCache, MatchesDenseFloat32) {
  torch::manual_seed(15);
  DualSetup s(8, 16, 0.1, torch::kFloat32);
  auto x = torch::randn({24, 8}), y = torch::randn({48, 8});
  const double err = dual_vs_dense(s, x, y, 8, gc::DualCacheOptions().tile_size(10).temperature(0.2));
  report_error("dual cache, dropout 0.1, 24 x 48 pairs, tile 10, float32", err);
  EXPECT_LT(err, kTol32);
}

TEST(DualGradCache, RecomputedScoresAreBitIdenticalToTheFirstPass) {
  torch::manual_seed(16);
  gc::PairMlp phi(gc::PairMlpOptions(4, 8).dropout(0.5));
  phi->to(torch::kFloat64);
  std::vector<torch::Tensor> first, second;
  gc::PairScorer recording(
      [&](const torch::Tensor& q, const torch::Tensor& p) {
        auto s = phi(q, p);
        (torch::GradMode::is_enabled() ? second : first).push_back(s.detach().clone());
        return s;
      },
      phi.ptr());
  auto q = torch::randn({7, 4}, torch::kFloat64), p = torch::randn({7, 4}, torch::kFloat64);
  const auto before = at::globalContext().defaultGenerator(c10::kCPU).get_state();
  gc::dual_cache_backward(q, p, recording, gc::DualCacheOptions().tile_size(3));
  ASSERT_EQ(first.size(), 9u);  // 3 x 3 tiles
  ASSERT_EQ(second.size(), 9u);
  for (size_t i = 0; i < first.size(); ++i) EXPECT_TRUE(torch::equal(first[i], second[i])) << "tile " << i;
  const auto after = at::globalContext().defaultGenerator(c10::kCPU).get_state();
  // Dropout is on: the same tile again draws other masks.
  EXPECT_FALSE(torch::equal(phi(q.slice(0, 0, 3), p.slice(0, 0, 3)), first[0]));
  // The generator advanced once (pass (a)), not twice: rerunning pass (a) alone ends there.
  auto generator = at::globalContext().defaultGenerator(c10::kCPU);
  generator.set_state(before);
  {
    torch::NoGradGuard no_grad;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) phi(q.slice(0, 3 * i, 3 * i + 3), p.slice(0, 3 * j, 3 * j + 3));
  }
  EXPECT_TRUE(torch::equal(at::globalContext().defaultGenerator(c10::kCPU).get_state(), after));
}

TEST(DualGradCache, BadInputIsExplainedAndChangesNothing) {
  torch::manual_seed(17);
  DualSetup s(4, 4, 0.0, torch::kFloat32);
  for (auto& t : s.params) t.mutable_grad() = torch::full_like(t, 0.5);
  const auto grads = grads_of(s.params);
  auto x = torch::randn({4, 4}), y = torch::randn({6, 4});
  gc::DualGradCache cache({s.fq, s.fp}, 2, s.phi);
  EXPECT_NE(error_of([&] { cache({x, y}); }).find("must be a multiple of the number of queries"), std::string::npos);
  // A scorer that returns non-finite scores in one tile: the tile is named, nothing moves.
  gc::PairScorer exploding([&](const torch::Tensor& q, const torch::Tensor& p) {
    auto out = s.phi(q, p);
    return q.size(0) == 1 ? out * std::numeric_limits<float>::infinity() : out;  // the last row tile: 1 row
  }, s.phi.ptr());
  gc::DualGradCache bad({s.fq, s.fp}, 2, exploding, gc::DualCacheOptions().tile_size(3));
  try {
    bad({torch::randn({4, 4}), torch::randn({4, 4})});
    ADD_FAILURE() << "expected NonFiniteLossError";
  } catch (const gc::NonFiniteLossError& e) {
    EXPECT_NE(std::string(e.what()).find("query rows [3, 4) x passage rows [0, 3)"), std::string::npos) << e.what();
  }
  gc::PairScorer wrong_shape([](const torch::Tensor& q, const torch::Tensor& p) { return q.sum(1); });
  gc::DualGradCache shape({s.fq, s.fp}, 2, wrong_shape);
  EXPECT_NE(error_of([&] { shape({x, x}); }).find("must return floating-point scores [a, b]"), std::string::npos);
  const auto now = grads_of(s.params);
  for (size_t i = 0; i < now.size(); ++i) EXPECT_TRUE(torch::equal(now[i], grads[i])) << i;
  EXPECT_NE(error_of([&] { gc::DualGradCache({s.fq, s.fp, s.fq}, 2, s.phi); }).find("needs two models"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gc::DualGradCache({s.fq, s.fp}, 2, s.phi, gc::DualCacheOptions().tile_size(0)); })
                .find("tile_size must be positive"),
            std::string::npos);
}
