// GradCache class: exactness against real full-batch backwards, RNG replay, stateful layers.
//
// Tolerances (relative to the largest gradient entry, see gctest::max_rel_error):
// the cache changes only the order in which per-row contributions are summed (per chunk,
// then across chunks) and, in float32, lets BLAS block a chunk's GEMM differently from the
// whole batch's. The rounding difference of a sum of n terms is below n * eps of the terms'
// magnitude; the longest reductions in these tests have n ~ 100 terms, so:
// - kTol64 = 1e-13 in float64 (100 * 2.2e-16 = 2.2e-14, and a margin for the loss's exp/log);
// - kTol32 = 1e-5 in float32 (100 * 1.2e-7 = 1.2e-5).
// Observed errors are ~1e-16 and ~2e-7. A wrong cache (no replay, a gradient slice applied
// to the wrong chunk, a lost chunk) gives errors of order 1e-2..1, far above both.
#include "test_util.h"

namespace gc = gradcache;
using gctest::kTol64;
using gctest::kTol32;
using gctest::recording;
using gctest::Recorder;
using gctest::grads_of;
using gctest::max_rel_error;
using gctest::report_error;
using gctest::zero_grads;

namespace {


std::vector<torch::Tensor> params_of(const std::vector<gc::Model>& models) {
  std::vector<torch::Tensor> out;
  std::vector<const void*> seen;
  for (const auto& m : models) {
    if (std::find(seen.begin(), seen.end(), m.identity()) != seen.end()) continue;
    seen.push_back(m.identity());
    for (auto& p : m.parameters()) out.push_back(p);
  }
  return out;
}

// A real full-batch step: every model sees its whole input in one forward, one backward.
std::vector<torch::Tensor> full_batch_grads(const std::vector<gc::Model>& models, const std::vector<gc::ModelInput>& inputs,
                                            const gc::Loss& loss, const gc::LossArgs& args = {}) {
  auto params = params_of(models);
  zero_grads(params);
  std::vector<torch::Tensor> reps;
  for (size_t i = 0; i < models.size(); ++i) reps.push_back(models[i](inputs[i]).toTensor());
  loss(reps, args).backward();
  return grads_of(params);
}

// The full-batch gradient for models with dropout: every chunk runs forward WITH grad, in
// the cache's chunk order (so the generators hand out the same dropout masks), all graphs
// are kept, and one backward runs through the loss over the whole batch.
std::vector<torch::Tensor> full_batch_grads_chunked(const std::vector<gc::Model>& models,
                                                    const std::vector<gc::ModelInput>& inputs,
                                                    const std::vector<int64_t>& chunk_sizes, const gc::Loss& loss,
                                                    const gc::LossArgs& args = {}) {
  auto params = params_of(models);
  zero_grads(params);
  std::vector<torch::Tensor> reps;
  for (size_t i = 0; i < models.size(); ++i) {
    std::vector<torch::Tensor> parts;
    for (const auto& chunk : gc::split_input(inputs[i], chunk_sizes[i])) parts.push_back(models[i](chunk).toTensor());
    reps.push_back(torch::cat(parts, 0));
  }
  loss(reps, args).backward();
  return grads_of(params);
}

std::vector<torch::Tensor> cache_grads(gc::GradCache& cache, const std::vector<gc::ModelInput>& inputs,
                                       const gc::LossArgs& args = {}) {
  auto params = params_of(cache.models());
  zero_grads(params);
  cache(inputs, args);
  return grads_of(params);
}


}  // namespace

