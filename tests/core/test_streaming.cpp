// The streaming contrastive loss against dense autograd on small batches.
//
// Tolerances, as in test_grad_cache.cpp: tiling only changes the summation order (per tile,
// then across tiles, and an online logsumexp instead of one max-shifted sum), so errors are
// bounded by n * eps for reductions of n ~ 100 terms: 1e-13 in float64, 1e-5 in float32,
// relative to the largest entry (gctest::max_rel_error). A wrong tile edge, a lost tile or a
// mis-scaled gradient gives errors of order 1e-2..1.
#include "test_util.h"

#include <cmath>
#include <limits>

namespace gc = gradcache;
using gctest::kTol64;
using gctest::kTol32;
namespace gf = gradcache::functional;
using gctest::grads_of;
using gctest::max_rel_error;
using gctest::report_error;
using gctest::zero_grads;

namespace {


// Every value the loss depends on, as leaves.
struct Leaves {
  torch::Tensor q, p, tau;
  std::vector<torch::Tensor> all() const { return tau.defined() ? std::vector<torch::Tensor>{q, p, tau} : std::vector<torch::Tensor>{q, p}; }
};

Leaves leaves(int64_t n, int64_t m, int64_t d, torch::Dtype dtype, double tau = -1) {
  Leaves l;
  l.q = torch::randn({n, d}, dtype).requires_grad_(true);
  l.p = torch::randn({m, d}, dtype).requires_grad_(true);
  if (tau > 0) l.tau = torch::tensor(tau, dtype).requires_grad_(true);
  return l;
}

// The dense reference: the whole [N, M] matrix through autograd. With a temperature tensor the
// division is by the tensor (so it gets a gradient); otherwise the core library's losses.
torch::Tensor dense(const Leaves& l, const gc::StreamingLossOptions& o, const torch::Tensor& target = {}) {
  gc::ContrastiveLossOptions co;
  co.reduction(o.reduction()).similarity(o.similarity()).temperature(o.temperature());
  if (!l.tau.defined()) {
    return o.symmetric() ? gc::symmetric_contrastive_loss(l.q, l.p, co, target) : gc::contrastive_loss(l.q, l.p, co, target);
  }
  auto a = l.q, b = l.p;
  if (o.similarity() == gc::Similarity::Cosine) {
    a = torch::nn::functional::normalize(a, torch::nn::functional::NormalizeFuncOptions().dim(1));
    b = torch::nn::functional::normalize(b, torch::nn::functional::NormalizeFuncOptions().dim(1));
  }
  const auto s = a.matmul(b.t()) / l.tau;
  const int64_t n = a.size(0), m = b.size(0);
  const auto t = target.defined() ? target : torch::arange(0, m, m / n, torch::kLong);
  const auto red = o.reduction() == gc::Reduction::Sum ? at::Reduction::Sum : at::Reduction::Mean;
  auto loss = at::cross_entropy_loss(s, t, {}, red);
  if (!o.symmetric()) return loss;
  auto back = at::cross_entropy_loss(s.index_select(1, t).t(), torch::arange(n), {}, red);
  return (loss + back) / 2;
}

std::vector<torch::Tensor> grads_after(const torch::Tensor& loss, const std::vector<torch::Tensor>& xs) {
  for (auto x : xs) x.mutable_grad() = torch::Tensor();
  loss.backward();
  return grads_of(xs);
}

// Streaming vs dense on the same leaves: the larger of the loss's and the gradients' relative
// errors.
double streaming_vs_dense(const Leaves& l, const gc::StreamingLossOptions& o, const torch::Tensor& target = {}) {
  auto opts = o;
  if (l.tau.defined()) opts.temperature_tensor(l.tau);
  const auto ls = gc::streaming_contrastive_loss(l.q, l.p, opts, target);
  const auto ld = dense(l, o, target);
  EXPECT_EQ(ls.dim(), 0);
  const double loss_err = std::abs(ls.item<double>() - ld.item<double>()) / std::abs(ld.item<double>());
  const auto gs = grads_after(ls, l.all()), gd = grads_after(ld, l.all());
  double err = std::max(loss_err, max_rel_error(gs, gd));
  if (l.tau.defined()) {  // the temperature's gradient on its own scale too
    err = std::max(err, ((gs[2] - gd[2]).abs() / gd[2].abs()).item<double>());
  }
  return err;
}

}  // namespace

