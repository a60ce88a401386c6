// Model selection on dev data: the held-out dev split, the choice of the best model and
// --patience, and that a resumed run chooses as an uninterrupted one.
#include "retriever/data/dev_split.h"
#include "files/atomic_file.h"
#include "retriever/data/passage_corpus.h"
#include "retriever/train/model_selection.h"
#include "tests/retriever/train_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

using namespace train_test;

namespace {

std::vector<gr::TrainExample> examples(int n) {
  std::vector<gr::TrainExample> out;
  for (int i = 0; i < n; ++i) {
    out.push_back({"query " + std::to_string(i), {"passage " + std::to_string(i)}, {"shared negative"}, "", {""}});
  }
  return out;
}

std::set<std::string> queries_of(const std::vector<gr::TrainExample>& train) {
  std::set<std::string> out;
  for (const auto& ex : train) out.insert(ex.query);
  return out;
}

}  // namespace

TEST(DevSplit, HoldsOutASeededDisjointShare) {
  auto train = examples(100);
  const auto dev = gr::hold_out_dev(train, 0.2, 7, "train.tsv");
  EXPECT_EQ(train.size(), 80u);
  ASSERT_EQ(dev.queries.size(), 20u);
  EXPECT_EQ(dev.corpus.size(), 101u);  // every distinct passage, the held-out ones and the negative too
  const auto kept = queries_of(train);
  for (size_t q = 0; q < dev.queries.size(); ++q) {
    const auto& text = dev.queries.texts[q];
    EXPECT_EQ(kept.count(text), 0u) << text << " is both trained on and held out";
    const auto& judged = dev.qrels.at(dev.queries.ids[q]);
    ASSERT_EQ(judged.size(), 1u);
    const auto passage = dev.corpus.texts[dev.corpus.index.at(judged.begin()->first)];
    EXPECT_EQ(passage.substr(8), text.substr(6)) << "query and its positive";  // "passage N" / "query N"
  }
  // The same seed holds out the same pairs; another seed others.
  auto again = examples(100);
  EXPECT_EQ(gr::hold_out_dev(again, 0.2, 7, "train.tsv").queries.texts, dev.queries.texts);
  EXPECT_EQ(queries_of(again), kept);
  auto other = examples(100);
  EXPECT_NE(gr::hold_out_dev(other, 0.2, 8, "train.tsv").queries.texts, dev.queries.texts);
}

TEST(DevSplit, KeepsAtLeastOneOnEachSideAndRefusesBadFractions) {
  auto tiny = examples(3);
  EXPECT_EQ(gr::hold_out_dev(tiny, 0.01, 1, "train.tsv").queries.size(), 1u);
  EXPECT_EQ(tiny.size(), 2u);
  auto most = examples(3);
  gr::hold_out_dev(most, 0.99, 1, "train.tsv");
  EXPECT_EQ(most.size(), 1u);
  auto some = examples(10);
  EXPECT_NE(error_of([&] { gr::hold_out_dev(some, 1.0, 1, "train.tsv"); }).find("--dev-fraction must be in (0, 1)"),
            std::string::npos);
  auto one = examples(1);
  EXPECT_NE(error_of([&] { gr::hold_out_dev(one, 0.5, 1, "train.tsv"); }).find("at least 2"), std::string::npos);
}

TEST(DevSplit, JudgesByTheFilesDocidsAndRefusesADocidOfTwoTexts) {
  // passage_corpus (shared with `mine`): a positive keeps its docid, the others get d<row>.
  std::vector<gr::TrainExample> train = {{"q0", {"alpha"}, {"neg"}, "", {"D-7"}},
                                         {"q1", {"beta"}, {"neg"}, "", {""}},
                                         {"q2", {"gamma"}, {}, "", {"D-9"}}};
  const auto corpus = gr::passage_corpus(train, "train.jsonl");
  EXPECT_EQ(corpus.ids, (std::vector<std::string>{"D-7", "d1", "d2", "D-9"}));
  EXPECT_EQ(corpus.texts, (std::vector<std::string>{"alpha", "neg", "beta", "gamma"}));
  auto copy = train;
  const auto dev = gr::hold_out_dev(copy, 0.5, 3, "train.jsonl");
  for (const auto& [qid, judged] : dev.qrels) {
    const auto& text = dev.queries.texts[dev.queries.index.at(qid)];
    const std::string want = text == "q0" ? "D-7" : text == "q1" ? "d2" : "D-9";
    EXPECT_EQ(judged.begin()->first, want) << text;
  }
  train[1].positive_ids[0] = "D-7";  // the same docid for "beta" as for "alpha"
  const auto error = error_of([&] { gr::passage_corpus(train, "train.jsonl"); });
  EXPECT_NE(error.find("train.jsonl"), std::string::npos) << error;
  EXPECT_NE(error.find("docid \"D-7\" is given to two different passages"), std::string::npos) << error;
}

