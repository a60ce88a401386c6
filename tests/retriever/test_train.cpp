// Training runs end to end (small, seconds each): files, resume, modes, errors.
#include "files/atomic_file.h"
#include "retriever/run/load_task.h"
#include "retriever/train/training_state.h"
#include "tests/retriever/train_test_util.h"

#include <gradcache/gradcache.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>

using namespace train_test;

TEST(Trainer, WritesEverythingUnderOutputAndLearns) {
  TempDir dir;
  write_task(dir);
  auto config = tiny_config(dir);
  config.training.steps = 30;
  auto result = gr::train(config, quiet());
  for (const char* f : {"config.json", "tokenizer.model", "checkpoint.pt", "metrics.jsonl", "summary.json"}) {
    EXPECT_TRUE(fs::exists(dir / ("run/" + std::string(f)))) << f;
  }
  ASSERT_TRUE(result.trained && result.untrained);
  EXPECT_EQ(result.progress.step, 30);
  EXPECT_EQ(result.trained->queries, 96u);
  EXPECT_GT(result.trained->mrr_at_10, result.untrained->mrr_at_10 + 0.1);
  auto summary = nlohmann::json::parse(gradcache::files::read_file(dir / "run/summary.json"));
  EXPECT_EQ(summary.at("steps"), 30);
  EXPECT_EQ(nlohmann::json::parse(gradcache::files::read_file(dir / "run/config.json")).at("batch_size"), 32);
  std::ifstream metrics(dir / "run/metrics.jsonl");
  std::string line;
  int lines = 0;
  while (std::getline(metrics, line)) lines += nlohmann::json::parse(line).contains("loss");
  EXPECT_EQ(lines, 15);  // every 2 steps
}

TEST(Trainer, ResumedRunEndsBitIdenticalToAnUninterruptedOne) {
  for (const char* mode : {"cache", "accumulate"}) {
    TempDir dir;
    write_task(dir);
    auto config = tiny_config(dir);
    config.batching.mode = gr::parse_choice(gr::train_mode_names(), mode, "--mode");
    config.eval.enabled = false;
    config.output.dir = dir / "straight";
    gr::train(config, quiet());

    config.output.dir = dir / "interrupted";
    auto options = quiet();
    options.stop_after_steps = 4;  // 3 batches per epoch: stops inside the second epoch
    auto first = gr::train(config, options);
    EXPECT_TRUE(first.interrupted);
    EXPECT_EQ(first.progress.step, 4);
    options.stop_after_steps = 0;
    options.resume = true;
    auto second = gr::train(config, options);
    EXPECT_FALSE(second.interrupted);
    EXPECT_EQ(second.progress.step, 6);

    auto a = weights(dir / "straight/checkpoint.pt"), b = weights(dir / "interrupted/checkpoint.pt");
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << mode << " tensor " << i;
  }
}

TEST(Trainer, ModesAgreeWhereTheyShould) {
  // One chunk holding the whole batch: cache, full and accumulate compute the same update.
  TempDir dir;
  write_task(dir);
  std::vector<std::vector<torch::Tensor>> results;
  for (const char* mode : {"full", "cache", "accumulate"}) {
    auto config = tiny_config(dir);
    config.batching.mode = gr::parse_choice(gr::train_mode_names(), mode, "--mode");
    config.batching.chunk_size = 64;         // larger than the batch: one chunk
    config.batching.sub_batch_size = 64;     // and one sub-batch
    config.batching.sort_by_length = false;  // accumulate never sorts: keep one order for all
    config.training.steps = 2;
    config.eval.enabled = false;
    config.output.dir = dir / mode;
    gr::train(config, quiet());
    results.push_back(weights(dir / (std::string(mode) + "/checkpoint.pt")));
  }
  for (size_t m = 1; m < results.size(); ++m) {
    for (size_t i = 0; i < results[0].size(); ++i) {
      EXPECT_TRUE(torch::allclose(results[m][i], results[0][i], 1e-4, 1e-5)) << "mode " << m << " tensor " << i;
    }
  }
}