TEST(GradCacheExactness, EvalModeMatchesFullBatchFloat64) {
  torch::manual_seed(0);
  gctest::Mlp q(8, 16, 6), p(8, 16, 6);
  q->to(torch::kFloat64);
  p->to(torch::kFloat64);
  q->eval();
  p->eval();
  auto x = torch::randn({12, 8}, torch::kFloat64), y = torch::randn({12, 8}, torch::kFloat64);
  gc::GradCache cache({q, p}, 4, gc::SimpleContrastiveLoss());
  auto full = full_batch_grads(cache.models(), {x, y}, gc::SimpleContrastiveLoss());
  auto cached = cache_grads(cache, {x, y});
  const double err = max_rel_error(cached, full);
  report_error("eval, float64, untied MLP, 12 rows in chunks of 4", err);
  EXPECT_LT(err, kTol64);
}

TEST(GradCacheExactness, EvalModeMatchesFullBatchFloat32) {
  torch::manual_seed(1);
  gctest::Mlp q(16, 32, 8), p(16, 32, 8);
  q->eval();
  p->eval();
  auto x = torch::randn({32, 16}), y = torch::randn({32, 16});
  gc::GradCache cache({q, p}, 8, gc::SimpleContrastiveLoss());
  auto full = full_batch_grads(cache.models(), {x, y}, gc::SimpleContrastiveLoss());
  auto cached = cache_grads(cache, {x, y});
  const double err = max_rel_error(cached, full);
  report_error("eval, float32, untied MLP, 32 rows in chunks of 8", err);
  EXPECT_LT(err, kTol32);
  EXPECT_TRUE(gctest::any_grad(q->parameters()));
  EXPECT_TRUE(gctest::any_grad(p->parameters()));
}

TEST(GradCacheExactness, ReturnsTheFullBatchLoss) {
  torch::manual_seed(2);
  gctest::Mlp q(8, 16, 4), p(8, 16, 4);
  q->to(torch::kFloat64);
  p->to(torch::kFloat64);
  auto x = torch::randn({10, 8}, torch::kFloat64), y = torch::randn({10, 8}, torch::kFloat64);
  gc::GradCache cache({q, p}, 3, gc::SimpleContrastiveLoss());
  auto loss = cache({x, y});
  EXPECT_FALSE(loss.requires_grad());
  EXPECT_EQ(loss.dim(), 0);
  torch::NoGradGuard no_grad;
  EXPECT_NEAR(loss.item<double>(), gc::SimpleContrastiveLoss()(q(x), p(y)).item<double>(), 1e-12);
}

TEST(GradCacheExactness, DropoutReplayIsBitIdenticalAndGradientsMatch) {
  torch::manual_seed(3);
  gctest::Mlp q(8, 32, 8, /*dropout=*/0.3), p(8, 32, 8, /*dropout=*/0.3);
  q->to(torch::kFloat64);
  p->to(torch::kFloat64);
  auto x = torch::randn({16, 8}, torch::kFloat64), y = torch::randn({16, 8}, torch::kFloat64);
  auto rec_q = std::make_shared<Recorder>(), rec_p = std::make_shared<Recorder>();
  // Nothing retained: every chunk runs twice, once without grad and once replayed.
  gc::GradCache cache({recording(q, rec_q), recording(p, rec_p)}, 5, gc::SimpleContrastiveLoss(),
                      gc::GradCacheOptions().retain_chunks(0));

  torch::manual_seed(42);
  auto full = full_batch_grads_chunked(cache.models(), {x, y}, {5, 5}, gc::SimpleContrastiveLoss());
  rec_q->grad_outputs.clear();
  rec_p->grad_outputs.clear();
  torch::manual_seed(42);
  auto cached = cache_grads(cache, {x, y});

  for (auto* rec : {rec_q.get(), rec_p.get()}) {
    ASSERT_EQ(rec->no_grad_outputs.size(), 4u);  // 16 rows in chunks of 5
    ASSERT_EQ(rec->grad_outputs.size(), 4u);
    for (size_t c = 0; c < 4; ++c) EXPECT_TRUE(torch::equal(rec->no_grad_outputs[c], rec->grad_outputs[c])) << c;
  }
  // Dropout is really on: the same input in eval mode gives another representation.
  {
    torch::NoGradGuard no_grad;
    q->eval();
    EXPECT_FALSE(torch::allclose(q(x.slice(0, 0, 5)), rec_q->no_grad_outputs[0]));
    q->train();
  }
  const double err = max_rel_error(cached, full);
  report_error("dropout 0.3, float64, untied MLP, 16 rows in chunks of 5", err);
  EXPECT_LT(err, kTol64);
}

