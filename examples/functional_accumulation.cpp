// The functional API on the seed's example: a loader hands out small batches; 16 of them
// are assembled into one large contrastive batch whose gradients equal full-batch training.
//
//   functional_accumulation [--steps 64] [--batch-size 8] [--accumulate 16]
#include <gradcache/gradcache.h>
#include <torch/torch.h>

#include <cstdio>

#include "example_args.h"

namespace gf = gradcache::functional;

int main(int argc, char** argv) {
  const int64_t steps = flag(argc, argv, "steps", 64), m = flag(argc, argv, "batch-size", 8);
  const int64_t accumulate = flag(argc, argv, "accumulate", 16);
  torch::manual_seed(0);
  // A tied encoder: the same module encodes both sides.
  torch::nn::Sequential encoder(torch::nn::Linear(32, 64), torch::nn::GELU(), torch::nn::Dropout(0.1),
                                torch::nn::Linear(64, 32));
  torch::optim::AdamW optimizer(encoder->parameters(), torch::optim::AdamWOptions(1e-3));

  // The loader: pairs (xx, yy) where yy is a noisy copy of xx.
  auto loader = [&] {
    auto xx = torch::randn({m, 32});
    return std::make_pair(xx, xx + 0.5 * torch::randn({m, 32}));
  };

  auto call_model = gf::cached([](torch::nn::Sequential& model, const torch::Tensor& x) { return model->forward(x); });
  auto contrastive_loss = gf::cat_input_tensor(gradcache::SimpleContrastiveLoss());

  std::vector<torch::Tensor> cache_x, cache_y;
  std::vector<gf::Replay> closures_x, closures_y;
  for (int64_t step = 0; step < steps * accumulate; ++step) {
    auto [xx, yy] = loader();
    auto [rx, cx] = call_model(encoder, xx);
    auto [ry, cy] = call_model(encoder, yy);
    cache_x.push_back(rx);
    cache_y.push_back(ry);
    closures_x.push_back(cx);
    closures_y.push_back(cy);

    if ((step + 1) % accumulate == 0) {
      auto loss = contrastive_loss(cache_x, cache_y);  // one batch of accumulate * m pairs
      loss.backward();
      for (size_t i = 0; i < closures_x.size(); ++i) closures_x[i](cache_x[i]);
      for (size_t i = 0; i < closures_y.size(); ++i) closures_y[i](cache_y[i]);
      cache_x.clear();
      cache_y.clear();
      closures_x.clear();
      closures_y.clear();
      optimizer.step();
      optimizer.zero_grad();
      const auto update = (step + 1) / accumulate;
      if (update % 16 == 0 || update == steps || update == 1) {
        std::printf("update %3lld  loss %.4f  (batch of %lld pairs)\n", (long long)update, loss.item<double>(),
                    (long long)(accumulate * m));
      }
    }
  }
}
