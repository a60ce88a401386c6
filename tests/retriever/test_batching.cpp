// The retriever's encoder, batching and checkpoint pieces.
#include "retriever/model/batching.h"
#include "retriever/model/encoders.h"
#include "retriever/run/build_model.h"
#include "tests/core/test_util.h"
#include "tests/retriever/train_test_util.h"

#include <gradcache/gradcache.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

using namespace train_test;

TEST(Encoder, PaddingDoesNotChangeTheRepresentation) {
  torch::manual_seed(0);
  gr::TransformerEncoder enc(gr::EncoderOptions(50).dim(16).heads(4).layers(2).ffn_dim(32).max_len(12));
  enc->eval();
  std::vector<std::vector<int64_t>> tokens{{5, 6, 7}, {8, 9}, {10, 11, 12, 13, 14}};
  auto padded = gr::pad_batch(tokens, {0, 1});  // padded to 3
  auto wider = gr::pad_batch(tokens, {0, 1, 2});  // padded to 5
  torch::NoGradGuard no_grad;
  auto a = enc(padded);
  auto b = enc(wider).slice(0, 0, 2);
  EXPECT_EQ(a.sizes(), (std::vector<int64_t>{2, 16}));
  EXPECT_TRUE(torch::allclose(a, b, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(a.norm(2, 1), torch::ones({2}), 1e-5, 1e-6));  // L2-normalised
}

TEST(Batching, ChunksArePaddedToTheirOwnLongestSequence) {
  std::vector<std::vector<int64_t>> tokens{{1, 2}, {3}, {4, 5, 6, 7, 8, 9}, {10, 11, 12}};
  auto batch = gr::pad_batch(tokens, {0, 1, 2, 3});
  EXPECT_EQ(batch.at("input_ids").size(1), 6);
  auto chunks = gr::split_and_trim(gradcache::ModelInput(batch), 2);
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[0].kwarg("input_ids").size(1), 2);  // {1,2},{3}: longest 2, not 6
  EXPECT_EQ(chunks[1].kwarg("input_ids").size(1), 6);
  EXPECT_TRUE(torch::equal(chunks[0].kwarg("input_ids"), torch::tensor({1, 2, 3, 0}, torch::kLong).view({2, 2})));
}

TEST(Batching, GradCacheWithTrimmedChunksGivesFullBatchGradients) {
  // The CLI's cache step: a shared Transformer encoder, dropout on, chunks trimmed of padding.
  torch::manual_seed(1);
  gr::TransformerEncoder enc(gr::EncoderOptions(40).dim(16).heads(2).layers(1).ffn_dim(32).max_len(10).dropout(0.1));
  std::vector<std::vector<int64_t>> tokens;
  for (int i = 0; i < 12; ++i) {
    std::vector<int64_t> seq;
    for (int j = 0; j < 1 + (i * 7) % 9; ++j) seq.push_back(1 + (i * 3 + j) % 39);
    tokens.push_back(seq);
  }
  auto q = gr::pad_batch(tokens, {0, 1, 2, 3, 4, 5}), p = gr::pad_batch(tokens, {6, 7, 8, 9, 10, 11});
  gradcache::SimpleContrastiveLoss loss(gradcache::ContrastiveLossOptions().temperature(0.1));
  // Reference: the same trimmed chunks with grad, in order, one backward over the whole batch.
  torch::manual_seed(5);
  std::vector<torch::Tensor> qs, ps;
  auto as_batch = [](const gradcache::ModelInput& c) {
    return gr::TokenBatch{{"input_ids", c.kwarg("input_ids")}, {"attention_mask", c.kwarg("attention_mask")}};
  };
  for (auto& c : gr::split_and_trim(q, 4)) qs.push_back(enc(as_batch(c)));
  for (auto& c : gr::split_and_trim(p, 4)) ps.push_back(enc(as_batch(c)));
  loss(torch::cat(qs), torch::cat(ps)).backward();
  std::vector<torch::Tensor> full;
  for (auto& t : enc->parameters()) {
    full.push_back(t.grad().clone());
    t.mutable_grad() = torch::Tensor();
  }
  torch::manual_seed(5);
  gradcache::GradCache cache({enc, enc}, 4, loss, gradcache::GradCacheOptions().split_input_fn(gr::split_and_trim));
  cache({q, p});
  // float32 summation order, as in test_grad_cache.cpp
  EXPECT_LT(gctest::max_rel_error(gctest::grads_of(enc->parameters()), full), gctest::kTol32);
}