TEST(GradCacheExactness, WithoutReplayDropoutGradientsWouldDiffer) {
  // Guards the test above against passing vacuously: replaying under a fresh generator
  // state (what a cache without RNG replay does) gives clearly different gradients.
  struct NoReplay : gc::GradCache {
    using gc::GradCache::GradCache;
    ForwardResult forward_no_grad(size_t i, const std::vector<gc::ModelInput>& chunks) override {
      auto r = gc::GradCache::forward_no_grad(i, chunks);
      for (auto& c : r.chunks) c.rng_state = gc::RngState::capture();  // "replay" from wherever it is now
      return r;
    }
  };
  torch::manual_seed(3);
  gctest::Mlp q(8, 32, 8, 0.3), p(8, 32, 8, 0.3);
  q->to(torch::kFloat64);
  p->to(torch::kFloat64);
  auto x = torch::randn({16, 8}, torch::kFloat64), y = torch::randn({16, 8}, torch::kFloat64);
  NoReplay broken({q, p}, 5, gc::SimpleContrastiveLoss());
  torch::manual_seed(42);
  auto full = full_batch_grads_chunked(broken.models(), {x, y}, {5, 5}, gc::SimpleContrastiveLoss());
  torch::manual_seed(42);
  auto wrong = cache_grads(broken, {x, y});
  EXPECT_GT(max_rel_error(wrong, full), 1e-2);
}

TEST(GradCacheExactness, TiedEncoderWithDropout) {
  torch::manual_seed(4);
  gctest::Mlp enc(8, 32, 8, 0.2);
  enc->to(torch::kFloat64);
  auto x = torch::randn({12, 8}, torch::kFloat64), y = torch::randn({12, 8}, torch::kFloat64);
  // Nothing retained (the default), and the first chunk of each use of the encoder retained.
  for (int64_t retain : {-1, 1}) {
    gc::GradCache cache({enc, enc}, 4, gc::SimpleContrastiveLoss(), gc::GradCacheOptions().retain_chunks(retain));
    EXPECT_EQ(cache.models()[0].identity(), cache.models()[1].identity());
    torch::manual_seed(7);
    auto full = full_batch_grads_chunked(cache.models(), {x, y}, {4, 4}, gc::SimpleContrastiveLoss());
    torch::manual_seed(7);
    auto cached = cache_grads(cache, {x, y});
    const double err = max_rel_error(cached, full);
    report_error("tied MLP, dropout 0.2, float64, retain_chunks " + std::to_string(retain), err);
    EXPECT_LT(err, kTol64) << "retain " << retain;
  }
}

TEST(GradCacheExactness, HardNegativesStrideLayout) {
  torch::manual_seed(5);
  gctest::Mlp q(8, 16, 8, 0.1), p(8, 16, 8, 0.1);
  q->to(torch::kFloat64);
  p->to(torch::kFloat64);
  const int64_t n = 6, k = 2;
  auto x = torch::randn({n, 8}, torch::kFloat64), y = torch::randn({n * (1 + k), 8}, torch::kFloat64);
  gc::GradCache cache({q, p}, std::vector<int64_t>{4, 5}, gc::SimpleContrastiveLoss());
  torch::manual_seed(8);
  auto full = full_batch_grads_chunked(cache.models(), {x, y}, {4, 5}, gc::SimpleContrastiveLoss());
  torch::manual_seed(8);
  auto cached = cache_grads(cache, {x, y});
  const double err = max_rel_error(cached, full);
  report_error("2 hard negatives per query, chunk sizes 4 and 5, float64", err);
  EXPECT_LT(err, kTol64);
}