// A temperature of 1e-38 makes every loss non-finite: the run stops after
// --max-skipped-updates skips in a row instead of exiting 0 with a model that never trained.
TEST(Trainer, ARunWhoseUpdatesAreSkippedInARowStops) {
  TempDir dir;
  write_task(dir);
  auto config = tiny_config(dir);
  config.loss.temperature = 1e-38;
  config.training.max_skipped_updates = 2;
  config.output.save_every = 1;
  const auto message = error_of([&] { gr::train(config, quiet()); });
  // (which steps: those after the loss first overflows, which depends on the weights' drift)
  EXPECT_NE(message.find(" skipped their update, 2 updates in a row (the loss was "), std::string::npos)
      << message;
  EXPECT_NE(message.find("its last checkpoint, " + config.output.dir + "/checkpoint.pt, is kept"), std::string::npos)
      << message;
}

TEST(Trainer, RefusesToOverwriteARunAndKeepsItIntact) {
  TempDir dir;
  auto config = two_step_run(dir);
  const auto before = gradcache::files::read_file(dir / "run/checkpoint.pt");
  EXPECT_NE(error_of([&] { gr::train(config, quiet()); }).find("already holds a training run"), std::string::npos);
  EXPECT_EQ(gradcache::files::read_file(dir / "run/checkpoint.pt"), before);

  auto changed = config;
  changed.batching.batch_size = 16;
  auto options = quiet();
  options.resume = true;
  const auto message = error_of([&] { gr::train(changed, options); });
  EXPECT_NE(message.find("batch_size: checkpoint has 32, now 16"), std::string::npos) << message;
  EXPECT_EQ(gradcache::files::read_file(dir / "run/checkpoint.pt"), before);
}

TEST(Trainer, CorruptCheckpointIsRefusedAndLeftAlone) {
  TempDir dir;
  write_task(dir);
  auto config = tiny_config(dir);
  fs::create_directories(dir / "run");
  write(dir / "run/checkpoint.pt", "this is not a checkpoint");
  auto options = quiet();
  options.resume = true;
  EXPECT_NE(error_of([&] { gr::train(config, options); }).find("corrupt or not a gradcache checkpoint"),
            std::string::npos);
  EXPECT_EQ(gradcache::files::read_file(dir / "run/checkpoint.pt"), "this is not a checkpoint");
  EXPECT_NE(error_of([&] { gr::read_checkpoint_info(dir / "missing.pt"); }).find("no checkpoint at"), std::string::npos);
  options.resume = true;
  config.output.dir = dir / "empty";
  EXPECT_NE(error_of([&] { gr::train(config, options); }).find("holds no checkpoint.pt"), std::string::npos);
}

TEST(Trainer, BadSettingsAndDataAreExplained) {
  TempDir dir;
  write_task(dir);
  auto config = tiny_config(dir);
  config.batching.chunk_size = 0;
  EXPECT_NE(error_of([&] { gr::train(config, quiet()); }).find("--chunk-size must be positive"), std::string::npos);
  config = tiny_config(dir);
  config.batching.chunk_size = 1000;  // larger than the batch: allowed, one chunk
  config.training.steps = 1;
  config.eval.enabled = false;
  EXPECT_EQ(gr::train(config, quiet()).progress.step, 1);

  write(dir / "bad.tsv", "a query\ta passage\nonly a query\n");
  config = tiny_config(dir);
  config.data.train_file = dir / "bad.tsv";
  config.output.dir = dir / "bad";
  EXPECT_NE(error_of([&] { gr::train(config, quiet()); }).find("bad.tsv:2"), std::string::npos);
  config.data.train_file = dir / "missing.tsv";
  EXPECT_NE(error_of([&] { gr::train(config, quiet()); }).find("missing.tsv"), std::string::npos);
  config = tiny_config(dir);
  config.batching.batch_size = 500;
  config.output.dir = dir / "big";
  EXPECT_NE(error_of([&] { gr::train(config, quiet()); }).find("larger than the 96 training examples"),
            std::string::npos);
  config = tiny_config(dir);
  config.batching.negatives = 1;
  config.output.dir = dir / "negs";
  EXPECT_NE(error_of([&] { gr::train(config, quiet()); }).find("has no negatives"), std::string::npos);
}

