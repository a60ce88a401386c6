// A pretrained Hugging Face model in the retriever (--model-dir): the training steps on the tiny
// random BERT of tests/hf/fixtures (dropout 0.1 in its config) give full-batch gradients, untie
// copies the weights, the prompts resolve as sentence-transformers picks them, a checkpoint's
// description of the model round-trips, and the settings that do not apply are refused.
#include "retriever/config/train_config.h"
#include "retriever/model/batching.h"
#include "retriever/model/pretrained.h"
#include "retriever/run/build_model.h"
#include "retriever/train/training_step.h"
#include "tests/core/test_util.h"
#include "tests/retriever/pretrained_test_util.h"

#include <gradcache/gradcache.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <string>
#include <vector>

namespace gr = gradcache::retriever;
namespace fs = std::filesystem;

namespace {

using pretrained_test::Fixture;
using pretrained_test::kTinyBert;


}  // namespace

// Tolerance kTol32: as in test_training_step.cpp, only the order of fp32 summations differs.
TEST(Pretrained, CacheStepEqualsFullBatchWithDropoutOn) {
  Fixture f;
  f.model.train(true);
  double full_loss = 0, cache_loss = 0;
  const auto full = f.gradients(gr::StepOptions().mode(gr::TrainMode::Full), &full_loss);
  // One chunk per side: step 1's masks, the replay's and the full pass's are the same draws.
  const auto cache = f.gradients(
      gr::StepOptions().mode(gr::TrainMode::Cache).chunk_size(6).split_input_fn(gr::split_and_trim), &cache_loss);
  gctest::report_error("pretrained BERT: cache vs full, dropout 0.1", gctest::max_rel_error(cache, full));
  EXPECT_LT(gctest::max_rel_error(cache, full), gctest::kTol32);
  EXPECT_NEAR(cache_loss, full_loss, 1e-6 * std::abs(full_loss));
  EXPECT_TRUE(gctest::any_grad(f.model.parameters()));
  // Negative control: another generator state for the cache step's replay gives other masks.
  const auto params = f.model.parameters();
  gctest::zero_grads(params);
  auto step = gr::make_training_step(f.model.query_model(), f.model.passage_model(), f.loss,
                                     gr::StepOptions().mode(gr::TrainMode::Cache).chunk_size(6));
  torch::manual_seed(12);
  step->run(f.batch.queries, f.batch.passages);
  EXPECT_GT(gctest::max_rel_error(gctest::grads_of(params), full), 1e-3);
}

TEST(Pretrained, ChunkedCacheAndAccumulateWithoutDropout) {
  Fixture f;
  f.model.train(false);
  const auto full = f.gradients(gr::StepOptions().mode(gr::TrainMode::Full));
  const auto chunked = f.gradients(
      gr::StepOptions().mode(gr::TrainMode::Cache).chunk_size(2).passage_chunk_size(4).split_input_fn(gr::split_and_trim));
  EXPECT_LT(gctest::max_rel_error(chunked, full), gctest::kTol32);
  const auto accumulated = f.gradients(gr::StepOptions().mode(gr::TrainMode::Accumulate).sub_batch_size(6));
  EXPECT_LT(gctest::max_rel_error(accumulated, full), gctest::kTol32);
}

TEST(Pretrained, UntieStartsBothEncodersFromThePretrainedWeights) {
  Fixture f;
  gr::BiEncoder untied = gr::pretrained_model(f.loaded, /*untie=*/true);
  ASSERT_FALSE(untied.tied());
  ASSERT_EQ(untied.pretrained_encoders().size(), 2u);
  const auto query = untied.pretrained_encoders()[0]->named_parameters();
  const auto passage = untied.pretrained_encoders()[1]->named_parameters();
  ASSERT_EQ(query.size(), passage.size());
  for (const auto& kv : query) {
    EXPECT_TRUE(torch::equal(kv.value(), passage[kv.key()])) << kv.key();
    EXPECT_NE(kv.value().data_ptr(), passage[kv.key()].data_ptr()) << kv.key() << " is shared, not copied";
  }
  bool query_prefix = false, passage_prefix = false;
  for (const auto& [name, tensor] : untied.named_state()) {
    query_prefix |= name.rfind("query.", 0) == 0;
    passage_prefix |= name.rfind("passage.", 0) == 0;
  }
  EXPECT_TRUE(query_prefix && passage_prefix);
  EXPECT_EQ(untied.output_dim(), f.loaded.module->embedding_dimension());
  EXPECT_EQ(untied.normalizes(), f.loaded.module->options().normalize());
}

