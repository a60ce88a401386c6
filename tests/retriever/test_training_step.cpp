// The training-step layer: cache, full and accumulate compute what they should, and a
// non-finite loss leaves the gradients alone.
#include "retriever/model/batching.h"
#include "retriever/model/encoders.h"
#include "retriever/train/training_step.h"
#include "tests/retriever/step_batch.h"
#include "tests/core/test_util.h"

#include <gradcache/gradcache.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <memory>

namespace gr = gradcache::retriever;

namespace {

// A tied Transformer encoder with dropout, and a batch of 8 queries with 1 + 1 passages each
// (texts of different lengths, so chunks and sub-batches are trimmed differently).
struct Fixture {
  gr::TransformerEncoder encoder{
      gr::EncoderOptions(40).dim(16).heads(2).layers(1).ffn_dim(32).max_len(12).dropout(0.1)};
  gr::TokenBatch queries, passages;
  gradcache::Loss loss = gradcache::SimpleContrastiveLoss(gradcache::ContrastiveLossOptions().temperature(0.1));

  Fixture() {
    auto batch = step_test::eight_queries_with_hard_negatives();
    queries = std::move(batch.queries);
    passages = std::move(batch.passages);
  }

  // The gradients one step of `options` leaves, from zero, with the generator at `seed`.
  std::vector<torch::Tensor> gradients(const gr::StepOptions& options, uint64_t seed = 5, double* loss_out = nullptr) {
    const auto params = encoder->parameters();
    gctest::zero_grads(params);
    auto step = gr::make_training_step(encoder, encoder, loss, options);
    torch::manual_seed(seed);
    const double value = step->run(queries, passages);
    if (loss_out) *loss_out = value;
    return gctest::grads_of(params);
  }
};

}  // namespace

// Tolerance: the cache backpropagates the loss into leaf copies of the representations, then
// each chunk's slice of that gradient into the parameters, so only the order of the fp32
// summations differs from the full batch (tests/core/test_util.h, kTol32).
TEST(TrainingStep, CacheEqualsFullWithDropoutOn) {
  Fixture f;
  double full_loss = 0, cache_loss = 0;
  const auto full = f.gradients(gr::StepOptions().mode(gr::TrainMode::Full), 5, &full_loss);
  // One chunk per model: the dropout masks of step 1, the replay and the full pass are the
  // same draws, so the replay's generator bookkeeping is what is checked.
  const auto one_chunk = f.gradients(
      gr::StepOptions().mode(gr::TrainMode::Cache).chunk_size(8).passage_chunk_size(16).split_input_fn(gr::split_and_trim), 5,
      &cache_loss);
  gctest::report_error("step layer: cache (one chunk) vs full, dropout 0.1", gctest::max_rel_error(one_chunk, full));
  EXPECT_LT(gctest::max_rel_error(one_chunk, full), gctest::kTol32);
  EXPECT_NEAR(cache_loss, full_loss, 1e-6 * std::abs(full_loss));
  EXPECT_TRUE(gctest::any_grad(f.encoder->parameters()));
}

TEST(TrainingStep, CacheInChunksEqualsFullWithoutDropout) {
  // Several chunks draw other dropout masks than one pass over the batch; without dropout the
  // results agree up to fp32 summation order (and the trimming of each chunk's padding).
  Fixture f;
  f.encoder->eval();
  const auto full = f.gradients(gr::StepOptions().mode(gr::TrainMode::Full));
  const auto chunked =
      f.gradients(gr::StepOptions().mode(gr::TrainMode::Cache).chunk_size(3).passage_chunk_size(5).split_input_fn(gr::split_and_trim));
  gctest::report_error("step layer: cache (chunks of 3 and 5) vs full", gctest::max_rel_error(chunked, full));
  EXPECT_LT(gctest::max_rel_error(chunked, full), gctest::kTol32);
}

// sort_passages: the passages run in order of their own length and the loss gets their
// representations back in batch order. With dropout on, the reference is a real full-batch
// backward whose passage pass sees the passages in that same order (so it draws the masks the
// cache's one chunk draws) and whose loss reads them back through the same index: if the cache
// did not sort, or put the rows back wrongly, the masks or the pairs would differ.
TEST(TrainingStep, CacheWithSortedPassagesEqualsFullWithDropoutOn) {
  Fixture f;
  const auto lengths = f.passages.at("attention_mask").ne(0).sum(1);
  const auto order = std::get<1>(lengths.sort(/*stable=*/true, 0, /*descending=*/false));
  ASSERT_FALSE(order.equal(torch::arange(order.size(0))));  // the fixture's passages are not in length order
  gr::TokenBatch sorted;
  for (const auto& [name, t] : f.passages) sorted[name] = t.index_select(0, order);
  const auto params = f.encoder->parameters();
  gctest::zero_grads(params);
  torch::manual_seed(5);
  auto q_rep = f.encoder->forward(gr::trim_padding(f.queries));
  auto p_rep = f.encoder->forward(gr::trim_padding(sorted)).index_select(0, torch::argsort(order));
  auto loss = f.loss({q_rep, p_rep});
  loss.backward();
  const auto full = gctest::grads_of(params);
  double cache_loss = 0;
  const auto cache = f.gradients(gr::StepOptions()
                                     .mode(gr::TrainMode::Cache)
                                     .chunk_size(8)
                                     .passage_chunk_size(16)
                                     .split_input_fn(gr::split_and_trim)
                                     .sort_passages(true),
                                 5, &cache_loss);
  gctest::report_error("step layer: cache with sorted passages vs full, dropout 0.1", gctest::max_rel_error(cache, full));
  EXPECT_LT(gctest::max_rel_error(cache, full), gctest::kTol32);
  EXPECT_NEAR(cache_loss, loss.item<double>(), 1e-6 * std::abs(loss.item<double>()));
}

