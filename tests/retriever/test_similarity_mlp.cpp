// --similarity mlp: the cache step through the dual gradient cache gives the gradients of a
// full-batch backward over Phi's score matrix (encoder and Phi), the evaluation's re-ranking
// orders the dense top K by Phi, and checkpoints carry Phi and its optimizer state.
#include "retriever/config/train_config.h"
#include "files/atomic_file.h"
#include "retriever/model/batching.h"
#include "retriever/model/encoders.h"
#include "retriever/run/build_model.h"
#include "retriever/run/checkpoint.h"
#include "retriever/search/dense_index.h"
#include "retriever/search/evaluate.h"
#include "retriever/search/exact_top_k.h"
#include "retriever/search/rerank.h"
#include "retriever/train/training_step.h"
#include "tests/core/test_util.h"
#include "tests/retriever/step_batch.h"
#include "tests/retriever/train_test_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <set>

using namespace train_test;

namespace {

// A tied Transformer encoder with dropout, Phi with dropout and its dot term, and a batch of 8
// queries with 1 + 1 passages each (texts of different lengths: chunks are trimmed differently).
struct PhiFixture {
  gr::TransformerEncoder encoder{
      gr::EncoderOptions(40).dim(16).heads(2).layers(1).ffn_dim(32).max_len(12).dropout(0.1)};
  gr::LearnedSimilarity phi{gr::LearnedSimilarityOptions(16, 12).dropout(0.2).dot_temperature(0.1)};
  gr::TokenBatch queries, passages;
  std::vector<torch::Tensor> params;

  PhiFixture() {
    auto batch = step_test::eight_queries_with_hard_negatives();
    queries = std::move(batch.queries);
    passages = std::move(batch.passages);
    params = encoder->parameters();
    for (auto& p : phi->parameters()) params.push_back(p);
  }

  // One training step of `step_options` with Phi, from zero gradients, the generator at `seed`.
  std::vector<torch::Tensor> step_gradients(gr::StepOptions step_options, const gradcache::DualCacheOptions& dual,
                                            double& loss) {
    gctest::zero_grads(params);
    step_options.similarity(gradcache::PairScorer(phi)).similarity_options(dual);
    auto step = gr::make_training_step(encoder, encoder, gradcache::Loss(), step_options);
    torch::manual_seed(5);
    loss = step->run(queries, passages);
    return gctest::grads_of(params);
  }

  // The full-batch reference: the encoder on the cache's chunks WITH grad, in its order (so the
  // dropout masks are the same draws), Phi on the cache's tiles WITH grad in its order, the whole
  // [8, 16] score matrix assembled in one graph, InfoNCE over it, one backward.
  std::vector<torch::Tensor> full_batch_gradients(int64_t q_chunk, int64_t p_chunk, int64_t tile, bool symmetric,
                                                  double& loss_value) {
    gctest::zero_grads(params);
    torch::manual_seed(5);
    gradcache::Model model(encoder);
    std::vector<torch::Tensor> qs, ps;
    for (const auto& c : gr::split_and_trim(gradcache::ModelInput(queries), q_chunk)) qs.push_back(model(c).toTensor());
    for (const auto& c : gr::split_and_trim(gradcache::ModelInput(passages), p_chunk)) ps.push_back(model(c).toTensor());
    const auto q = torch::cat(qs), p = torch::cat(ps);
    std::vector<torch::Tensor> rows;
    for (const auto& qi : q.split(tile)) {
      std::vector<torch::Tensor> cols;
      for (const auto& pj : p.split(tile)) cols.push_back(phi(qi, pj));
      rows.push_back(torch::cat(cols, 1));
    }
    const auto s = torch::cat(rows, 0);
    const auto t = torch::arange(0, 16, 2, torch::kLong);
    auto loss = torch::nn::functional::cross_entropy(s, t);
    if (symmetric) loss = (loss + torch::nn::functional::cross_entropy(s.index_select(1, t).t(), torch::arange(8))) / 2;
    loss.backward();
    loss_value = loss.item<double>();
    return gctest::grads_of(params);
  }
};

}  // namespace

