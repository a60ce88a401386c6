// --loss streaming / streaming-symmetric and --tile: the settings, and a cache training step
// through the streaming loss that gives the gradients of a full-batch backward through the
// dense loss (the score matrix the streaming loss never builds).
#include "retriever/config/train_config.h"
#include "retriever/model/batching.h"
#include "retriever/model/encoders.h"
#include "retriever/train/training_loss.h"
#include "retriever/train/training_step.h"
#include "tests/retriever/step_batch.h"
#include "tests/core/test_util.h"

#include <gradcache/gradcache.h>
#include <gradcache/streaming_loss.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace gr = gradcache::retriever;

namespace {

std::string settings_error(const gr::GivenSettings& flags) {
  try {
    gr::validate(gr::build_train_config(nlohmann::json::object(), flags));
  } catch (const gr::SettingsError& e) {
    return e.what();
  }
  return "";
}

// A tied fp64 Transformer encoder with dropout, and a batch of 8 queries with a positive and
// one hard negative each (texts of different lengths, so each chunk is trimmed differently).
struct Batch {
  gr::TransformerEncoder encoder{
      gr::EncoderOptions(40).dim(16).heads(2).layers(1).ffn_dim(32).max_len(12).dropout(0.1)};
  gr::TokenBatch queries, passages;
  static constexpr int64_t kQueryChunk = 3, kPassageChunk = 5;

  Batch() {
    encoder->to(torch::kFloat64);
    auto batch = step_test::eight_queries_with_hard_negatives();
    queries = std::move(batch.queries);
    passages = std::move(batch.passages);
  }

  // The gradients of one cache step (query chunks of 3, passage chunks of 5) through `loss`.
  std::vector<torch::Tensor> cache_step(const gradcache::Loss& loss, double* loss_out) {
    const auto params = encoder->parameters();
    gctest::zero_grads(params);
    auto step = gr::make_training_step(encoder, encoder, loss,
                                       gr::StepOptions()
                                           .mode(gr::TrainMode::Cache)
                                           .chunk_size(kQueryChunk)
                                           .passage_chunk_size(kPassageChunk)
                                           .split_input_fn(gr::split_and_trim));
    torch::manual_seed(5);
    *loss_out = step->run(queries, passages);
    return gctest::grads_of(params);
  }

  // A plain backward through `dense` over the whole batch's representations, computed with
  // the graph, chunk by chunk in the cache's order from the same seed: the same dropout masks
  // as the cache's first pass and its replay, so the gradients must agree exactly in math.
  std::vector<torch::Tensor> full_backward(const gradcache::Loss& dense, double* loss_out, uint64_t seed = 5) {
    const auto params = encoder->parameters();
    gctest::zero_grads(params);
    const gradcache::Model model(encoder);
    torch::manual_seed(seed);
    auto encode = [&](const gr::TokenBatch& batch, int64_t chunk) {
      std::vector<torch::Tensor> reps;
      for (const auto& part : gr::split_and_trim(batch, chunk)) reps.push_back(model(part).toTensor());
      return torch::cat(reps);
    };
    const auto q = encode(queries, kQueryChunk);
    const auto p = encode(passages, kPassageChunk);
    auto value = dense({q, p}, {});
    *loss_out = value.item<double>();
    value.backward();
    return gctest::grads_of(params);
  }
};

gr::TrainConfig streaming_config(const std::string& loss) {
  gr::TrainConfig c;
  c.loss.kind = gr::parse_choice(gr::loss_names(), loss, "--loss");
  c.loss.temperature = 0.05;
  c.loss.tile_size = 3;  // smaller than both 8 queries and 16 passages: several tiles, ragged ones last
  return c;
}

// fp64 throughout. The two sides differ only in the order of summations (tile-wise online
// log-sum-exp vs one softmax; the cache's chunk-wise backward vs one graph), each an O(eps)
// relative rounding, amplified by the ~1/temperature = 20 scale of the scores and summed over
// at most a few hundred terms: well within kTol64 = 1e-13 (eps = 1.1e-16). In fp32 the same
// comparison would need kTol32.
void expect_same_gradients(const std::string& loss_name, const gradcache::Loss& dense) {
  Batch b;
  double streaming_loss = 0, dense_loss = 0;
  const auto streaming = b.cache_step(gr::make_loss(streaming_config(loss_name).loss), &streaming_loss);
  const auto reference = b.full_backward(dense, &dense_loss);
  const double error = gctest::max_rel_error(streaming, reference);
  gctest::report_error("train --loss " + loss_name + " (cache, chunks 3/5, tile 3, dropout 0.1) vs dense full batch",
                       error);
  EXPECT_LT(error, gctest::kTol64);
  EXPECT_NEAR(streaming_loss, dense_loss, 1e-13 * std::abs(dense_loss));
  EXPECT_TRUE(std::isfinite(dense_loss) && dense_loss > 0);
  EXPECT_TRUE(gctest::any_grad(b.encoder->parameters()));
}

}  // namespace