// ---- the streaming loss ---------------------------------------------------------------

TEST(StreamingLoss, MatchesDenseFloat64WithUnevenTileEdges) {
  torch::manual_seed(0);
  const auto l = leaves(37, 37, 8, torch::kFloat64);
  double worst = 0;
  for (int64_t tile : {1, 5, 16, 36, 37, 64}) {  // 37 = 7 * 5 + 2, 2 * 16 + 5, ...
    const double err = streaming_vs_dense(l, gc::StreamingLossOptions().tile_size(tile));
    EXPECT_LT(err, kTol64) << "tile " << tile;
    worst = std::max(worst, err);
  }
  report_error("streaming loss, 37 x 37, tiles 1/5/16/36/37/64, float64", worst);
}

TEST(StreamingLoss, MatchesDenseFloat32) {
  torch::manual_seed(1);
  const auto l = leaves(300, 300, 32, torch::kFloat32);
  // Cosine at temperature 0.05, as trained in practice: scores in [-20, 20]. (Raw Gaussian
  // vectors at this temperature give scores of several hundred, whose own float32 rounding,
  // ~1e-5, is then what both losses disagree on.)
  const auto o = gc::StreamingLossOptions().tile_size(64).temperature(0.05).similarity(gc::Similarity::Cosine);
  const double err = streaming_vs_dense(l, o);
  report_error("streaming loss, 300 x 300, tile 64, cosine, temperature 0.05, float32", err);
  EXPECT_LT(err, kTol32);
}

TEST(StreamingLoss, HardNegativesCosineAndTemperature) {
  torch::manual_seed(2);
  const auto l = leaves(6, 6 * 4, 8, torch::kFloat64);  // k = 3 hard negatives: positives at 0, 4, 8, ...
  const auto o = gc::StreamingLossOptions().tile_size(5).similarity(gc::Similarity::Cosine).temperature(0.05);
  const double err = streaming_vs_dense(l, o);
  report_error("streaming loss, 3 hard negatives, cosine, temperature 0.05, tile 5, float64", err);
  EXPECT_LT(err, kTol64);
}

TEST(StreamingLoss, SymmetricExplicitTargetsSumReductionAndNNotM) {
  torch::manual_seed(3);
  const auto l = leaves(7, 11, 6, torch::kFloat64);
  const auto target = torch::tensor({10, 0, 3, 3, 5, 9, 1}, torch::kLong);  // query 2 and 3 share a positive
  double worst = 0;
  for (auto red : {gc::Reduction::Mean, gc::Reduction::Sum}) {
    for (int64_t tile : {3, 4, 11}) {
      const auto o = gc::StreamingLossOptions().tile_size(tile).symmetric(true).reduction(red).temperature(0.7);
      const double err = streaming_vs_dense(l, o, target);  // dense: gc::symmetric_contrastive_loss
      EXPECT_LT(err, kTol64) << "tile " << tile;
      worst = std::max(worst, err);
    }
  }
  // Also the one-directional loss with N != M and explicit targets.
  worst = std::max(worst, streaming_vs_dense(l, gc::StreamingLossOptions().tile_size(4), target));
  report_error("streaming loss, symmetric, 7 x 11, explicit targets, mean and sum, float64", worst);
  EXPECT_LT(worst, kTol64);
}