TEST(TrainingStep, CacheWithSortedPassagesInChunksEqualsFullWithoutDropout) {
  Fixture f;
  f.encoder->eval();
  const auto full = f.gradients(gr::StepOptions().mode(gr::TrainMode::Full));
  const auto chunked = f.gradients(gr::StepOptions()
                                       .mode(gr::TrainMode::Cache)
                                       .chunk_size(3)
                                       .passage_chunk_size(5)
                                       .split_input_fn(gr::split_and_trim)
                                       .sort_passages(true));
  EXPECT_LT(gctest::max_rel_error(chunked, full), gctest::kTol32);
}

TEST(TrainingStep, AccumulateEqualsFullWhenOneSubBatchHoldsTheBatch) {
  Fixture f;
  double full_loss = 0, accumulate_loss = 0;
  const auto full = f.gradients(gr::StepOptions().mode(gr::TrainMode::Full), 5, &full_loss);
  // Same passes in the same order (dropout included); the loss is scaled by 8 / 8.
  const auto accumulated = f.gradients(gr::StepOptions().mode(gr::TrainMode::Accumulate).sub_batch_size(8), 5, &accumulate_loss);
  EXPECT_LT(gctest::max_rel_error(accumulated, full), gctest::kTol32);
  EXPECT_NEAR(accumulate_loss, full_loss, 1e-6 * std::abs(full_loss));
}

TEST(TrainingStep, AccumulateSumsSubBatchLossesScaledByTheirShare) {
  // Sub-batches of 3, 3 and 2 queries, each with only its own passages as negatives: the sum of
  // the full-mode steps on each sub-batch, each scaled by its rows over 8.
  Fixture f;
  f.encoder->eval();
  double accumulate_loss = 0;
  const auto accumulated =
      f.gradients(gr::StepOptions().mode(gr::TrainMode::Accumulate).sub_batch_size(3).split_input_fn(gr::split_and_trim), 5,
                  &accumulate_loss);
  const auto params = f.encoder->parameters();
  gctest::zero_grads(params);
  double expected_loss = 0;
  for (int64_t start : {0, 3, 6}) {
    const int64_t rows = std::min<int64_t>(3, 8 - start);
    gr::TokenBatch q, p;
    for (const auto& [name, t] : f.queries) q[name] = t.slice(0, start, start + rows);
    for (const auto& [name, t] : f.passages) p[name] = t.slice(0, 2 * start, 2 * (start + rows));
    auto q_rep = f.encoder->forward(gr::trim_padding(q)), p_rep = f.encoder->forward(gr::trim_padding(p));
    auto loss = f.loss({q_rep, p_rep}) * (rows / 8.0);
    expected_loss += loss.item<double>();
    loss.backward();
  }
  EXPECT_LT(gctest::max_rel_error(accumulated, gctest::grads_of(params)), gctest::kTol32);
  EXPECT_NEAR(accumulate_loss, expected_loss, 1e-6 * std::abs(expected_loss));
}

TEST(TrainingStep, NonFiniteLossLeavesGradientsAsTheyWere) {
  // Each mode, and accumulate where the second of two sub-batches is the one that fails
  // (the first was already backpropagated: the step must put the gradients back).
  for (const char* mode : {"cache", "full", "accumulate"}) {
    Fixture f;
    const auto params = f.encoder->parameters();
    auto good = gr::make_training_step(f.encoder, f.encoder, f.loss, gr::StepOptions().mode(gr::parse_choice(gr::train_mode_names(), mode, "mode")).chunk_size(4));
    gctest::zero_grads(params);
    good->run(f.queries, f.passages);  // gradients that are not zero
    const auto before = gctest::grads_of(params);

    auto calls = std::make_shared<int>(0);
    gradcache::Loss fails_second = [calls, loss = f.loss](const at::Tensor& q, const at::Tensor& p) {
      auto value = loss({q, p});
      return ++*calls == 2 ? value * NAN : value;
    };
    gradcache::Loss fails_first = [loss = f.loss](const at::Tensor& q, const at::Tensor& p) {
      return loss({q, p}) * INFINITY;
    };
    const bool accumulate = std::string(mode) == "accumulate";
    auto bad = gr::make_training_step(f.encoder, f.encoder, accumulate ? fails_second : fails_first,
                                      gr::StepOptions().mode(gr::parse_choice(gr::train_mode_names(), mode, "mode")).chunk_size(4).sub_batch_size(4));
    EXPECT_FALSE(std::isfinite(bad->run(f.queries, f.passages))) << mode;
    const auto after = gctest::grads_of(params);
    for (size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(torch::equal(after[i], before[i])) << mode << " " << i;
  }
}

TEST(TrainingStep, BadOptionsAreRefused) {
  Fixture f;
  auto error_of = [&](const gr::StepOptions& options) {
    try {
      gr::make_training_step(f.encoder, f.encoder, f.loss, options);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // (A mode other than cache, full and accumulate cannot be named: StepOptions takes a TrainMode,
  // and the settings table refuses any other --mode: Settings.ChoicesAreParsedOnce.)
  EXPECT_NE(error_of(gr::StepOptions().chunk_size(0)).find("chunk_size must be positive"), std::string::npos);
  EXPECT_NE(error_of(gr::StepOptions().mode(gr::TrainMode::Accumulate).sub_batch_size(0)).find("sub_batch_size"), std::string::npos);
}
