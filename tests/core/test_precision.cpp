// Mixed precision: autocast per model call (bf16 on CPU), fp32 cache, GradScaler.
//
// Tolerances. bf16 keeps 8 significant bits (eps = 2^-8 = 3.9e-3).
// - Against a chunked bf16 full batch (every chunk forward with grad under its own autocast
//   scope, in the cache's chunk order, one loss and one backward over the whole batch): both
//   run the same bf16 operations on the same values, so their bf16 roundings are identical;
//   only the fp32 accumulation of the chunks' weight-gradient contributions is ordered
//   differently: kTolSameBf16 = 1e-5 (4 chunks, 4 * 1.2e-7 plus margin). A replay without
//   autocast, or one that reuses weights cast under no-grad, is off by ~2^-8 or more.
// - Against a real full batch (one forward of all rows, one autocast scope): the GEMMs round
//   their bf16 results over other row blocks. Each of the 4 chunk contributions to a weight
//   gradient carries a rounding of at most 2^-9 relative, so the sum differs by up to
//   4 * 2^-9 = 2^-7 of the contributions' size; kTolBf16 = 2^-5 = 3.1e-2 leaves room for
//   contributions larger than their sum (cancellation). fp32 vs bf16 differ by about this much
//   too, which is why the tight comparison above is the one that catches a wrong replay.
#include "test_util.h"

#include <torch/serialize.h>

#include <cmath>
#include <limits>
#include <sstream>

namespace gc = gradcache;
using gctest::recording;
using gctest::Recorder;
using gctest::grads_of;
using gctest::params_of;
using gctest::max_rel_error;
using gctest::report_error;
using gctest::zero_grads;

namespace {

constexpr double kTolSameBf16 = 1e-5;
constexpr double kTolBf16 = 0.03125;

}  // namespace

// ---- autocast scope ---------------------------------------------------------------------

TEST(Precision, ParseAndPrint) {
  EXPECT_EQ(gc::parse_precision("bf16"), gc::Precision::bf16);
  EXPECT_EQ(gc::parse_precision("float16"), gc::Precision::fp16);
  EXPECT_EQ(gc::parse_precision("FP32"), gc::Precision::fp32);
  EXPECT_EQ(gc::to_string(gc::Precision::bf16), "bf16");
  EXPECT_THROW(gc::parse_precision("int8"), c10::Error);
}

TEST(Precision, ScopeEnablesBf16AndRestores) {
  torch::nn::Linear lin(8, 4);
  auto x = torch::randn({3, 8});
  {
    gc::AutocastScope bf16(gc::Precision::bf16, torch::kCPU);
    EXPECT_EQ(lin(x).scalar_type(), torch::kBFloat16);
  }
  EXPECT_EQ(lin(x).scalar_type(), torch::kFloat);  // off again
  {
    gc::AutocastScope fp32(gc::Precision::fp32, torch::kCPU);  // nothing
    EXPECT_EQ(lin(x).scalar_type(), torch::kFloat);
  }
}

// The no-grad pass and the replay are two scopes: what the second computes must not depend on
// the first. (Without the cache clearing, the chunked references below share casts across
// chunks and PrecisionCache tests fail; checked by removing clear_cache().)
TEST(Precision, ScopeClearsTheCastCacheBetweenCalls) {
  torch::manual_seed(10);
  gctest::Mlp mlp(8, 16, 4);
  auto x = torch::randn({3, 8});
  auto grads_after = [&](bool no_grad_call_first) {
    zero_grads(mlp->parameters());
    if (no_grad_call_first) {
      torch::NoGradGuard no_grad;
      gc::AutocastScope bf16(gc::Precision::bf16, torch::kCPU);
      mlp(x);
    }
    {
      gc::AutocastScope bf16(gc::Precision::bf16, torch::kCPU);
      mlp(x).to(torch::kFloat).pow(2).sum().backward();
    }
    return grads_of(mlp->parameters());
  };
  const auto fresh = grads_after(false), after_no_grad = grads_after(true);
  for (size_t i = 0; i < fresh.size(); ++i) {
    EXPECT_GT(after_no_grad[i].abs().sum().item<double>(), 0) << "parameter " << i << " got no gradient";
    EXPECT_TRUE(torch::equal(after_no_grad[i], fresh[i])) << "parameter " << i;
  }
}

