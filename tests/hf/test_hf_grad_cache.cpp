// GradCache on a real BERT sentence encoder (the committed tiny model): a cache step equals a
// full-batch backward with dropout on, fails to without the generator replay, and equals
// sentence-transformers' CachedMultipleNegativesRankingLoss with dropout off.
//
// Tolerances, relative to the largest gradient entry (as tests/core/test_util.h's max_rel_error):
// - cache vs full batch (the same code both sides): only the order of summation differs (per
//   chunk, then over chunks) and BLAS may block a chunk's GEMMs differently; the longest sums
//   have ~16 x 24 = 384 terms: sqrt(384) u = 1.2e-6 typical, 384 u = 2.3e-5 at worst.
//   kTolerance = 1e-5, as the core tests; observed 9e-8. A cache without replay: > 1e-2.
// - ours vs CachedMultipleNegativesRankingLoss (transformers' modules, its loss chunked by rows of
//   the score matrix, accumulation in another order; the same LibTorch kernels): the same bound,
//   kTolerance, observed 3.5e-7. The loss, from scores 20 cos(q, p) that carry 20 sqrt(32) u =
//   7e-6 each: to 1e-5 absolute.
#include "model_test_util.h"

#include <gradcache/gradcache.h>

using hftest::gradients;
using hftest::max_rel_error;
using hftest::zero;

namespace hf = gradcache::hf;
namespace gc = gradcache;

namespace {

constexpr double kTolerance = 1e-5;
constexpr int64_t kPairs = 16, kChunk = 4;

// Random token sequences of 3 to 24 pieces: [CLS] ids [SEP], right-padded.
std::map<std::string, torch::Tensor> random_batch(int64_t rows) {
  std::vector<std::vector<int64_t>> ids;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t length = torch::randint(1, 23, {1}).item<int64_t>();
    std::vector<int64_t> row = {2};
    for (int64_t i = 0; i < length; ++i) row.push_back(torch::randint(5, 1000, {1}).item<int64_t>());
    row.push_back(3);
    ids.push_back(row);
  }
  return hf::pad_batch(ids);
}

gc::Loss cmnrl_loss() {
  // CachedMultipleNegativesRankingLoss's defaults: cos_sim * scale 20 (temperature 0.05), cross-entropy
  // against the paired passage, mean over queries, query-to-passage only.
  return gc::SimpleContrastiveLoss(gc::ContrastiveLossOptions().similarity(gc::Similarity::Cosine).temperature(0.05));
}

// The real full-batch gradient with dropout: every chunk forward WITH grad in the cache's order
// (so the generator hands out the same masks), all graphs kept, one backward through the loss.
std::vector<torch::Tensor> full_batch(hf::SentenceTransformer& model, const std::vector<gc::ModelInput>& inputs) {
  return hftest::full_batch_gradients(model, inputs, kChunk, cmnrl_loss());
}

}  // namespace

TEST(HfGradCache, CacheStepEqualsFullBatchWithDropout) {
  torch::manual_seed(0);
  auto model = hf::load_sentence_transformer(hftest::tiny_model_dir());
  model->train();  // dropout 0.1 after the embeddings, on attention, after each sublayer
  const gc::ModelInput queries = random_batch(kPairs), passages = random_batch(kPairs);
  {  // dropout is really on: two training forwards differ
    torch::NoGradGuard no_grad;
    EXPECT_FALSE(torch::allclose(gc::Model(model)(queries).toTensor(), gc::Model(model)(queries).toTensor()));
  }
  gc::GradCache cache({model, model}, kChunk, cmnrl_loss());
  torch::manual_seed(42);
  const auto full = full_batch(model, {queries, passages});
  zero(*model);
  torch::manual_seed(42);
  cache({queries, passages});
  const double error = max_rel_error(gradients(*model), full);
  std::cout << "[exactness] tiny BERT, dropout 0.1, 16 pairs in chunks of 4, fp32: max relative gradient error " << error
            << std::endl;
  EXPECT_LT(error, kTolerance);
}