// Tolerance kTol32 (tests/core/test_util.h): the same operations on the same dropout masks; only
// the order of the fp32 sums differs (the cache's tile-wise log-sum-exp and its per-tile
// accumulation of dL/dq, dL/dp and dL/dPhi). A lost tile, a wrong mask or a mis-scaled
// gradient gives errors of 1e-2 and more.
TEST(SimilarityMlp, CacheStepEqualsFullBatchBackwardOverPhisScores) {
  for (const bool symmetric : {false, true}) {
    PhiFixture f;
    double cache_loss = 0, full_loss = 0;
    const auto cached = f.step_gradients(
        gr::StepOptions().mode(gr::TrainMode::Cache).chunk_size(3).passage_chunk_size(5).split_input_fn(gr::split_and_trim),
        gradcache::DualCacheOptions().tile_size(3).symmetric(symmetric), cache_loss);
    const auto full = f.full_batch_gradients(3, 5, 3, symmetric, full_loss);
    const double error = gctest::max_rel_error(cached, full);
    gctest::report_error(std::string("similarity mlp: cache (chunks 3/5, tiles 3) vs full batch") +
                             (symmetric ? ", symmetric" : ""),
                         error);
    EXPECT_LT(error, gctest::kTol32);
    EXPECT_NEAR(cache_loss, full_loss, 1e-5 * std::abs(full_loss));
    EXPECT_TRUE(gctest::any_grad(f.encoder->parameters()));
    EXPECT_TRUE(gctest::any_grad(f.phi->parameters())) << "Phi received no gradient";
  }
}

TEST(SimilarityMlp, FullModeIsTheFullBatchLossOverPhi) {
  // One pass of the encoder per side and Phi on the whole [8, 16] matrix: the reference with
  // one chunk per side and one tile.
  PhiFixture f;
  double step_loss = 0, full_loss = 0;
  const auto stepped = f.step_gradients(gr::StepOptions().mode(gr::TrainMode::Full), gradcache::DualCacheOptions(), step_loss);
  const auto full = f.full_batch_gradients(8, 16, 16, false, full_loss);
  EXPECT_LT(gctest::max_rel_error(stepped, full), gctest::kTol32);
  EXPECT_NEAR(step_loss, full_loss, 1e-5 * std::abs(full_loss));
}

TEST(SimilarityMlp, AccumulateWithOneSubBatchIsTheFullBatchLossOverPhi) {
  // Sub-batches of 8 queries hold the whole batch: the same passes and draws as full mode.
  PhiFixture f;
  double accumulate_loss = 0, full_loss = 0;
  const auto accumulated =
      f.step_gradients(gr::StepOptions().mode(gr::TrainMode::Accumulate).sub_batch_size(8), gradcache::DualCacheOptions(),
                       accumulate_loss);
  const auto full = f.full_batch_gradients(8, 16, 16, false, full_loss);
  EXPECT_LT(gctest::max_rel_error(accumulated, full), gctest::kTol32);
  EXPECT_NEAR(accumulate_loss, full_loss, 1e-5 * std::abs(full_loss));
}

TEST(SimilarityMlp, StepOptionsRefuseAScaler) {
  PhiFixture f;
  auto options = gr::StepOptions()
                     .similarity(gradcache::PairScorer(f.phi))
                     .scaler(std::make_shared<gradcache::GradScaler>());
  const auto message = error_of([&] { gr::make_training_step(f.encoder, f.encoder, gradcache::Loss(), options); });
  EXPECT_NE(message.find("no fp16 loss scaler"), std::string::npos) << message;
}

namespace {

// Phi(q, p) = -(p_0 + 10) for p_0 > -10: it ranks candidates by their first coordinate,
// ascending, whatever the query (so unlike the dot product).
gr::LearnedSimilarity first_coordinate_phi() {
  gr::LearnedSimilarity phi(gr::LearnedSimilarityOptions(4, 3));
  torch::NoGradGuard no_grad;
  auto& mlp = phi->mlp;
  mlp->fc1->weight.zero_();
  mlp->fc1->bias.zero_();
  mlp->fc1->weight[0][4] = 1.0;  // the passage block [Wq | Wp | Wx] starts at column d = 4
  mlp->fc1->bias[0] = 10.0;
  mlp->fc2->weight.zero_();
  mlp->fc2->weight[0][0] = -1.0;
  mlp->fc2->bias.zero_();
  phi->eval();
  return phi;
}

}  // namespace