TEST(Task, SkippedLinesAreCountedAndNamed) {
  TempDir dir;
  write_task(dir);
  std::string text = gradcache::files::read_file(dir / "train.tsv");
  write(dir / "some_bad.tsv", text + "only a query\n\tno query\nanother lone query\n");
  auto config = tiny_config(dir);
  config.data.train_file = dir / "some_bad.tsv";
  config.data.on_bad_line = gr::OnBadLine::Skip;
  const auto task = gr::load_task(config);
  EXPECT_EQ(task.train->size(), 96u);
  ASSERT_EQ(task.notices.size(), 1u);
  EXPECT_NE(task.notices[0].find("some_bad.tsv: skipped 3 of 99 lines (--on-bad-line skip); first: "),
            std::string::npos)
      << task.notices[0];
  EXPECT_NE(task.notices[0].find("some_bad.tsv:97"), std::string::npos) << task.notices[0];
  config.data.train_file = dir / "train.tsv";
  EXPECT_TRUE(gr::load_task(config).notices.empty());
}

// Judgements of ids the other evaluation files lack: counted in a notice; none usable: an error
// from the data, before the tokenizer is trained (train writes no tokenizer.model).
TEST(Task, JudgementsOfUnknownIdsAreNotedAndNoUsableQueryIsRefused) {
  TempDir dir;
  write_task(dir);
  write(dir / "some_unknown.txt", gradcache::files::read_file(dir / "qrels.txt") + "q500 0 d1 1\n");
  auto config = tiny_config(dir);
  config.data.eval_qrels = dir / "some_unknown.txt";
  const auto task = gr::load_task(config);
  ASSERT_EQ(task.notices.size(), 1u);
  EXPECT_NE(task.notices[0].find("1 of 97 judgements name a query id that is not in"), std::string::npos)
      << task.notices[0];
  write(dir / "none_usable.txt", "x1 0 d1 1\nq2 0 x2 1\n");
  config.data.eval_qrels = dir / "none_usable.txt";
  config.output.dir = dir / "none";
  EXPECT_NE(error_of([&] { gr::train(config, quiet()); }).find("none_usable.txt: no query can be evaluated"),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir / "none/tokenizer.model"));
}

TEST(Trainer, AFailedOverwriteLeavesTheOldRunAndABadMetricsPathIsRefused) {
  TempDir dir;
  auto config = two_step_run(dir);
  const std::string metrics = gradcache::files::read_file((dir.path / "run" / "metrics.jsonl").string());
  ASSERT_FALSE(metrics.empty());

  // --overwrite with a mistyped training file: the old run's metrics stay as they were.
  auto options = quiet();
  options.overwrite = true;
  config.data.train_file = dir / "trian.tsv";
  EXPECT_NE(error_of([&] { gr::train(config, options); }).find("trian.tsv"), std::string::npos);
  EXPECT_EQ(gradcache::files::read_file((dir.path / "run" / "metrics.jsonl").string()), metrics);

  // --metrics-out in a missing directory, or onto a directory: refused before training.
  config = tiny_config(dir);
  config.output.dir = dir / "other";
  config.output.metrics_out = (dir.path / "no" / "such" / "dir" / "m.jsonl").string();
  EXPECT_NE(error_of([&] { gr::train(config, quiet()); }).find("--metrics-out"), std::string::npos);
  EXPECT_NE(error_of([&] { gr::train(config, quiet()); }).find("does not exist"), std::string::npos);
  config.output.metrics_out = dir.path.string();
  EXPECT_NE(error_of([&] { gr::train(config, quiet()); }).find("is a directory"), std::string::npos);

  // An existing file is replaced only with --overwrite, and an input of the run never (it was:
  // `--metrics-out data/pairs.jsonl` left one line of 64), whatever path names it.
  const std::string train = gradcache::files::read_file(config.data.train_file);
  for (const auto& input : {config.data.train_file, (dir.path / "." / "train.tsv").string()}) {
    config.output.metrics_out = input;
    EXPECT_NE(error_of([&] { gr::train(config, options); }).find("is the command's --train-file"), std::string::npos);
  }
  fs::create_symlink(dir.path / "queries.tsv", dir.path / "link.tsv");
  config.output.metrics_out = dir / "link.tsv";
  EXPECT_NE(error_of([&] { gr::train(config, options); }).find("is the command's --eval-queries"), std::string::npos);
  EXPECT_EQ(gradcache::files::read_file(config.data.train_file), train);
  write(dir / "mine.jsonl", "{\"a\": 1}\n");
  config.output.metrics_out = dir / "mine.jsonl";
  EXPECT_NE(error_of([&] { gr::train(config, quiet()); }).find("exists; pass --overwrite"), std::string::npos);
  EXPECT_EQ(gradcache::files::read_file(dir / "mine.jsonl"), "{\"a\": 1}\n");
}