TEST(StreamingLoss, LearnableTemperatureReceivesItsGradient) {
  torch::manual_seed(4);
  double worst = 0;
  for (bool symmetric : {false, true}) {
    for (auto sim : {gc::Similarity::Dot, gc::Similarity::Cosine}) {
      const auto l = leaves(9, 18, 5, torch::kFloat64, /*tau=*/0.3);
      const auto o = gc::StreamingLossOptions().tile_size(4).symmetric(symmetric).similarity(sim);
      const double err = streaming_vs_dense(l, o);
      EXPECT_LT(err, kTol64) << "symmetric " << symmetric;
      worst = std::max(worst, err);
    }
  }
  report_error("streaming loss, learnable temperature (tau and dL/dtau), float64", worst);

  // float32, and a log parametrisation passed per call: the gradient reaches log_tau.
  const auto l = leaves(40, 40, 16, torch::kFloat32);
  auto log_tau = torch::tensor(std::log(0.2), torch::kFloat32).requires_grad_(true);
  gc::StreamingContrastiveLoss loss(gc::StreamingLossOptions().tile_size(16));
  loss(l.q, l.p, {{"temperature", log_tau.exp()}}).backward();
  const auto g_stream = log_tau.grad().clone();
  log_tau.mutable_grad() = torch::Tensor();
  torch::nn::functional::cross_entropy(l.q.matmul(l.p.t()) / log_tau.exp(), torch::arange(40)).backward();
  const double err32 = ((g_stream - log_tau.grad()).abs() / log_tau.grad().abs()).item<double>();
  report_error("streaming loss, log-temperature per call, float32", err32);
  EXPECT_LT(err32, kTol32);
}

TEST(StreamingLoss, NumericGradientOfTheTemperature) {
  // dL/dtau = -(1/tau) sum dS (.) S is computed from an identity (q . dq); check it against a
  // central difference, independently of autograd.
  torch::manual_seed(5);
  const auto l = leaves(8, 8, 4, torch::kFloat64, 0.5);
  const auto o = gc::StreamingLossOptions().tile_size(3).symmetric(true);
  gc::streaming_contrastive_loss(l.q, l.p, gc::StreamingLossOptions(o).temperature_tensor(l.tau)).backward();
  const double h = 1e-6;
  torch::NoGradGuard no_grad;
  const double up = gc::streaming_contrastive_loss(l.q, l.p, gc::StreamingLossOptions(o).temperature(0.5 + h)).item<double>();
  const double down = gc::streaming_contrastive_loss(l.q, l.p, gc::StreamingLossOptions(o).temperature(0.5 - h)).item<double>();
  EXPECT_NEAR(l.tau.grad().item<double>(), (up - down) / (2 * h), 1e-7);
}

TEST(StreamingLoss, PlugsIntoGradCacheWithTheSameGradients) {
  torch::manual_seed(6);
  gctest::Mlp q(8, 32, 8, /*dropout=*/0.2), p(8, 32, 8, /*dropout=*/0.2);
  q->to(torch::kFloat64);
  p->to(torch::kFloat64);
  const int64_t n = 14, k = 1;
  auto x = torch::randn({n, 8}, torch::kFloat64), y = torch::randn({n * (1 + k), 8}, torch::kFloat64);
  const auto opts = gc::StreamingLossOptions().tile_size(5).temperature(0.5);
  const gc::Loss streaming = gc::StreamingContrastiveLoss(opts);
  const gc::Loss simple = gc::SimpleContrastiveLoss(gc::ContrastiveLossOptions().temperature(0.5));
  std::vector<torch::Tensor> params = q->parameters();
  for (auto& t : p->parameters()) params.push_back(t);

  auto run = [&](gc::GradCache& cache) {
    zero_grads(params);
    torch::manual_seed(11);
    const auto loss = cache({x, y});
    return std::make_pair(loss.item<double>(), grads_of(params));
  };
  gc::GradCache with_streaming({q, p}, std::vector<int64_t>{4, 6}, streaming);
  gc::GradCache with_simple({q, p}, std::vector<int64_t>{4, 6}, simple);
  const auto [loss_s, g_s] = run(with_streaming);
  const auto [loss_d, g_d] = run(with_simple);

  // A real full-batch backward with the same dropout masks: the chunks in the cache's order.
  zero_grads(params);
  torch::manual_seed(11);
  std::vector<torch::Tensor> qs, ps;
  for (const auto& c : x.split(4)) qs.push_back(q(c));
  for (const auto& c : y.split(6)) ps.push_back(p(c));
  simple({torch::cat(qs), torch::cat(ps)}).backward();
  const auto g_full = grads_of(params);

  const double err = std::max(max_rel_error(g_s, g_d), max_rel_error(g_s, g_full));
  report_error("GradCache + streaming loss vs GradCache + SimpleContrastiveLoss and full batch, dropout, float64", err);
  EXPECT_LT(err, kTol64);
  EXPECT_NEAR(loss_s, loss_d, 1e-12);
  EXPECT_TRUE(gctest::any_grad(q->parameters()));
}