TEST(TrainingLoss, StreamingCacheStepEqualsDenseFullBatchBackward) {
  expect_same_gradients("streaming",
                        gradcache::SimpleContrastiveLoss(gradcache::ContrastiveLossOptions().temperature(0.05)));
}

TEST(TrainingLoss, StreamingSymmetricCacheStepEqualsDenseSymmetricFullBatchBackward) {
  expect_same_gradients("streaming-symmetric",
                        gradcache::SymmetricContrastiveLoss(gradcache::ContrastiveLossOptions().temperature(0.05)));
}

// The dropout masks matter: a reference drawn from another seed differs, so the test above
// would notice a replay that drew other masks.
TEST(TrainingLoss, TheReferenceDependsOnTheDropoutMasks) {
  Batch b;
  double streaming_loss = 0, other_loss = 0;
  const auto streaming = b.cache_step(gr::make_loss(streaming_config("streaming").loss), &streaming_loss);
  const auto other_masks = b.full_backward(
      gradcache::SimpleContrastiveLoss(gradcache::ContrastiveLossOptions().temperature(0.05)), &other_loss, 6);
  EXPECT_GT(gctest::max_rel_error(streaming, other_masks), 1e-6);
}

TEST(TrainingLoss, LossAndTileSettings) {
  EXPECT_EQ(gr::TrainConfig{}.loss.tile_size, gradcache::kDefaultTileSize);  // the library's measured default
  for (const char* loss : {"infonce", "symmetric", "streaming", "streaming-symmetric"}) {
    EXPECT_EQ(settings_error({{"loss", loss}}), "") << loss;
  }
  EXPECT_NE(settings_error({{"loss", "stream"}}).find("--loss"), std::string::npos);
  for (const char* tile : {"0", "-4"}) {
    const auto message = settings_error({{"loss", "streaming"}, {"tile_size", tile}});
    EXPECT_NE(message.find("--tile must be positive"), std::string::npos) << message;
  }
  // Saved in config.json and read back; the loss is what a resumed run computes.
  const auto c = gr::build_train_config(nlohmann::json::object(), {{"loss", "streaming"}, {"tile_size", "16"}});
  EXPECT_EQ(c.loss.tile_size, 16);
  const nlohmann::json saved = c;
  EXPECT_EQ(saved.at("tile_size"), 16);
  EXPECT_EQ(saved.at("loss"), "streaming");
  EXPECT_EQ(gr::read_saved_config(saved).loss.tile_size, 16);
  EXPECT_TRUE(gr::resume_invariant(c).contains("loss"));
  EXPECT_TRUE(gr::resume_invariant(c).contains("tile_size"));
  EXPECT_TRUE(gr::is_symmetric(gr::LossKind::StreamingSymmetric) && gr::is_symmetric(gr::LossKind::Symmetric));
  EXPECT_FALSE(gr::is_symmetric(gr::LossKind::Streaming) || gr::is_symmetric(gr::LossKind::InfoNce));
  const auto options = gr::streaming_loss_options(c.loss);
  EXPECT_EQ(options.tile_size(), 16);
  EXPECT_EQ(options.temperature(), c.loss.temperature);
  EXPECT_FALSE(options.symmetric());
  // An unknown --loss never reaches make_loss: the settings table refuses it, from a file or a flag.
  EXPECT_THROW(gr::build_train_config(nlohmann::json{{"loss", "cosine"}}, {}), gr::SettingsError);
  EXPECT_THROW(gr::build_train_config(nlohmann::json::object(), {{"loss", "cosine"}}), gr::SettingsError);
}