namespace {

// Every file of a run directory, by name (subdirectories by their name alone).
std::map<std::string, std::string> files_of(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::directory_iterator(dir))
    files[entry.path().filename().string()] = entry.is_directory() ? "(directory)" : gradcache::files::read_file(entry.path().string());
  return files;
}

}  // namespace

// Issue 27, item 6: an --overwrite that fails leaves the old run whole, file for file, whether
// it fails on its data (before it writes anything) or after it has claimed the directory (its
// first checkpoint cannot be written); and a resume refuses a directory whose config.json or
// tokenizer is another run's.
TEST(Trainer, AFailedOverwriteLeavesEveryFileOfTheOldRun) {
  TempDir dir;
  auto config = two_step_run(dir);
  const fs::path run = dir / "run";
  const auto before = files_of(run);
  ASSERT_TRUE(before.count("checkpoint.pt") && before.count("tokenizer.model") && before.count("config.json"));
  auto options = quiet();
  options.overwrite = true;

  // Data too small for the batch: found after the tokenizer is trained, before any file is written.
  {
    std::ofstream five((dir / "five.tsv").c_str());
    for (int i = 0; i < 5; ++i) five << "query " << i << "\tpassage about thing " << i << "\n";
  }
  auto small = config;
  small.data.train_file = dir / "five.tsv";
  small.batching.batch_size = 16;
  small.tokenizer.vocab_size = 30;
  EXPECT_NE(error_of([&] { gr::train(small, options); }).find("is larger than the 5 training examples"),
            std::string::npos);
  EXPECT_EQ(files_of(run), before);

  // Judgements no query can use.
  {
    std::ofstream qrels((dir / "unusable_qrels.txt").c_str());
    qrels << "q-none 0 d0 1\n";
  }
  auto unusable = config;
  unusable.eval.enabled = true;
  unusable.data.eval_qrels = dir / "unusable_qrels.txt";
  EXPECT_FALSE(error_of([&] { gr::train(unusable, options); }).empty());
  EXPECT_EQ(files_of(run), before);

  // A failure after the claim: the first checkpoint cannot be written (this process's temporary
  // name for it is a directory). The new run's files go, the old run's come back.
  auto longer = config;
  longer.training.steps = 3;
  const std::string temporary = fs::path(gradcache::files::temporary_path((run / "checkpoint.pt").string())).filename().string();
  fs::create_directory(run / temporary);
  EXPECT_NE(error_of([&] { gr::train(longer, options); }).find(temporary), std::string::npos);
  fs::remove(run / temporary);
  EXPECT_EQ(files_of(run), before);
  // Issue 41, item 7: the same failure of a new run (no old one) left its config.json,
  // tokenizer.model and metrics.jsonl without a checkpoint; now it leaves nothing of its own.
  auto fresh = longer;
  fresh.output.dir = dir / "fresh";
  fs::create_directories(fs::path(fresh.output.dir) / temporary);
  EXPECT_NE(error_of([&] { gr::train(fresh, quiet()); }).find(temporary), std::string::npos);
  EXPECT_EQ(files_of(fresh.output.dir), (std::map<std::string, std::string>{{temporary, "(directory)"}}));

  // A successful --overwrite replaces every file and leaves nothing of the old run aside.
  gr::train(longer, options);
  const auto after = files_of(run);
  EXPECT_NE(after.at("checkpoint.pt"), before.at("checkpoint.pt"));
  for (const auto& [name, content] : after) EXPECT_EQ(name.rfind(".replaced-", 0), std::string::npos) << name;

  // Mixed directories (made by hand, or by an earlier version): config.json or the tokenizer of
  // another run beside the checkpoint is refused on --resume, naming the file.
  auto resume = quiet();
  resume.resume = true;
  auto other = nlohmann::json::parse(before.at("config.json"));
  other["lr"] = 0.5;
  gradcache::files::write_file_atomic((run / "config.json").string(), other.dump());
  auto message = error_of([&] { gr::train(longer, resume); });
  EXPECT_NE(message.find("config.json is not from the run that saved checkpoint.pt"), std::string::npos) << message;
  EXPECT_NE(message.find("lr: checkpoint has"), std::string::npos) << message;
  gradcache::files::write_file_atomic((run / "config.json").string(), after.at("config.json"));
  gradcache::files::write_file_atomic((run / "tokenizer.model").string(), before.at("tokenizer.model") + "x");
  message = error_of([&] { gr::train(longer, resume); });
  EXPECT_NE(message.find("tokenizer.model is not from the run"), std::string::npos) << message;
  gradcache::files::write_file_atomic((run / "tokenizer.model").string(), after.at("tokenizer.model"));
  EXPECT_EQ(gr::train(longer, resume).progress.step, 3);  // the files agree again: resumed (and finished)
}