TEST(GradCacheExactness, MapInputTransformerWithDropoutFloat32) {
  torch::manual_seed(6);
  gctest::TextEncoder enc(50, 16, /*dropout=*/0.1);
  const int64_t b = 10, t = 7;
  auto make = [&](int64_t rows) {
    auto ids = torch::randint(1, 50, {rows, t});
    auto lengths = torch::randint(2, t + 1, {rows, 1});
    auto mask = torch::arange(t).unsqueeze(0) < lengths;
    return std::map<std::string, torch::Tensor>{{"input_ids", ids}, {"attention_mask", mask}};
  };
  gc::ModelInput xq = make(b), xp = make(b);
  gc::GradCache cache({enc, enc}, 3, gc::SimpleContrastiveLoss(gc::ContrastiveLossOptions().temperature(0.5)));
  gc::Loss loss = gc::SimpleContrastiveLoss(gc::ContrastiveLossOptions().temperature(0.5));
  torch::manual_seed(9);
  auto full = full_batch_grads_chunked(cache.models(), {xq, xp}, {3, 3}, loss);
  torch::manual_seed(9);
  auto cached = cache_grads(cache, {xq, xp});
  const double err = max_rel_error(cached, full);
  report_error("Transformer layer, map input, dropout 0.1, tied, float32", err);
  EXPECT_LT(err, kTol32);
}

TEST(GradCacheExactness, TorchScriptModuleWithDropout) {
  torch::manual_seed(10);
  torch::jit::Module m("Encoder");
  m.register_attribute("training", c10::BoolType::get(), true);  // what train()/eval() set
  m.register_parameter("w1", torch::randn({8, 16}, torch::kFloat64).requires_grad_(), false);
  m.register_parameter("w2", torch::randn({16, 4}, torch::kFloat64).requires_grad_(), false);
  m.define(R"(
    def forward(self, x):
        h = torch.dropout(torch.tanh(torch.mm(x, self.w1)), 0.25, self.training)
        return torch.mm(h, self.w2)
  )");
  m.train();
  auto x = torch::randn({9, 8}, torch::kFloat64), y = torch::randn({9, 8}, torch::kFloat64);
  gc::GradCache cache({m, m}, 4, gc::SimpleContrastiveLoss());
  torch::manual_seed(11);
  auto full = full_batch_grads_chunked(cache.models(), {x, y}, {4, 4}, gc::SimpleContrastiveLoss());
  torch::manual_seed(11);
  auto cached = cache_grads(cache, {x, y});
  const double err = max_rel_error(cached, full);
  report_error("TorchScript module, dropout 0.25, float64", err);
  EXPECT_LT(err, kTol64);
  EXPECT_TRUE(gctest::any_grad(cache.models()[0].parameters()));
}

TEST(GradCacheExactness, BatchNotDivisibleByChunkAndChunkLargerThanBatch) {
  for (int64_t chunk : {3, 7, 10, 64}) {
    torch::manual_seed(12);
    gctest::Mlp q(6, 12, 5), p(6, 12, 5);
    q->to(torch::kFloat64);
    p->to(torch::kFloat64);
    q->eval();
    p->eval();
    auto x = torch::randn({10, 6}, torch::kFloat64), y = torch::randn({10, 6}, torch::kFloat64);
    gc::GradCache cache({q, p}, chunk, gc::SimpleContrastiveLoss());
    auto full = full_batch_grads(cache.models(), {x, y}, gc::SimpleContrastiveLoss());
    auto cached = cache_grads(cache, {x, y});
    const double err = max_rel_error(cached, full);
    report_error("10 rows in chunks of " + std::to_string(chunk) + ", float64", err);
    EXPECT_LT(err, kTol64) << "chunk " << chunk;
  }
}