TEST(SimilarityMlp, RerankOrdersTheDenseTopKByPhi) {
  torch::manual_seed(3);
  const auto docs = torch::randn({50, 4}), queries = torch::randn({6, 4});
  auto phi = first_coordinate_phi();
  const auto dense = gr::exact_top_k(queries, docs, 10);
  const auto reranked = gr::rerank_top_k(dense, queries, docs, phi, 7, /*pairs_per_batch=*/9);  // several batches
  ASSERT_EQ(reranked.indices.sizes(), torch::IntArrayRef({6, 7}));
  bool some_order_changed = false;
  for (int64_t q = 0; q < 6; ++q) {
    std::vector<int64_t> expected;
    for (int64_t j = 0; j < 7; ++j) expected.push_back(dense.indices[q][j].item<int64_t>());
    const std::vector<int64_t> dense_order = expected;
    std::stable_sort(expected.begin(), expected.end(),
                     [&](int64_t a, int64_t b) { return docs[a][0].item<float>() < docs[b][0].item<float>(); });
    for (int64_t j = 0; j < 7; ++j) {
      const int64_t doc = reranked.indices[q][j].item<int64_t>();
      EXPECT_EQ(doc, expected[j]) << "query " << q << " rank " << j;
      EXPECT_NEAR(reranked.scores[q][j].item<float>(), -(docs[doc][0].item<float>() + 10), 1e-5);
    }
    some_order_changed = some_order_changed || expected != dense_order;
  }
  EXPECT_TRUE(some_order_changed) << "the test's Phi should disagree with the dot product";
}

TEST(SimilarityMlp, RerankLeavesMissingCandidatesLast) {
  // An approximate search's -1 rows (fewer than k found) stay out of the re-ranked list.
  const auto docs = torch::tensor({{3.f, 0.f, 0.f, 0.f}, {1.f, 0.f, 0.f, 0.f}, {2.f, 0.f, 0.f, 0.f}});
  gr::TopK dense{torch::tensor({{3.f, 2.f, 0.f}}), torch::tensor({{0L, 2L, -1L}})};
  auto phi = first_coordinate_phi();
  const auto reranked = gr::rerank_top_k(dense, torch::ones({1, 4}), docs, phi, 3);
  EXPECT_EQ(gr::ranked_lists(reranked), (std::vector<std::vector<int64_t>>{{2, 0}}));
}

TEST(SimilarityMlp, EvaluationReportsTheRerankedRowOnlyWithPhi) {
  torch::manual_seed(4);
  auto model = gr::BiEncoder::builtin(gr::EncoderOptions(30).dim(8).heads(2).layers(1).ffn_dim(16).max_len(8), false);
  gr::TokenizedEvalSet data;
  data.name = "tiny";
  for (int64_t i = 0; i < 12; ++i) data.corpus.push_back({1 + i, 2 + (i * 5) % 27});
  for (int64_t i = 0; i < 4; ++i) data.queries.push_back({1 + i});
  for (int64_t i = 0; i < 4; ++i) data.relevant.push_back({{i, 1}});
  gr::EvalOptions options;
  options.rerank_k = 5;
  EXPECT_FALSE(gr::evaluate_dense(model, data, options).reranked) << "no Phi, no second row";
  model.set_similarity(gr::LearnedSimilarity(gr::LearnedSimilarityOptions(8, 6)));
  const auto with_phi = gr::evaluate_dense(model, data, options);
  ASSERT_TRUE(with_phi.reranked);
  EXPECT_EQ(with_phi.rerank_k, 5);
  EXPECT_EQ(with_phi.reranked->queries, 4u);
  // Re-ranking moves documents within the dense top 5 only.
  options.top_k = 5;
  EXPECT_DOUBLE_EQ(gr::evaluate_dense(model, data, options).reranked->recall_at_10,
                   gr::evaluate_dense(model, data, options).metrics.recall_at_10);
  options.rerank_k = 0;
  EXPECT_FALSE(gr::evaluate_dense(model, data, options).reranked);
}

namespace {

gr::TrainConfig phi_config() {
  gr::TrainConfig c = tiny_model_config();
  c.similarity.kind = gr::SimilarityKind::Mlp;
  c.similarity.hidden = 8;
  return c;
}

// One AdamW step with gradients of ones.
void step(torch::optim::AdamW& optimizer, const gr::BiEncoder& model) {
  for (auto& p : model.parameters()) p.mutable_grad() = torch::ones_like(p);
  optimizer.step();
}

}  // namespace