TEST(StreamingLoss, PlugsIntoTheFunctionalApiAndPlainTraining) {
  torch::manual_seed(7);
  gctest::Mlp enc(8, 16, 8);
  enc->to(torch::kFloat64);
  std::vector<torch::Tensor> xs, ys;
  for (int i = 0; i < 4; ++i) {
    xs.push_back(torch::randn({3, 8}, torch::kFloat64));
    ys.push_back(torch::randn({3, 8}, torch::kFloat64));
  }
  const auto opts = gc::StreamingLossOptions().tile_size(5).symmetric(true);
  // Plain training: the streaming loss on the full batch, one backward.
  zero_grads(enc->parameters());
  gc::StreamingContrastiveLoss{opts}(enc(torch::cat(xs)), enc(torch::cat(ys))).backward();
  const auto plain = grads_of(enc->parameters());
  // Dense reference.
  zero_grads(enc->parameters());
  gc::SymmetricContrastiveLoss()(enc(torch::cat(xs)), enc(torch::cat(ys))).backward();
  const auto full = grads_of(enc->parameters());
  // Functional API: cached calls, the streaming loss over the concatenated leaves, replays.
  zero_grads(enc->parameters());
  auto call = gf::cached([](gctest::Mlp& m, const torch::Tensor& t) { return m(t); });
  auto loss_fn = gf::cat_input_tensor(gc::StreamingContrastiveLoss(opts));
  std::vector<torch::Tensor> rx, ry;
  std::vector<gf::Replay> cx, cy;
  for (size_t i = 0; i < xs.size(); ++i) {
    auto [a, ca] = call(enc, xs[i]);
    auto [b, cb] = call(enc, ys[i]);
    rx.push_back(a), ry.push_back(b), cx.push_back(ca), cy.push_back(cb);
  }
  loss_fn(rx, ry).backward();
  for (size_t i = 0; i < rx.size(); ++i) cx[i](rx[i]), cy[i](ry[i]);
  const auto functional = grads_of(enc->parameters());
  const double err = std::max(max_rel_error(plain, full), max_rel_error(functional, full));
  report_error("streaming loss in plain training and the functional API, symmetric, float64", err);
  EXPECT_LT(err, kTol64);
}

TEST(StreamingLoss, NeverAllocatesTheScoreMatrix) {
  gc::CpuMemoryTracker::install();
  torch::manual_seed(8);
  const int64_t n = 2048, d = 16, tile = 128;
  auto q = torch::randn({n, d}).requires_grad_(true), p = torch::randn({n, d}).requires_grad_(true);
  const auto measure = [&](const gc::Loss& loss) {
    q.mutable_grad() = torch::Tensor();
    p.mutable_grad() = torch::Tensor();
    const auto base = gc::CpuMemoryTracker::stats().current;
    gc::CpuMemoryTracker::reset_peak();
    loss({q, p}).backward();
    return gc::CpuMemoryTracker::stats().peak - base;
  };
  const auto streaming = measure(gc::StreamingContrastiveLoss(gc::StreamingLossOptions().tile_size(tile).symmetric(true)));
  const auto simple = measure(gc::SymmetricContrastiveLoss());
  const int64_t matrix = n * n * 4, reps = 2 * n * d * 4;
  std::cout << "[memory] streaming " << streaming << " B, dense " << simple << " B, one score matrix " << matrix << " B\n";
  EXPECT_GE(simple, 2 * matrix);                       // the dense loss holds S and its softmax
  EXPECT_LT(streaming, 3 * tile * tile * 4 + 6 * reps);  // tiles + O((N + M) d), no [N, M]
}

TEST(StreamingLoss, HalfPrecisionIsComputedInFloat) {
  torch::manual_seed(9);
  auto q = torch::randn({20, 8}), p = torch::randn({20, 8});
  auto qb = q.to(torch::kBFloat16).requires_grad_(true), pb = p.to(torch::kBFloat16).requires_grad_(true);
  const auto loss = gc::streaming_contrastive_loss(qb, pb, gc::StreamingLossOptions().tile_size(6));
  loss.backward();
  EXPECT_EQ(qb.grad().scalar_type(), torch::kBFloat16);
  const auto ref = gc::contrastive_loss(qb.detach().to(torch::kFloat), pb.detach().to(torch::kFloat));
  EXPECT_NEAR(loss.item<double>(), ref.item<double>(), 1e-5);
}