TEST(Trainer, TorchScriptEncoderIsTrainedAndAWrongOneIsRefused) {
  TempDir dir;
  write_task(dir);
  // A TorchScript encoder built in C++ (as one exported from Python would be): embeddings,
  // returning [B, T, d], mean-pooled by the trainer.
  torch::manual_seed(0);  // LibTorch seeds its generator randomly per process
  torch::jit::Module good("Enc");
  good.register_attribute("training", c10::BoolType::get(), true);
  good.register_parameter("emb", torch::randn({60, 8}).mul_(0.1).requires_grad_(), false);
  good.define(R"(
    def forward(self, input_ids, attention_mask):
        return torch.dropout(torch.embedding(self.emb, input_ids), 0.1, self.training)
  )");
  good.save(dir / "good.pt");
  torch::jit::Module bad("Bad");
  bad.register_parameter("w", torch::randn({3}).requires_grad_(), false);
  bad.define(R"(
    def forward(self, x):
        return x * self.w
  )");
  bad.save(dir / "bad.pt");

  auto config = tiny_config(dir);
  config.encoder.torchscript = dir / "good.pt";
  config.training.steps = 20;
  config.training.lr = 0.02;
  auto result = gr::train(config, quiet());
  ASSERT_TRUE(result.trained && result.untrained);
  EXPECT_GT(result.trained->mrr_at_10, result.untrained->mrr_at_10);

  config.encoder.torchscript = dir / "bad.pt";
  config.output.dir = dir / "bad_run";
  config.eval.enabled = false;
  const auto message = error_of([&] { gr::train(config, quiet()); });
  EXPECT_NE(message.find("forward(input_ids, attention_mask)"), std::string::npos) << message;
}

TEST(Trainer, LearningRateWarmsUpThenDecays) {
  EXPECT_DOUBLE_EQ(gr::lr_factor(0, 100, 10), 0.1);
  EXPECT_DOUBLE_EQ(gr::lr_factor(9, 100, 10), 1.0);
  EXPECT_DOUBLE_EQ(gr::lr_factor(10, 100, 10), 1.0);
  EXPECT_DOUBLE_EQ(gr::lr_factor(99, 100, 10), 1.0 / 90);
  EXPECT_DOUBLE_EQ(gr::lr_factor(0, 5, 0), 1.0);
}