TEST(Precision, Fp16OnCpuIsRejectedWhereUnsupported) {
  if (gc::autocast_supported(gc::Precision::fp16, torch::kCPU)) GTEST_SKIP() << "this LibTorch autocasts fp16 on CPU";
  gctest::Mlp q(4, 8, 4), p(4, 8, 4);
  gc::GradCache cache({q, p}, 2, gc::SimpleContrastiveLoss(), gc::GradCacheOptions().precision(gc::Precision::fp16));
  try {
    cache({torch::randn({4, 4}), torch::randn({4, 4})});
    FAIL() << "expected an error";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("use bf16 on CPU"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(q->fc1->weight.grad().defined());  // nothing backpropagated
}

// ---- GradCache in bf16 ------------------------------------------------------------------

TEST(PrecisionCache, Bf16WithDropoutMatchesBf16FullBatchAndReplaysIdentically) {
  torch::manual_seed(11);
  gctest::Mlp q(16, 64, 16, /*dropout=*/0.2), p(16, 64, 16, /*dropout=*/0.2);
  auto x = torch::randn({24, 16}), y = torch::randn({24, 16});
  gc::Loss loss = gc::SimpleContrastiveLoss(gc::ContrastiveLossOptions().temperature(0.5));
  auto rec_q = std::make_shared<Recorder>(), rec_p = std::make_shared<Recorder>();
  gc::GradCache cache({recording(q, rec_q), recording(p, rec_p)}, 6, loss,
                      gc::GradCacheOptions().precision(gc::Precision::bf16).retain_chunks(0));

  torch::manual_seed(5);
  auto full = gctest::full_batch_chunked(q, p, x, y, 6, loss, gc::Precision::bf16);
  rec_q->grad_outputs.clear();
  rec_p->grad_outputs.clear();
  torch::manual_seed(5);
  auto params = params_of({q.ptr().get(), p.ptr().get()});
  zero_grads(params);
  auto value = cache({x, y});
  auto cached = grads_of(params);

  EXPECT_EQ(value.scalar_type(), torch::kFloat);
  for (auto* rec : {rec_q.get(), rec_p.get()}) {
    ASSERT_EQ(rec->no_grad_outputs.size(), 4u);
    ASSERT_EQ(rec->grad_outputs.size(), 4u);
    for (size_t c = 0; c < 4; ++c) {
      EXPECT_EQ(rec->no_grad_outputs[c].scalar_type(), torch::kBFloat16);  // autocast was on in step 1
      EXPECT_EQ(rec->grad_outputs[c].scalar_type(), torch::kBFloat16);     // ... and in the replay
      EXPECT_TRUE(torch::equal(rec->no_grad_outputs[c], rec->grad_outputs[c])) << "chunk " << c;
    }
  }
  for (const auto& g : cached) EXPECT_EQ(g.scalar_type(), torch::kFloat);  // fp32 weights, fp32 gradients
  const double err = max_rel_error(cached, full);
  report_error("bf16 autocast, dropout 0.2, vs chunked bf16 full batch", err);
  EXPECT_LT(err, kTolSameBf16);

  // bf16 really changed the computation: fp32 gradients are another thing.
  torch::manual_seed(5);
  gc::GradCache fp32_cache({q, p}, 6, loss, gc::GradCacheOptions().retain_chunks(0));
  zero_grads(params);
  fp32_cache({x, y});
  EXPECT_GT(max_rel_error(grads_of(params), full), 1e-4);
}

// Guards the test above: a replay without autocast (fp32) misses the tight tolerance.
TEST(PrecisionCache, ReplayWithoutAutocastWouldBeCaught) {
  struct Fp32Replay : gc::GradCache {
    using gc::GradCache::GradCache;
    c10::IValue model_call(const gc::Model& model, const gc::ModelInput& chunk) override {
      return torch::GradMode::is_enabled() ? model(chunk) : gc::GradCache::model_call(model, chunk);
    }
  };
  torch::manual_seed(11);
  gctest::Mlp q(16, 64, 16, 0.2), p(16, 64, 16, 0.2);
  auto x = torch::randn({24, 16}), y = torch::randn({24, 16});
  gc::Loss loss = gc::SimpleContrastiveLoss(gc::ContrastiveLossOptions().temperature(0.5));
  Fp32Replay broken({q, p}, 6, loss, gc::GradCacheOptions().precision(gc::Precision::bf16).retain_chunks(0));
  torch::manual_seed(5);
  auto full = gctest::full_batch_chunked(q, p, x, y, 6, loss, gc::Precision::bf16);
  torch::manual_seed(5);
  auto params = params_of({q.ptr().get(), p.ptr().get()});
  zero_grads(params);
  broken({x, y});
  EXPECT_GT(max_rel_error(grads_of(params), full), 10 * kTolSameBf16);
}

TEST(PrecisionCache, Bf16MatchesUnchunkedBf16FullBatchWithinBf16Tolerance) {
  torch::manual_seed(12);
  gctest::Mlp q(16, 64, 16), p(16, 64, 16);
  q->eval();
  p->eval();
  auto x = torch::randn({24, 16}), y = torch::randn({24, 16});
  gc::Loss loss = gc::SimpleContrastiveLoss(gc::ContrastiveLossOptions().temperature(0.5));
  auto params = params_of({q.ptr().get(), p.ptr().get()});
  zero_grads(params);
  {
    std::vector<torch::Tensor> reps;
    {
      gc::AutocastScope bf16(gc::Precision::bf16, torch::kCPU);
      reps = {q(x), p(y)};
    }
    loss({reps[0].to(torch::kFloat), reps[1].to(torch::kFloat)}, {}).backward();
  }
  auto full = grads_of(params);
  gc::GradCache cache({q, p}, 6, loss, gc::GradCacheOptions().precision(gc::Precision::bf16));
  zero_grads(params);
  cache({x, y});
  const double err = max_rel_error(grads_of(params), full);
  report_error("bf16 autocast, eval, vs unchunked bf16 full batch", err);
  EXPECT_LT(err, kTolBf16);
}

// A model that computes in bf16 itself (bf16 weights, no autocast) still gets an fp32 loss and
// an fp32 cache; the replay casts the cached gradient back to bf16.
TEST(PrecisionCache, Bf16RepresentationsGetAnFp32Cache) {
  struct Inspect : gc::GradCache {
    using gc::GradCache::GradCache;
    std::vector<torch::ScalarType> cache_dtypes, loss_input_dtypes;
    std::vector<torch::Tensor> build_cache(const std::vector<torch::Tensor>& reps, const gc::LossArgs& args,
                                           torch::Tensor& loss) override {
      for (const auto& r : reps) loss_input_dtypes.push_back(r.scalar_type());
      auto grads = gc::GradCache::build_cache(reps, args, loss);
      for (const auto& g : grads) cache_dtypes.push_back(g.scalar_type());
      return grads;
    }
  };
  torch::manual_seed(13);
  gctest::Mlp q(8, 16, 8), p(8, 16, 8);
  q->to(torch::kBFloat16);
  p->to(torch::kBFloat16);
  auto x = torch::randn({8, 8}).to(torch::kBFloat16), y = torch::randn({8, 8}).to(torch::kBFloat16);
  Inspect cache({q, p}, 4, gc::SimpleContrastiveLoss());
  auto loss = cache({x, y});
  EXPECT_EQ(loss.scalar_type(), torch::kFloat);
  EXPECT_EQ(cache.loss_input_dtypes, (std::vector<torch::ScalarType>{torch::kFloat, torch::kFloat}));
  EXPECT_EQ(cache.cache_dtypes, (std::vector<torch::ScalarType>{torch::kFloat, torch::kFloat}));
  ASSERT_TRUE(q->fc1->weight.grad().defined());
  EXPECT_EQ(q->fc1->weight.grad().scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(gctest::any_grad(p->parameters()));
}

TEST(PrecisionCache, FunctionalCachedBf16) {
  torch::manual_seed(14);
  gctest::Mlp q(16, 32, 8, 0.1), p(16, 32, 8, 0.1);
  auto x = torch::randn({12, 16}), y = torch::randn({12, 16});
  gc::Loss loss = gc::SimpleContrastiveLoss();
  torch::manual_seed(3);
  auto full = gctest::full_batch_chunked(q, p, x, y, 6, loss, gc::Precision::bf16);
  auto params = params_of({q.ptr().get(), p.ptr().get()});
  zero_grads(params);
  torch::manual_seed(3);
  auto call = gc::functional::cached([](gctest::Mlp m, const torch::Tensor& in) { return m(in); }, gc::Precision::bf16);
  std::vector<torch::Tensor> reps_q, reps_p;
  std::vector<gc::functional::Replay> replays;
  for (auto [model, input, reps] : {std::make_tuple(q, x, &reps_q), std::make_tuple(p, y, &reps_p)}) {
    for (const auto& c : input.split(6, 0)) {
      auto [rep, replay] = call(model, c);
      EXPECT_EQ(rep.scalar_type(), torch::kFloat);
      reps->push_back(rep);
      replays.push_back(replay);
    }
  }
  loss({torch::cat(reps_q), torch::cat(reps_p)}, {}).backward();
  for (size_t i = 0; i < replays.size(); ++i) replays[i](i < 2 ? reps_q[i] : reps_p[i - 2]);
  const double err = max_rel_error(grads_of(params), full);
  report_error("functional cached, bf16, dropout 0.1", err);
  EXPECT_LT(err, kTolSameBf16);
}

// ---- GradScaler ---------------------------------------------------------------------------

namespace {
struct ScalerFixture {
  torch::nn::Linear lin{4, 2};
  torch::optim::SGD sgd{lin->parameters(), torch::optim::SGDOptions(0.1)};
  torch::Tensor x = torch::randn({3, 4});
  torch::Tensor loss() { return lin(x).pow(2).sum(); }
  std::vector<torch::Tensor> true_grads() {
    sgd.zero_grad();
    loss().backward();
    auto g = grads_of(lin->parameters());
    sgd.zero_grad();
    return g;
  }
  void poison(double value) {
    auto g = lin->weight.mutable_grad();
    g.view(-1)[0] = value;
  }
};
}  // namespace

TEST(GradScaler, ScalesAndUnscales) {
  torch::manual_seed(20);
  ScalerFixture f;
  const auto truth = f.true_grads();
  gc::GradScaler scaler(gc::GradScalerOptions().init_scale(1024));
  auto scaled = scaler.scale(f.loss());
  scaled.backward();
  EXPECT_TRUE(torch::equal(f.lin->weight.grad(), truth[0] * 1024));
  scaler.unscale_(f.sgd);
  EXPECT_TRUE(torch::equal(f.lin->weight.grad(), truth[0]));  // powers of 2 scale exactly
  EXPECT_TRUE(torch::equal(f.lin->bias.grad(), truth[1]));
  EXPECT_FALSE(scaler.found_inf(f.sgd));
  const auto before = f.lin->weight.detach().clone();
  EXPECT_TRUE(scaler.step(f.sgd));
  EXPECT_TRUE(torch::allclose(f.lin->weight, before - 0.1 * truth[0]));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 1024);
  EXPECT_EQ(scaler.growth_tracker(), 1);
}

TEST(GradScaler, SkipsTheStepOnInfAndNaN) {
  for (double bad : {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    torch::manual_seed(21);
    ScalerFixture f;
    gc::GradScaler scaler(gc::GradScalerOptions().init_scale(256));
    scaler.scale(f.loss()).backward();
    f.poison(bad);
    const auto before = f.lin->weight.detach().clone();
    EXPECT_FALSE(scaler.step(f.sgd)) << bad;
    EXPECT_TRUE(scaler.found_inf(f.sgd));
    EXPECT_TRUE(torch::equal(f.lin->weight, before)) << "skipped step changed the weights";
    scaler.update();
    EXPECT_EQ(scaler.get_scale(), 128) << bad;
    EXPECT_EQ(scaler.growth_tracker(), 0);
  }
}

TEST(GradScaler, GrowthAndBackoffOverASequence) {
  torch::manual_seed(22);
  ScalerFixture f;
  gc::GradScaler scaler(gc::GradScalerOptions().init_scale(8).growth_interval(3).growth_factor(2).backoff_factor(0.25));
  // good good good | inf | good good | NaN | good good good
  const std::vector<bool> bad = {false, false, false, true, false, false, true, false, false, false};
  std::vector<double> scales;
  std::vector<bool> stepped;
  for (bool b : bad) {
    f.sgd.zero_grad();
    scaler.scale(f.loss()).backward();
    if (b) f.poison(scales.size() == 3 ? INFINITY : NAN);
    stepped.push_back(scaler.step(f.sgd));
    scaler.update();
    scales.push_back(scaler.get_scale());
  }
  EXPECT_EQ(scales, (std::vector<double>{8, 8, 16, 4, 4, 4, 1, 1, 1, 2}));
  for (size_t i = 0; i < bad.size(); ++i) EXPECT_EQ(stepped[i], !bad[i]) << i;
}

TEST(GradScaler, StateRoundTrip) {
  torch::manual_seed(23);
  ScalerFixture f;
  gc::GradScaler scaler(gc::GradScalerOptions().init_scale(512).growth_interval(7).backoff_factor(0.125));
  for (int i = 0; i < 3; ++i) {
    f.sgd.zero_grad();
    scaler.scale(f.loss()).backward();
    scaler.step(f.sgd);
    scaler.update();
  }
  torch::serialize::OutputArchive out;
  scaler.save(out);
  std::ostringstream bytes;
  out.save_to(bytes);
  std::istringstream in_bytes(bytes.str());
  torch::serialize::InputArchive in;
  in.load_from(in_bytes);
  gc::GradScaler restored;
  restored.load(in);
  EXPECT_EQ(restored.get_scale(), 512);
  EXPECT_EQ(restored.growth_tracker(), 3);
  EXPECT_EQ(restored.options().growth_interval(), 7);
  EXPECT_EQ(restored.options().backoff_factor(), 0.125);
  // Both go on identically: 4 more good steps grow both once, at the same step.
  for (auto* s : {&scaler, &restored}) {
    for (int i = 0; i < 4; ++i) {
      f.sgd.zero_grad();
      s->scale(f.loss()).backward();
      s->step(f.sgd);
      s->update();
    }
  }
  EXPECT_EQ(scaler.get_scale(), 1024);
  EXPECT_EQ(restored.get_scale(), 1024);
  EXPECT_EQ(restored.growth_tracker(), scaler.growth_tracker());

  torch::serialize::InputArchive empty;
  EXPECT_THROW(restored.load(empty), c10::Error);
}

TEST(GradScaler, MisuseIsReported) {
  ScalerFixture f;
  gc::GradScaler scaler;
  EXPECT_THROW(scaler.update(), c10::Error);  // nothing checked yet
  scaler.scale(f.loss()).backward();
  scaler.unscale_(f.sgd);
  EXPECT_THROW(scaler.unscale_(f.sgd), c10::Error);
  scaler.step(f.sgd);
  EXPECT_THROW(scaler.step(f.sgd), c10::Error);
  scaler.update();
  EXPECT_THROW(gc::GradScaler(gc::GradScalerOptions().backoff_factor(2)), c10::Error);
}

TEST(GradScaler, DisabledPassesThroughAndRanksAgree) {
  ScalerFixture f;
  gc::GradScaler off(gc::GradScalerOptions().enabled(false));
  auto l = f.loss();
  EXPECT_TRUE(off.scale(l).is_same(l));
  l.backward();
  EXPECT_TRUE(off.step(f.sgd));
  EXPECT_EQ(off.get_scale(), 1);

  // Another rank found an inf: this one skips too.
  int calls = 0;
  gc::GradScaler agreed(gc::GradScalerOptions().agree_found_inf([&calls](bool local) {
    ++calls;
    EXPECT_FALSE(local);
    return true;
  }));
  f.sgd.zero_grad();
  agreed.scale(f.loss()).backward();
  EXPECT_FALSE(agreed.step(f.sgd));
  agreed.update();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(agreed.get_scale(), 32768);
}

// ---- GradCache with a scaler ------------------------------------------------------------

TEST(PrecisionCache, ScaledCacheStepMatchesUnscaledAfterUnscale) {
  torch::manual_seed(30);
  gctest::Mlp q(16, 32, 8, 0.1), p(16, 32, 8, 0.1);
  auto x = torch::randn({12, 16}), y = torch::randn({12, 16});
  auto params = params_of({q.ptr().get(), p.ptr().get()});
  torch::optim::SGD sgd(params, torch::optim::SGDOptions(0.1));
  auto scaler = std::make_shared<gc::GradScaler>(gc::GradScalerOptions().init_scale(4096));

  gc::GradCache plain({q, p}, 4, gc::SimpleContrastiveLoss());
  gc::GradCache scaled({q, p}, 4, gc::SimpleContrastiveLoss(), gc::GradCacheOptions().scaler(scaler));
  torch::manual_seed(1);
  zero_grads(params);
  auto plain_loss = plain({x, y});
  auto expected = grads_of(params);
  torch::manual_seed(1);
  zero_grads(params);
  auto scaled_loss = scaled({x, y});
  EXPECT_EQ(scaled_loss.item<float>(), plain_loss.item<float>());  // the loss is returned unscaled
  auto raw = grads_of(params);
  for (size_t i = 0; i < raw.size(); ++i) EXPECT_TRUE(torch::equal(raw[i], expected[i] * 4096)) << i;
  scaler->unscale_(sgd);
  const double err = max_rel_error(grads_of(params), expected);
  report_error("scaled cache step (4096), unscaled", err);
  EXPECT_EQ(err, 0);  // a power-of-2 scale is exact
  EXPECT_TRUE(scaler->step(sgd));
  scaler->update();
}

// An overflow in the scaled gradients (what fp16 does at a too-large scale) is a skipped step
// and a smaller scale, not an error.
TEST(PrecisionCache, OverflowingScaleSkipsTheStep) {
  torch::manual_seed(31);
  gctest::Mlp q(8, 16, 8), p(8, 16, 8);
  auto params = params_of({q.ptr().get(), p.ptr().get()});
  torch::optim::SGD sgd(params, torch::optim::SGDOptions(0.1));
  auto scaler = std::make_shared<gc::GradScaler>(gc::GradScalerOptions().init_scale(1e38));
  gc::Loss big = [](const torch::Tensor& a, const torch::Tensor& b) { return (a * b).sum() * 1000; };
  gc::GradCache cache({q, p}, 4, big, gc::GradCacheOptions().scaler(scaler));
  const auto before = q->fc1->weight.detach().clone();
  sgd.zero_grad();
  EXPECT_NO_THROW(cache({torch::randn({8, 8}), torch::randn({8, 8})}));
  EXPECT_FALSE(scaler->step(sgd));
  scaler->update();
  EXPECT_EQ(scaler->get_scale(), 5e37);
  EXPECT_TRUE(torch::equal(q->fc1->weight, before));
}