TEST(StreamingLoss, LogSumExpPrimitive) {
  torch::manual_seed(10);
  auto q = torch::randn({9, 4}, torch::kFloat64), p = torch::randn({13, 4}, torch::kFloat64);
  const auto tau = torch::tensor(0.8, torch::kFloat64);
  const auto lse = gc::streaming_logsumexp(q, p, tau, 4, /*columns=*/true);
  const auto s = q.matmul(p.t()) / 0.8;
  EXPECT_LT((lse[0] - s.logsumexp(1)).abs().max().item<double>(), 1e-13);
  EXPECT_LT((lse[1] - s.logsumexp(0)).abs().max().item<double>(), 1e-13);
}

// ---- bad input ------------------------------------------------------------------------

using gctest::error_of;

TEST(StreamingLoss, BadInputIsExplained) {
  auto q = torch::randn({4, 8}), p = torch::randn({4, 6});
  EXPECT_NE(error_of([&] { gc::streaming_contrastive_loss(q, p); }).find("same dimension"), std::string::npos);
  p = torch::randn({6, 8});
  EXPECT_NE(error_of([&] { gc::streaming_contrastive_loss(q, p); }).find("must be a multiple of the number of queries"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gc::streaming_contrastive_loss(q, p, gc::StreamingLossOptions().tile_size(0)); })
                .find("tile_size must be positive, got 0"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gc::StreamingContrastiveLoss(gc::StreamingLossOptions().tile_size(-3)); })
                .find("tile_size must be positive, got -3"),
            std::string::npos);
  p = torch::randn({4, 8});
  EXPECT_NE(error_of([&] { gc::streaming_contrastive_loss(q, p, gc::StreamingLossOptions().temperature(0)); })
                .find("temperature must be positive"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              gc::streaming_contrastive_loss(q, p, gc::StreamingLossOptions().temperature_tensor(torch::tensor(-1.0)));
            }).find("temperature must be positive"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gc::StreamingContrastiveLoss()(q, p, {{"margin", 1.0}}); }).find("unknown argument 'margin'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gc::streaming_contrastive_loss(q, p.to(torch::kFloat64)); }).find("same dtype"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gc::streaming_contrastive_loss(q, p, {}, torch::tensor({0, 1, 2, 4}, torch::kLong)); })
                .find("target entries must be passage rows in [0, 4)"),
            std::string::npos);
}

TEST(StreamingLoss, NonFiniteScoresNameTheTile) {
  // Finite representations whose scores overflow float32: the error names the tile.
  auto q = torch::randn({10, 4}), p = torch::randn({10, 4});
  q[7] = torch::full({4}, 1e20);
  p[8] = torch::full({4}, 1e20);
  const auto opts = gc::StreamingLossOptions().tile_size(4);
  try {
    gc::streaming_contrastive_loss(q, p, opts);
    ADD_FAILURE() << "expected NonFiniteLossError";
  } catch (const gc::NonFiniteLossError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("query rows [4, 8) x passage rows [8, 10)"), std::string::npos) << message;
  }
  // A NaN in a representation: the row is named, and nothing reaches the gradients.
  auto qn = torch::randn({10, 4}).requires_grad_(true);
  auto pn = torch::randn({10, 4});
  pn[3][1] = std::numeric_limits<float>::quiet_NaN();
  const std::string message = error_of([&] { gc::streaming_contrastive_loss(qn, pn, opts).backward(); });
  EXPECT_NE(message.find("row(s) of p hold NaN or inf (the first is row 3)"), std::string::npos) << message;
  EXPECT_FALSE(qn.grad().defined());
  // In GradCache it is the NonFiniteLossError trainers already skip on.
  gctest::Mlp a(4, 8, 4), b(4, 8, 4);
  gc::GradCache cache({a, b}, 3, gc::StreamingContrastiveLoss(opts));
  EXPECT_THROW(cache({torch::full({6, 4}, std::numeric_limits<float>::infinity()), torch::randn({6, 4})}),
               gc::NonFiniteLossError);
  EXPECT_FALSE(gctest::any_grad(a->parameters()));
}