TEST(Batching, TokenBudgetChunksKeepOrderAndStayWithinTheBudget) {
  std::vector<std::vector<int64_t>> tokens{{1}, {2}, {3, 3}, {4, 4}, {5, 5, 5}, {6, 6, 6, 6, 6, 6, 6}, {7}};
  auto batch = gr::pad_batch(tokens, {0, 1, 2, 3, 4, 5, 6});
  auto chunks = gr::split_by_tokens(6)(gradcache::ModelInput(batch), /*max_rows=*/100);
  std::vector<int64_t> rows, widths;
  torch::Tensor ids;
  for (const auto& c : chunks) {
    rows.push_back(c.kwarg("input_ids").size(0));
    widths.push_back(c.kwarg("input_ids").size(1));
    EXPECT_TRUE(c.kwarg("input_ids").size(0) == 1 || rows.back() * widths.back() <= 6);
    ids = ids.defined() ? torch::cat({ids, c.kwarg("input_ids").select(1, 0)}) : c.kwarg("input_ids").select(1, 0);
  }
  // {1},{2},{3,3} fit 3x2 = 6; {4,4},{5,5,5} fit 2x3 = 6; {6 x7} alone (longer than the budget); {7}.
  EXPECT_EQ(rows, (std::vector<int64_t>{3, 2, 1, 1}));
  EXPECT_EQ(widths, (std::vector<int64_t>{2, 3, 7, 1}));
  EXPECT_TRUE(torch::equal(ids, torch::tensor({1, 2, 3, 4, 5, 6, 7}, torch::kLong)));  // order kept
  EXPECT_EQ(gr::split_by_tokens(100)(gradcache::ModelInput(batch), /*max_rows=*/2).size(), 4u);  // row cap
  EXPECT_EQ(gr::sorted_by_length(tokens, {5, 0, 2, 4}), (std::vector<int64_t>{0, 2, 4, 5}));
}

TEST(Batching, TokenBudgetAndRetainedChunksGiveFullBatchGradients) {
  torch::manual_seed(2);
  gr::TransformerEncoder enc(gr::EncoderOptions(40).dim(16).heads(2).layers(1).ffn_dim(32).max_len(10).dropout(0));
  std::vector<std::vector<int64_t>> tokens;
  for (int i = 0; i < 16; ++i) tokens.push_back(std::vector<int64_t>(1 + (i * 5) % 9, 1 + i));
  std::vector<int64_t> q_rows{0, 1, 2, 3, 4, 5, 6, 7}, p_rows{8, 9, 10, 11, 12, 13, 14, 15};
  auto q = gr::pad_batch(tokens, gr::sorted_by_length(tokens, q_rows)), p = gr::pad_batch(tokens, p_rows);
  gradcache::SimpleContrastiveLoss loss(gradcache::ContrastiveLossOptions().temperature(0.1));
  loss(enc(q), enc(p)).backward();  // a real full-batch backward
  std::vector<torch::Tensor> full;
  for (auto& t : enc->parameters()) {
    full.push_back(t.grad().clone());
    t.mutable_grad() = torch::Tensor();
  }
  gradcache::GradCache cache({enc, enc}, 8, loss,
                             gradcache::GradCacheOptions().split_input_fn(gr::split_by_tokens(20)).retain_chunks(2));
  cache({q, p});
  // float32 summation order, as in test_grad_cache.cpp
  EXPECT_LT(gctest::max_rel_error(gctest::grads_of(enc->parameters()), full), gctest::kTol32);
}

// fp16 needs CUDA here, so the scaler's trip through a checkpoint is tested on the functions
// the trainer uses: what save_checkpoint writes, load_training_state restores.
TEST(Checkpoint, LossScalerStateRoundTrip) {
  TempDir dir;
  gr::TrainConfig config = tiny_model_config();
  config.machine.precision = gradcache::Precision::fp16;
  auto model = gr::build_model(config);
  torch::optim::AdamW optimizer(model.parameters(), torch::optim::AdamWOptions(1e-3));
  gradcache::GradScaler scaler(gradcache::GradScalerOptions().init_scale(1024).growth_interval(5));
  scaler.update(4096);  // and a growth count of 2:
  for (int i = 0; i < 2; ++i) {
    optimizer.zero_grad();
    for (auto& p : model.parameters()) p.mutable_grad() = torch::ones_like(p);
    scaler.step(optimizer);
    scaler.update();
  }
  gr::CheckpointInfo info;
  info.config = config;
  const auto path = dir / "checkpoint.pt";
  gr::save_checkpoint(path, info, model, optimizer, gr::capture_generators(torch::kCPU), &scaler);

  gradcache::GradScaler restored;
  torch::optim::AdamW fresh(model.parameters(), torch::optim::AdamWOptions(1e-3));
  gr::load_training_state(path, fresh, torch::kCPU, 0, &restored);
  EXPECT_EQ(restored.get_scale(), 4096);
  EXPECT_EQ(restored.growth_tracker(), 2);
  EXPECT_EQ(restored.options().growth_interval(), 5);

  // A checkpoint without a scaler (an fp32 or bf16 run) cannot feed one.
  gr::save_checkpoint(path, info, model, optimizer, gr::capture_generators(torch::kCPU));
  gradcache::GradScaler missing;
  EXPECT_NE(error_of([&] { gr::load_training_state(path, fresh, torch::kCPU, 0, &missing); }).find("loss scaler"),
            std::string::npos);
}
