// Matryoshka training in the retriever: --matryoshka/--matryoshka-weights and their checks, the
// loss TrainingModel wraps, and the per-prefix evaluation of train and eval.
#include "retriever/commands/evaluate_run.h"
#include "retriever/config/matryoshka_settings.h"
#include "retriever/train/training_loss.h"
#include "tests/retriever/train_test_util.h"

#include <gradcache/contrastive_loss.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

using namespace train_test;

namespace {

// The message validating `flags` (over the tiny run's settings) gives; "" when valid.
std::string settings_error(const gr::GivenSettings& flags) {
  try {
    gr::TrainConfig c = gr::build_train_config(nlohmann::json::object(), flags);
    gr::validate(c);
  } catch (const gr::SettingsError& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(MatryoshkaSettings, FlagsAreCheckedWithMessagesNamingThem) {
  EXPECT_EQ(settings_error({{"matryoshka", "64,32,16"}, {"matryoshka_weights", "1,0.5,0"}}), "");
  EXPECT_EQ(settings_error({{"matryoshka", "48"}, {"dim", "64"}, {"projection_dim", "48"}}), "");
  auto e = settings_error({{"matryoshka", "128,64"}});
  EXPECT_TRUE(has(e, "--matryoshka 128,64: dimension 128 is larger than the model's output width 64 (--dim)")) << e;
  e = settings_error({{"matryoshka", "64"}, {"projection_dim", "32"}});
  EXPECT_TRUE(has(e, "larger than the model's output width 32 (--projection)")) << e;
  e = settings_error({{"matryoshka", "64,x"}});
  EXPECT_TRUE(has(e, "--matryoshka takes positive integers separated by commas")) << e;
  EXPECT_TRUE(has(settings_error({{"matryoshka", "64,0"}}), "--matryoshka takes positive integers"));
  EXPECT_TRUE(has(settings_error({{"matryoshka", "64,32,"}}), "--matryoshka takes positive integers"));
  EXPECT_TRUE(has(settings_error({{"matryoshka", "32,32"}}), "dimension 32 is given twice"));
  e = settings_error({{"matryoshka", "64,32"}, {"matryoshka_weights", "1,1,1"}});
  EXPECT_TRUE(has(e, "--matryoshka-weights gives 3 weights for the 2 dimensions of --matryoshka 64,32")) << e;
  EXPECT_TRUE(has(settings_error({{"matryoshka", "64"}, {"matryoshka_weights", "-1"}}), "finite numbers >= 0"));
  EXPECT_TRUE(has(settings_error({{"matryoshka", "64"}, {"matryoshka_weights", "nan"}}), "finite numbers >= 0"));
  EXPECT_TRUE(has(settings_error({{"matryoshka", "64,32"}, {"matryoshka_weights", "0,0"}}), "all weights are 0"));
  EXPECT_TRUE(has(settings_error({{"matryoshka_weights", "1"}}), "only with --matryoshka DIMS"));
  // Saved in config.json and read back.
  gr::TrainConfig c;
  c.matryoshka.dims = "64,16";
  c.matryoshka.weights = "1,2";
  const nlohmann::json j = c;
  EXPECT_EQ(j.at("matryoshka"), "64,16");
  EXPECT_EQ(gr::read_saved_config(j).matryoshka.weights, "1,2");
}

TEST(MatryoshkaSettings, TheLossIsWrappedOnlyWhenAsked) {
  torch::manual_seed(0);
  const auto unit = [](const torch::Tensor& x) { return x / x.norm(2, 1, true); };
  auto q = unit(torch::randn({4, 8}, torch::kFloat64)), p = unit(torch::randn({4, 8}, torch::kFloat64));
  const gradcache::SimpleContrastiveLoss inner;
  gr::TrainConfig c;
  c.encoder.dim = 8;
  EXPECT_NEAR(gr::with_matryoshka(inner, c.matryoshka, true)({q, p}).item<double>(), inner(q, p).item<double>(), 1e-12);
  c.matryoshka.dims = "8,4";
  c.matryoshka.weights = "1,3";
  // An encoder that normalises (the built-in one's --normalize): the 4-wide prefixes are re-normalised.
  const double expected = (inner(q, p) + 3 * inner(unit(q.slice(1, 0, 4)), unit(p.slice(1, 0, 4)))).item<double>();
  EXPECT_NEAR(gr::with_matryoshka(inner, c.matryoshka, true)({q, p}).item<double>(), expected, 1e-12);
  EXPECT_FALSE(gr::matryoshka_options(c.matryoshka, false).normalize_prefixes());
}

// A quick run with --matryoshka: summary.json and the result hold each prefix's metrics, the
// full width's are the trained row's, and `eval --dim` of a prefix reproduces its row.
TEST(MatryoshkaTraining, EvaluatesEveryPrefixAndEvalDimAgrees) {
  TempDir dir;
  write_task(dir);
  auto c = tiny_config(dir);
  c.matryoshka.dims = "16,8,4";
  c.eval.bm25 = false;
  const auto result = gr::train(c, quiet());
  ASSERT_TRUE(result.trained);
  ASSERT_EQ(result.trained_prefixes.size(), 3u);
  EXPECT_EQ(result.trained_prefixes[1].dim, 8);
  EXPECT_DOUBLE_EQ(result.trained_prefixes[0].metrics.recall_at_10, result.trained->recall_at_10);
  EXPECT_DOUBLE_EQ(result.trained_prefixes[0].metrics.mrr_at_10, result.trained->mrr_at_10);
  std::ifstream in(dir / "run/summary.json");
  const auto summary = nlohmann::json::parse(in);
  ASSERT_EQ(summary.at("matryoshka").size(), 3u);
  EXPECT_EQ(summary["matryoshka"][2].at("dim"), 4);

  gr::EvalSettings s;
  s.checkpoint = dir / "run";
  s.corpus = dir / "corpus.tsv";
  s.queries = dir / "queries.tsv";
  s.qrels = dir / "qrels.txt";
  s.eval_bm25 = false;
  const auto all = gr::evaluate_checkpoint(s);
  ASSERT_EQ(all.prefixes.size(), 3u);
  EXPECT_DOUBLE_EQ(all.prefixes[2].metrics.recall_at_10, result.trained_prefixes[2].metrics.recall_at_10);
  s.dim = 8;
  const auto eight = gr::evaluate_checkpoint(s);
  EXPECT_EQ(eight.dim, 8);
  EXPECT_TRUE(eight.prefixes.empty());
  EXPECT_DOUBLE_EQ(eight.metrics.recall_at_10, result.trained_prefixes[1].metrics.recall_at_10);
  EXPECT_DOUBLE_EQ(eight.metrics.mrr_at_10, result.trained_prefixes[1].metrics.mrr_at_10);
  s.dim = 17;
  const auto e = error_of([&] { gr::evaluate_checkpoint(s); });
  EXPECT_TRUE(has(e, "--dim 17 is larger than the embeddings' width 16")) << e;
}