TEST(SimilarityMlp, CheckpointRoundTripsPhiAndItsOptimizerState) {
  TempDir dir;
  const auto config = phi_config();
  torch::manual_seed(1);
  auto model = gr::build_model(config);
  ASSERT_TRUE(model.similarity());
  torch::optim::AdamW optimizer(model.parameters(), torch::optim::AdamWOptions(1e-2));
  step(optimizer, model);
  gr::CheckpointInfo info;
  info.config = config;
  info.tokenizer = "tokenizer bytes";
  const auto path = dir / "checkpoint.pt";
  gr::save_checkpoint(path, info, model, optimizer, gr::capture_generators(torch::kCPU));

  torch::manual_seed(2);  // another initialisation: the weights must come from the file
  auto loaded = gr::load_checkpoint(path).model;
  ASSERT_TRUE(loaded.similarity());
  const auto saved_state = model.named_state(), loaded_state = loaded.named_state();
  ASSERT_EQ(saved_state.size(), loaded_state.size());
  int phi_tensors = 0;
  for (size_t i = 0; i < saved_state.size(); ++i) {
    EXPECT_EQ(saved_state[i].first, loaded_state[i].first);
    EXPECT_TRUE(torch::equal(saved_state[i].second, loaded_state[i].second)) << saved_state[i].first;
    phi_tensors += saved_state[i].first.rfind("similarity.mlp.", 0) == 0;
  }
  EXPECT_EQ(phi_tensors, 4);  // fc1 and fc2, weight and bias

  // The optimizer state: a second step from the restored state lands where the original's does
  // (a fresh AdamW would take a first step, with another bias correction).
  torch::optim::AdamW restored(loaded.parameters(), torch::optim::AdamWOptions(1e-2));
  gr::load_training_state(path, restored, torch::kCPU);
  step(optimizer, model);
  step(restored, loaded);
  for (size_t i = 0; i < saved_state.size(); ++i) {
    EXPECT_TRUE(torch::allclose(saved_state[i].second, loaded_state[i].second, 0, 0)) << saved_state[i].first;
  }
}

TEST(SimilarityMlp, DotCheckpointsHaveNoPhi) {
  auto config = phi_config();
  config.similarity.kind = gr::SimilarityKind::Dot;
  config.similarity.hidden = 0;
  const auto model = gr::build_model(config);
  EXPECT_FALSE(model.similarity());
  for (const auto& [name, t] : model.named_state()) EXPECT_EQ(name.find("similarity"), std::string::npos) << name;
}

TEST(SimilarityMlp, SettingsRefuseWhatItCannotCombineWith) {
  auto refused = [](auto edit) {
    auto c = phi_config();
    edit(c);
    return error_of([&] { gr::validate(c); });
  };
  EXPECT_EQ(refused([](gr::TrainConfig&) {}), "");
  EXPECT_NE(
      refused([](gr::TrainConfig& c) { c.encoder.torchscript = "encoder.pt"; }).find("needs the built-in encoder"),
      std::string::npos);
  // (On a LibTorch without fp16 autocast on the CPU, that check speaks first.)
  EXPECT_NE(refused([](gr::TrainConfig& c) { c.machine.precision = gradcache::Precision::fp16; }).find("fp16"),
            std::string::npos);
  EXPECT_NE(refused([](gr::TrainConfig& c) { c.loss.kind = gr::LossKind::Streaming; }).find("streaming"),
            std::string::npos);
  EXPECT_NE(refused([](gr::TrainConfig& c) {
              c.similarity.kind = gr::SimilarityKind::Dot;
            }).find("--phi-hidden is used only with --similarity mlp"),
            std::string::npos);
}

TEST(SimilarityMlp, TrainsThroughTheDualCacheAndResumesBitIdentically) {
  // Interrupted after 4 of 6 steps and resumed: Phi's weights and its AdamW state come back
  // from the checkpoint, so the end is the uninterrupted run's, bit for bit. The evaluation
  // reports the re-ranked row beside the dense one.
  TempDir dir;
  write_task(dir);
  auto config = tiny_config(dir);
  config.similarity.kind = gr::SimilarityKind::Mlp;
  config.similarity.tile = 12;  // tiles smaller than the 32 x 32 score matrix
  config.output.dir = dir / "straight";
  const auto straight = gr::train(config, quiet());
  ASSERT_TRUE(straight.trained && straight.trained_reranked);
  EXPECT_TRUE(std::isfinite(straight.final_loss));
  const auto summary = nlohmann::json::parse(gradcache::files::read_file(dir / "straight/summary.json"));
  EXPECT_TRUE(summary.contains("trained_reranked")) << summary.dump();

  config.output.dir = dir / "interrupted";
  config.eval.enabled = false;
  auto options = quiet();
  options.stop_after_steps = 4;
  EXPECT_TRUE(gr::train(config, options).interrupted);
  options.stop_after_steps = 0;
  options.resume = true;
  EXPECT_EQ(gr::train(config, options).progress.step, 6);
  const auto a = weights(dir / "straight/checkpoint.pt"), b = weights(dir / "interrupted/checkpoint.pt");
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "tensor " << i;
}