TEST(Trainer, AutomaticChunkSizesAreMeasuredOnceAndKeptOnResume) {
  TempDir dir;
  write_task(dir);
  auto config = tiny_config(dir);
  config.batching.chunk_size_auto = true;
  config.batching.chunk_memory = int64_t{200} << 10;  // small enough to need several chunks
  config.batching.retain_memory = int64_t{200} << 10;
  config.eval.enabled = false;
  auto options = quiet();
  options.stop_after_steps = 2;
  const auto first = gr::train(config, options);
  EXPECT_GE(first.config.batching.chunk_size, 4);
  EXPECT_LT(first.config.batching.chunk_size, 32);
  EXPECT_EQ(nlohmann::json::parse(gradcache::files::read_file(dir / "run/config.json")).at("chunk_size"),
            first.config.batching.chunk_size);
  options.stop_after_steps = 0;
  options.resume = true;
  const auto second = gr::train(config, options);
  EXPECT_EQ(second.progress.step, 6);
  EXPECT_EQ(second.config.batching.chunk_size, first.config.batching.chunk_size);
  EXPECT_EQ(second.config.batching.passage_chunk_size, first.config.batching.passage_chunk_size);
}

TEST(Trainer, Bf16RunTrainsAndResumesBitIdentically) {
  TempDir dir;
  write_task(dir);
  auto config = tiny_config(dir);
  config.machine.precision = gradcache::Precision::bf16;
  config.eval.enabled = false;
  config.output.dir = dir / "straight";
  auto straight = gr::train(config, quiet());
  EXPECT_TRUE(std::isfinite(straight.final_loss));
  auto summary = nlohmann::json::parse(gradcache::files::read_file(dir / "straight/summary.json"));
  EXPECT_EQ(summary.at("precision"), "bf16");
  EXPECT_EQ(gr::read_checkpoint_info(dir / "straight/checkpoint.pt").config.machine.precision,
            gradcache::Precision::bf16);

  // bf16 computes something else than fp32 (autocast really was on).
  config.machine.precision = gradcache::Precision::fp32;
  config.output.dir = dir / "fp32";
  gr::train(config, quiet());
  auto a = weights(dir / "straight/checkpoint.pt"), f = weights(dir / "fp32/checkpoint.pt");
  bool differs = false;
  for (size_t i = 0; i < a.size(); ++i) differs = differs || !torch::equal(a[i], f[i]);
  EXPECT_TRUE(differs);

  // A resumed bf16 run ends where the uninterrupted one did; it may not switch precision.
  config.machine.precision = gradcache::Precision::bf16;
  config.output.dir = dir / "interrupted";
  auto options = quiet();
  options.stop_after_steps = 4;
  gr::train(config, options);
  options.stop_after_steps = 0;
  options.resume = true;
  auto other = config;
  other.machine.precision = gradcache::Precision::fp32;
  EXPECT_NE(error_of([&] { gr::train(other, options); }).find("precision"), std::string::npos);
  gr::train(config, options);
  auto b = weights(dir / "interrupted/checkpoint.pt");
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "tensor " << i;
}

TEST(Trainer, PrecisionIsValidated) {
  TempDir dir;
  write_task(dir);
  auto config = tiny_config(dir);
  // An unknown precision is refused where settings are read (flags, --config files, config.json).
  EXPECT_NE(error_of([&] { gr::build_train_config(nlohmann::json::object(), {{"precision", "fp8"}}); })
                .find("--precision must be fp32, bf16 or fp16"),
            std::string::npos);
  if (!gradcache::autocast_supported(gradcache::Precision::fp16, c10::kCPU)) {
    config.machine.precision = gradcache::Precision::fp16;
    EXPECT_NE(error_of([&] { gr::train(config, quiet()); }).find("use --precision bf16 on CPU"), std::string::npos);
  }
}