TEST(ModelSelection, KeepsTheBestAndCountsEvaluationsSinceForPatience) {
  gr::SelectionState s;
  EXPECT_TRUE(gr::record_evaluation(s, 0.2, 10));   // the first is the best so far
  EXPECT_TRUE(gr::record_evaluation(s, 0.3, 20));
  EXPECT_FALSE(gr::record_evaluation(s, 0.3, 30));  // a tie keeps the earlier model
  EXPECT_FALSE(gr::patience_exhausted(s, 2));
  EXPECT_FALSE(gr::record_evaluation(s, std::nan(""), 40));
  EXPECT_TRUE(gr::patience_exhausted(s, 2));
  EXPECT_FALSE(gr::patience_exhausted(s, 0));  // 0: never
  EXPECT_EQ(s.best_step, 20);
  EXPECT_DOUBLE_EQ(s.best_value, 0.3);
  EXPECT_EQ(s.evaluations, 4);
  EXPECT_TRUE(gr::record_evaluation(s, 0.5, 50));
  EXPECT_EQ(s.since_best, 0);
  const auto back = gr::selection_from_json(gr::to_json(s));
  EXPECT_EQ(gr::to_json(back), gr::to_json(s));
  gr::RetrievalMetrics m;
  m.mrr_at_10 = 0.25;
  EXPECT_EQ(gr::metric_value(m, "mrr@10"), 0.25);
  EXPECT_THROW(gr::metric_value(m, "map"), std::invalid_argument);
}

TEST(ModelSelection, SettingsSayWhatIsMissingOrWrong) {
  TempDir dir;
  auto config = tiny_config(dir);
  config.selection.eval_every = 2;
  EXPECT_NE(error_of([&] { gr::validate(config); }).find("--eval-every needs dev data"), std::string::npos);
  config.selection.dev_fraction = 1.5;
  EXPECT_NE(error_of([&] { gr::validate(config); }).find("--dev-fraction must be in (0, 1)"), std::string::npos);
  config.selection.dev_fraction = 0.2;
  config.selection.metric = "map@10";
  EXPECT_NE(error_of([&] { gr::validate(config); }).find("--select-metric must be"), std::string::npos);
  config.selection.metric = "ndcg@10";
  EXPECT_EQ(error_of([&] { gr::validate(config); }), "");
  config.selection.eval_every = 0;
  EXPECT_NE(error_of([&] { gr::validate(config); }).find("only with --eval-every"), std::string::npos);
  config.selection.dev_fraction = 0;
  config.selection.patience = 3;
  EXPECT_NE(error_of([&] { gr::validate(config); }).find("--patience is used only with --eval-every"),
            std::string::npos);
}

namespace {

gr::TrainConfig selecting_config(const TempDir& dir, const std::string& output) {
  auto config = tiny_config(dir);
  config.eval.enabled = false;
  config.selection.eval_every = 2;
  config.selection.dev_fraction = 0.25;
  config.training.steps = 9;  // evaluations at 2, 4, 6, 8 and the last step
  config.output.dir = dir / output;
  return config;
}

nlohmann::json summary_selection(const TempDir& dir, const std::string& run) {
  return nlohmann::json::parse(gradcache::files::read_file(dir / (run + "/summary.json"))).at("selection");
}

}  // namespace

TEST(ModelSelection, ResumedRunChoosesTheBestAsAnUninterruptedOne) {
  TempDir dir;
  write_task(dir);
  gr::train(selecting_config(dir, "straight"), quiet());
  const auto straight = summary_selection(dir, "straight");
  EXPECT_EQ(straight.at("evaluations"), 5);
  ASSERT_GT(straight.at("best_step").get<int64_t>(), 0);
  EXPECT_EQ(gr::read_checkpoint_info(dir / "straight/best.pt").progress.step, straight.at("best_step"));
  for (int64_t stop : {3, 4}) {  // between evaluations, and at one
    const std::string run = "interrupted" + std::to_string(stop);
    auto options = quiet();
    options.stop_after_steps = stop;
    EXPECT_TRUE(gr::train(selecting_config(dir, run), options).interrupted);
    EXPECT_FALSE(gr::read_checkpoint_info(dir / (run + "/checkpoint.pt")).selection.is_null());
    options.stop_after_steps = 0;
    options.resume = true;
    gr::train(selecting_config(dir, run), options);
    const auto resumed = summary_selection(dir, run);
    for (const char* key : {"best_step", "best_value", "evaluations", "since_best"}) {
      EXPECT_EQ(resumed.at(key), straight.at(key)) << key << " after a stop at step " << stop;
    }
    const auto a = weights(dir / "straight/best.pt"), b = weights(dir / (run + "/best.pt"));
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "tensor " << i;
    // One dev line per evaluation, none repeated by the resumed run.
    int dev_lines = 0;
    std::ifstream metrics(dir / (run + "/metrics.jsonl"));
    for (std::string line; std::getline(metrics, line);) dev_lines += nlohmann::json::parse(line).contains("dev");
    EXPECT_EQ(dev_lines, 5);
  }
}

TEST(ModelSelection, PatienceStopsTheRunEarly) {
  TempDir dir;
  write_task(dir);
  auto config = selecting_config(dir, "run");
  config.training.steps = 40;
  config.training.lr = 1e-12;  // the model does not change: no evaluation improves on the first
  config.selection.patience = 2;
  const auto result = gr::train(config, quiet());
  EXPECT_TRUE(result.stopped_early);
  EXPECT_FALSE(result.interrupted);
  EXPECT_EQ(result.progress.step, 6);  // evaluations at 2 (the best), 4 and 6
  const auto summary = nlohmann::json::parse(gradcache::files::read_file(dir / "run/summary.json"));
  EXPECT_EQ(summary.at("stopped_early"), true);
  EXPECT_EQ(summary.at("selection").at("best_step"), 2);
  EXPECT_TRUE(fs::exists(dir / "run/best.pt"));
  EXPECT_EQ(gr::read_checkpoint_info(dir / "run/checkpoint.pt").progress.step, 6);
}
