// The functional API: cached() and cat_input_tensor(), including the seed's example of one
// large contrastive batch assembled from 16 small loader batches.
#include "test_util.h"

namespace gc = gradcache;
using gctest::kTol64;
namespace gf = gradcache::functional;

namespace {
}

TEST(Functional, SixteenLoaderBatchesMakeOneLargeBatch) {
  torch::manual_seed(0);
  gctest::Mlp encoder(8, 32, 8, /*dropout=*/0.2);  // tied: one encoder for both sides
  encoder->to(torch::kFloat64);
  const int steps = 16, m = 3;
  std::vector<std::pair<torch::Tensor, torch::Tensor>> loader;
  for (int i = 0; i < steps; ++i) {
    loader.emplace_back(torch::randn({m, 8}, torch::kFloat64), torch::randn({2 * m, 8}, torch::kFloat64));
  }

  // Reference: the same calls in the same order, with grad, one backward over the whole batch.
  torch::manual_seed(5);
  std::vector<torch::Tensor> xs, ys;
  for (auto& [xx, yy] : loader) {
    xs.push_back(encoder(xx));
    ys.push_back(encoder(yy));
  }
  gc::SimpleContrastiveLoss()(torch::cat(xs), torch::cat(ys)).backward();
  auto full = gctest::grads_of(encoder->parameters());
  gctest::zero_grads(encoder->parameters());

  auto call_model = gf::cached([](gctest::Mlp& model, const torch::Tensor& x) { return model(x); });
  auto contrastive_loss = gf::cat_input_tensor(gc::SimpleContrastiveLoss());

  torch::manual_seed(5);
  std::vector<torch::Tensor> cache_x, cache_y;
  std::vector<gf::Replay> closures_x, closures_y;
  torch::Tensor generator_after_forward;
  for (int step = 0; step < steps; ++step) {
    auto& [xx, yy] = loader[step];
    auto [rx, cx] = call_model(encoder, xx);
    auto [ry, cy] = call_model(encoder, yy);
    EXPECT_TRUE(rx.is_leaf() && rx.requires_grad());
    cache_x.push_back(rx);
    cache_y.push_back(ry);
    closures_x.push_back(cx);
    closures_y.push_back(cy);
    if ((step + 1) % 16 == 0) {
      auto loss = contrastive_loss(cache_x, cache_y);
      loss.backward();
      generator_after_forward = at::globalContext().defaultGenerator(c10::kCPU).get_state();
      for (size_t i = 0; i < closures_x.size(); ++i) closures_x[i](cache_x[i]);
      for (size_t i = 0; i < closures_y.size(); ++i) closures_y[i](cache_y[i]);
    }
  }
  auto cached = gctest::grads_of(encoder->parameters());
  const double err = gctest::max_rel_error(cached, full);
  gctest::report_error("functional API, 16 loader batches, tied MLP with dropout, float64", err);
  EXPECT_LT(err, kTol64);
  EXPECT_TRUE(torch::equal(at::globalContext().defaultGenerator(c10::kCPU).get_state(), generator_after_forward));
}

TEST(Functional, SeveralRepresentationsFromOneCall) {
  torch::manual_seed(1);
  gctest::Mlp body(6, 12, 6, 0.1);
  torch::nn::Linear head(6, 6);
  body->to(torch::kFloat64);
  head->to(torch::kFloat64);
  auto x = torch::randn({5, 6}, torch::kFloat64);
  auto two_views = [](gctest::Mlp& b, torch::nn::Linear& h, const torch::Tensor& in) {
    auto r = b(in);
    return std::make_tuple(r, h(r));
  };
  auto loss_of = [](const torch::Tensor& a, const torch::Tensor& b) { return gc::SimpleContrastiveLoss()(a, b); };

  torch::manual_seed(9);
  auto [a_ref, b_ref] = two_views(body, head, x);
  loss_of(a_ref, b_ref).backward();
  auto params = body->parameters();
  auto hp = head->parameters();
  params.insert(params.end(), hp.begin(), hp.end());
  auto full = gctest::grads_of(params);
  gctest::zero_grads(params);

  torch::manual_seed(9);
  auto [reps, replay] = gf::cached(two_views)(body, head, x);
  loss_of(std::get<0>(reps), std::get<1>(reps)).backward();
  replay(reps);
  EXPECT_LT(gctest::max_rel_error(gctest::grads_of(params), full), kTol64);
}

TEST(Functional, ReplayBeforeBackwardIsExplained) {
  gctest::Mlp m(4, 4, 4);
  auto [rep, replay] = gf::cached([](gctest::Mlp& model, const torch::Tensor& x) { return model(x); })(m, torch::randn({2, 4}));
  try {
    replay(rep);
    ADD_FAILURE() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("backpropagate the loss into the cached representations"), std::string::npos);
  }
}