TEST(HfGradCache, WithoutGeneratorReplayDropoutGradientsDiffer) {
  struct NoReplay : gc::GradCache {
    using gc::GradCache::GradCache;
    ForwardResult forward_no_grad(size_t i, const std::vector<gc::ModelInput>& chunks) override {
      auto result = gc::GradCache::forward_no_grad(i, chunks);
      for (auto& chunk : result.chunks) chunk.rng_state = gc::RngState::capture();
      return result;
    }
  };
  torch::manual_seed(1);
  auto model = hf::load_sentence_transformer(hftest::tiny_model_dir());
  model->train();
  const gc::ModelInput queries = random_batch(kPairs), passages = random_batch(kPairs);
  NoReplay broken({model, model}, kChunk, cmnrl_loss());
  torch::manual_seed(42);
  const auto full = full_batch(model, {queries, passages});
  zero(*model);
  torch::manual_seed(42);
  broken({queries, passages});
  EXPECT_GT(max_rel_error(gradients(*model), full), 1e-2);
}

TEST(HfGradCache, EqualsCachedMultipleNegativesRankingLoss) {
  if (!hftest::python_missing().empty()) GTEST_SKIP() << hftest::python_missing();
  torch::manual_seed(2);
  auto model = hf::load_sentence_transformer(hftest::tiny_model_dir());  // eval: dropout off
  const auto queries = random_batch(kPairs), passages = random_batch(kPairs);
  const std::string scratch = hftest::scratch_dir();
  hf::save_safetensors(scratch + "/batch.safetensors", {{"q_ids", queries.at("input_ids")},
                                                        {"q_mask", queries.at("attention_mask")},
                                                        {"p_ids", passages.at("input_ids")},
                                                        {"p_mask", passages.at("attention_mask")}});
  ASSERT_TRUE(hftest::run_reference({"cmnrl", hftest::tiny_model_dir(), scratch + "/batch.safetensors",
                                     std::to_string(kChunk), scratch + "/grads.safetensors"}));
  const auto reference = hf::read_safetensors(scratch + "/grads.safetensors");

  gc::GradCache cache({model, model}, kChunk, cmnrl_loss());
  zero(*model);
  const double loss = cache({queries, passages}).item<double>();
  const double reference_loss = hftest::tensor(reference, "loss").item<double>();
  EXPECT_NEAR(loss, reference_loss, 1e-5);
  std::vector<torch::Tensor> ours, theirs;
  for (const auto& item : model->transformer().named_parameters()) {
    const torch::Tensor* expected = reference.find("grad." + item.key());
    // The pooler takes no part in a sentence embedding: no gradient on either side.
    if (item.key().rfind("pooler.", 0) == 0) {
      EXPECT_EQ(expected, nullptr);
      EXPECT_FALSE(item.value().grad().defined());
      continue;
    }
    ASSERT_NE(expected, nullptr) << item.key();
    ours.push_back(item.value().grad());
    theirs.push_back(*expected);
  }
  const double error = max_rel_error(ours, theirs);
  std::cout << "[reference] tiny BERT vs CachedMultipleNegativesRankingLoss, " << ours.size()
            << " parameters: loss " << loss << " (difference " << loss - reference_loss << "), max relative gradient error "
            << error << std::endl;
  EXPECT_LT(error, kTolerance);
}

TEST(HfGradCache, Bf16CacheStepIsCloseToFp32) {
  // Mixed precision through the cache (each model call under CPU bf16 autocast): the gradients
  // carry bf16's rounding (2^-9 per operand, a few dozen roundings deep through forward and
  // backward), so they agree with fp32's to a few percent of the largest entry, not to 1e-5.
  torch::manual_seed(4);
  auto model = hf::load_sentence_transformer(hftest::tiny_model_dir());
  const gc::ModelInput queries = random_batch(kPairs), passages = random_batch(kPairs);
  gc::GradCache fp32({model, model}, kChunk, cmnrl_loss());
  gc::GradCache bf16({model, model}, kChunk, cmnrl_loss(), gc::GradCacheOptions().precision(gc::Precision::bf16));
  zero(*model);
  fp32({queries, passages});
  const auto reference = gradients(*model);
  zero(*model);
  const auto loss = bf16({queries, passages});
  EXPECT_TRUE(std::isfinite(loss.item<double>()));
  const double error = max_rel_error(gradients(*model), reference);
  std::cout << "[bf16] tiny BERT cache step: max relative gradient error against fp32 " << error << std::endl;
  EXPECT_LT(error, 5e-2);
}