TEST(GradCacheExactness, SymmetricLossExplicitTargetsAndSumReduction) {
  torch::manual_seed(13);
  gctest::Mlp q(8, 16, 8), p(8, 16, 8);
  q->to(torch::kFloat64);
  p->to(torch::kFloat64);
  q->eval();
  p->eval();
  auto x = torch::randn({6, 8}, torch::kFloat64), y = torch::randn({9, 8}, torch::kFloat64);
  auto target = torch::tensor({8, 0, 3, 1, 5, 7}, torch::kLong);
  gc::LossArgs args{{"target", target}, {"reduction", "sum"}};
  gc::GradCache cache({q, p}, 4, gc::SymmetricContrastiveLoss());
  auto full = full_batch_grads(cache.models(), {x, y}, gc::SymmetricContrastiveLoss(), args);
  auto cached = cache_grads(cache, {x, y}, args);
  const double err = max_rel_error(cached, full);
  report_error("symmetric loss, explicit targets, sum reduction, float64", err);
  EXPECT_LT(err, kTol64);
}

TEST(GradCacheExactness, EveryModelKind) {
  // The same MLP reached as a module holder, a shared_ptr, an AnyModule, a Sequential and
  // a tensor lambda: each must give the full-batch gradients.
  torch::manual_seed(14);
  auto x = torch::randn({7, 5}, torch::kFloat64), y = torch::randn({7, 5}, torch::kFloat64);
  torch::nn::Sequential seq(torch::nn::Linear(5, 6), torch::nn::Tanh(), torch::nn::Linear(6, 4));
  seq->to(torch::kFloat64);
  gctest::Mlp mlp(5, 6, 4);
  mlp->to(torch::kFloat64);
  std::vector<std::pair<std::string, gc::Model>> kinds = {
      {"holder", gc::Model(mlp)},
      {"shared_ptr", gc::Model(mlp.ptr())},
      {"AnyModule", gc::Model(torch::nn::AnyModule(mlp))},
      {"Sequential", gc::Model(seq)},
      {"lambda", gc::Model([mlp](const torch::Tensor& t) mutable { return mlp(t); }).with_state_of(mlp)},
  };
  for (auto& [name, model] : kinds) {
    gc::GradCache cache({model, gc::Model(seq)}, 3, gc::SimpleContrastiveLoss());
    auto full = full_batch_grads(cache.models(), {x, y}, gc::SimpleContrastiveLoss());
    auto cached = cache_grads(cache, {x, y});
    EXPECT_LT(max_rel_error(cached, full), kTol64) << name;
  }
}

TEST(GradCacheExactness, TupleOutputWithGetRepFnAndPositionalInputs) {
  torch::manual_seed(15);
  gctest::Mlp mlp(4, 8, 3);
  mlp->to(torch::kFloat64);
  // Two positional tensors in, a (representation, something else) tuple out.
  auto model = gc::Model([mlp](const torch::Tensor& a, const torch::Tensor& b) mutable {
                 auto r = mlp(a + b);
                 return std::make_tuple(r, r.sum(1));
               }).with_state_of(mlp);
  auto opts = gc::GradCacheOptions().get_rep_fn([](const c10::IValue& out) { return out.toTupleRef().elements()[0].toTensor(); });
  gc::GradCache cache({model, model}, 2, gc::SimpleContrastiveLoss(), opts);
  auto a = torch::randn({5, 4}, torch::kFloat64), b = torch::randn({5, 4}, torch::kFloat64);
  std::vector<torch::Tensor> xin{a, b}, yin{b, a * 2};
  zero_grads(mlp->parameters());
  gc::SimpleContrastiveLoss()(mlp(a + b), mlp(b + a * 2)).backward();
  auto full = grads_of(mlp->parameters());
  auto cached = cache_grads(cache, {xin, yin});
  EXPECT_LT(max_rel_error(cached, full), kTol64);
}