TEST(Pretrained, PromptsComeFromTheFlagsThenTheModel) {
  gr::PretrainedModel model;
  model.options.settings().prompts = {{"query", "query: "}, {"passage", "passage: "}};
  gr::PromptSettings settings;
  auto prompts = gr::resolve_prompts(settings, &model);
  EXPECT_EQ(prompts.query, "query: ");
  EXPECT_EQ(prompts.passage, "passage: ");  // no "document": "passage" is next
  model.options.settings().prompts["document"] = "document: ";
  EXPECT_EQ(gr::resolve_prompts(settings, &model).passage, "document: ");
  settings.query = "Represent this sentence for searching relevant passages: ";
  EXPECT_EQ(gr::resolve_prompts(settings, &model).query, settings.query);
  settings = gr::PromptSettings{};
  settings.from_model = false;
  prompts = gr::resolve_prompts(settings, &model);
  EXPECT_EQ(prompts.query, "");
  EXPECT_EQ(prompts.passage, "");
  EXPECT_EQ(gr::resolve_prompts(gr::PromptSettings{}, nullptr).query, "");
}

TEST(Pretrained, PromptsAreTokenizedBeforeTheText) {
  gr::LoadedPretrained loaded = gr::load_pretrained(kTinyBert);
  const auto plain = gr::pretrained_tokenizer(loaded.description);
  const auto prompted = plain.with_prompts({"query: ", "passage: "});
  const auto ids = prompted.encode_query("red cat");
  const auto expected = loaded.module->tokenize({"query: red cat"}, std::string()).at("input_ids")[0];
  ASSERT_EQ(static_cast<int64_t>(ids.size()), expected.size(0));
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(ids[i], expected[static_cast<int64_t>(i)].item<int64_t>());
  EXPECT_NE(prompted.encode_passage("red cat"), plain.encode_passage("red cat"));
}

TEST(Pretrained, DescriptionRoundTripsThroughJson) {
  gr::LoadedPretrained loaded = gr::load_pretrained(kTinyBert);
  const auto again = gr::pretrained_from_json(gr::to_json(loaded.description), "checkpoint.pt");
  EXPECT_EQ(again.source, loaded.description.source);
  EXPECT_EQ(again.config_json, loaded.description.config_json);
  EXPECT_EQ(again.options.normalize(), loaded.description.options.normalize());
  EXPECT_EQ(again.options.max_seq_length(), loaded.description.options.max_seq_length());
  // The module it builds (fresh weights) has the same parameters by name and shape.
  const auto built = gr::build_pretrained(again)->named_parameters();
  const auto original = loaded.module->named_parameters();
  ASSERT_EQ(built.size(), original.size());
  for (const auto& kv : original) EXPECT_EQ(built[kv.key()].sizes(), kv.value().sizes()) << kv.key();
  EXPECT_EQ(gr::pretrained_tokenizer(again).encode_query("Café au lait"),
            gr::pretrained_tokenizer(loaded.description).encode_query("Café au lait"));
  EXPECT_THROW(gr::pretrained_from_json({{"source", "x"}}, "checkpoint.pt"), std::runtime_error);
}

TEST(Pretrained, ADirectoryWithoutATokenizerIsRefusedByName) {
  const fs::path dir = fs::temp_directory_path() / ("gradcache_no_tokenizer_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(kTinyBert, dir, fs::copy_options::recursive);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "vocab.txt"}) fs::remove(dir / f);
  try {
    gr::load_pretrained(dir.string());
    ADD_FAILURE() << "a model without a tokenizer was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(dir.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no tokenizer"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(Pretrained, SettingsThatDoNotApplyAreRefusedAndTheLearningRateIsForFineTuning) {
  const auto none = nlohmann::json::object();
  auto config = gr::build_train_config(none, {{"model_dir", kTinyBert}});
  EXPECT_DOUBLE_EQ(config.training.lr, 5e-5);
  EXPECT_NO_THROW(gr::validate(config));
  EXPECT_DOUBLE_EQ(gr::build_train_config(none, {{"model_dir", kTinyBert}, {"lr", "1e-4"}}).training.lr, 1e-4);
  EXPECT_DOUBLE_EQ(gr::build_train_config({{"lr", 2e-4}}, {{"model_dir", kTinyBert}}).training.lr, 2e-4);
  EXPECT_DOUBLE_EQ(gr::build_train_config(none, {}).training.lr, gr::TrainConfig{}.training.lr);
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"dim", "32"}, {"layers", "2"}, {"tokenizer", "x.model"}, {"similarity", "mlp"}}) {
    try {
      gr::validate(gr::build_train_config(none, {{"model_dir", kTinyBert}, {key, value}}));
      ADD_FAILURE() << "--" << key << " with --model-dir was accepted";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("--model-dir"), std::string::npos) << key << ": " << e.what();
    }
  }
}