TEST(GradCacheState, GeneratorsEndWhereTheFirstPassLeftThem) {
  torch::manual_seed(16);
  gctest::Mlp q(8, 16, 8, 0.5), p(8, 16, 8, 0.5);
  auto x = torch::randn({10, 8}), y = torch::randn({10, 8});
  gc::GradCache cache({q, p}, 3, gc::SimpleContrastiveLoss());

  // What the first pass alone does to the generator: the same chunked no-grad forwards.
  torch::manual_seed(100);
  {
    torch::NoGradGuard no_grad;
    for (const auto& c : gc::split_input(x, 3)) q(c.arg(0));
    for (const auto& c : gc::split_input(y, 3)) p(c.arg(0));
  }
  auto expected = torch::rand({4});
  torch::manual_seed(100);
  cache({x, y});
  EXPECT_TRUE(torch::equal(torch::rand({4}), expected));
}

TEST(GradCacheState, BatchNormStatisticsAreUpdatedOncePerChunk) {
  // Two identical pairs of networks (same seed): one trained through the cache, one through
  // the reference, which runs the same chunked forwards once with grad and one backward.
  auto make = [] {
    torch::manual_seed(17);
    gctest::BnNet q(6, 12, 4), p(6, 12, 4);
    q->to(torch::kFloat64);
    p->to(torch::kFloat64);
    return std::make_pair(q, p);
  };
  // Nothing retained (the default), and one retained chunk per model (updated in step 1 only).
  for (int64_t retain : {-1, 1}) {
    auto [q, p] = make();
    auto [q_ref, p_ref] = make();
    auto x = torch::randn({12, 6}, torch::kFloat64), y = torch::randn({12, 6}, torch::kFloat64);
    auto full =
        full_batch_grads_chunked({gc::Model(q_ref), gc::Model(p_ref)}, {x, y}, {4, 4}, gc::SimpleContrastiveLoss());
    gc::GradCache cache({q, p}, 4, gc::SimpleContrastiveLoss(), gc::GradCacheOptions().retain_chunks(retain));
    auto cached = cache_grads(cache, {x, y});
    const double err = max_rel_error(cached, full);
    report_error("BatchNorm1d in train mode, float64, retain_chunks " + std::to_string(retain), err);
    EXPECT_LT(err, kTol64);
    EXPECT_TRUE(torch::allclose(q->bn->running_mean, q_ref->bn->running_mean, 0, 1e-14));
    EXPECT_TRUE(torch::allclose(q->bn->running_var, q_ref->bn->running_var, 0, 1e-14));
    EXPECT_EQ(q->bn->num_batches_tracked.item<int64_t>(), 3);  // three chunks, not six
    EXPECT_EQ(p->bn->num_batches_tracked.item<int64_t>(), 3);
  }
}

TEST(GradCacheState, OnModelBackwardDoneRunsAfterEachModelsLastChunk) {
  struct Hooked : gc::GradCache {
    using gc::GradCache::GradCache;
    std::vector<std::pair<size_t, bool>> calls;
    std::vector<bool> grads_present;
    std::vector<torch::Tensor> params;
    void on_model_backward_done(size_t i) override {
      calls.emplace_back(i, last_use_of_module(i));
      grads_present.push_back(gctest::any_grad(params));
    }
  };
  gctest::Mlp enc(4, 8, 4);
  Hooked cache({enc, enc}, 2, gc::SimpleContrastiveLoss());
  cache.params = enc->parameters();
  cache({torch::randn({5, 4}), torch::randn({5, 4})});
  ASSERT_EQ(cache.calls.size(), 2u);
  EXPECT_EQ(cache.calls[0], std::make_pair(size_t{0}, false));  // tied: model 1 uses it later
  EXPECT_EQ(cache.calls[1], std::make_pair(size_t{1}, true));
  EXPECT_TRUE(cache.grads_present[0]);
}
