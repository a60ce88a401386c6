// --resume and the training data: a changed file is named and refused, checkpoints of earlier
// versions (no fingerprint) still resume, and the progress line counts the run's steps.
#include "files/atomic_file.h"
#include "retriever/run/progress.h"
#include "tests/retriever/train_test_util.h"

#include <gtest/gtest.h>

using namespace train_test;

namespace {

gr::TrainConfig four_steps(const TempDir& dir) {
  auto config = tiny_config(dir);
  config.training.steps = 4;  // 96 pairs in batches of 32: 3 batches per epoch
  config.eval.enabled = false;
  config.output.log_every = 1;
  return config;
}

// Stops after 2 of 4 steps: the checkpoint's position is batch 3 of epoch 1.
std::string interrupted_run(const TempDir& dir) {
  write_task(dir);
  auto options = quiet();
  options.stop_after_steps = 2;
  gr::train(four_steps(dir), options);
  return dir / "run/checkpoint.pt";
}

// The checkpoint as an earlier gradcache wrote it: the same, without the data fingerprint.
void strip_fingerprint(const std::string& path) {
  auto [info, model] = gr::load_checkpoint(path);
  ASSERT_TRUE(info.data.has_value());
  info.data.reset();
  torch::optim::AdamW optimizer(model.parameters(), torch::optim::AdamWOptions(1e-3));
  gr::load_training_state(path, optimizer, torch::kCPU);
  gr::save_checkpoint(path, info, model, optimizer, gr::capture_generators(torch::kCPU));
}

struct Resumed {
  std::string error, log;
};
Resumed resume(const TempDir& dir) {
  std::ostringstream log;
  auto options = quiet();
  options.resume = true;
  options.log = &log;
  const auto error = error_of([&] { gr::train(four_steps(dir), options); });
  return {error, log.str()};
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(ResumeData, AChangedTrainingFileIsRefusedNamingIt) {
  TempDir dir;
  const auto path = interrupted_run(dir);
  const auto checkpoint = gradcache::files::read_file(path);
  const auto original = gradcache::files::read_file(dir / "train.tsv");
  const auto size = std::to_string(original.size());
  auto edited = original;
  edited[edited.find("cat")] = 'b';  // same size, other content
  write(dir / "train.tsv", edited);
  auto message = resume(dir).error;
  EXPECT_TRUE(contains(message, "cannot resume " + path + ": the training data changed since it was saved:\n  "
                                "--train-file " + dir / "train.tsv" + ": was " + size + " bytes, CRC-32 0x"))
      << message;
  EXPECT_TRUE(contains(message, ", now " + size + " bytes, CRC-32 0x")) << message;
  EXPECT_TRUE(contains(message, "Resume with the original data, or start a new run on these with --overwrite"))
      << message;

  write_task(dir, 48);  // fewer lines: once a crash ("cannot create std::vector larger than max_size()")
  message = resume(dir).error;
  EXPECT_TRUE(contains(message, "--train-file " + dir / "train.tsv" + ": was " + size + " bytes")) << message;
  EXPECT_EQ(gradcache::files::read_file(path), checkpoint) << "a refused resume must leave the checkpoint alone";

  write(dir / "train.tsv", original);
  const auto resumed = resume(dir);
  EXPECT_EQ(resumed.error, "");
  EXPECT_FALSE(contains(resumed.log, "fingerprint")) << resumed.log;
}

TEST(ResumeData, ACheckpointOfAnEarlierVersionResumesWithANotice) {
  TempDir dir;
  const auto path = interrupted_run(dir);
  strip_fingerprint(path);
  ASSERT_FALSE(gr::read_checkpoint_info(path).data.has_value());
  const auto resumed = resume(dir);
  EXPECT_EQ(resumed.error, "");
  EXPECT_TRUE(contains(resumed.log, path + " records no fingerprint of its training data (saved by an earlier "
                                           "gradcache): changes to the data since then cannot be detected\n"))
      << resumed.log;
  const auto info = gr::read_checkpoint_info(path);
  EXPECT_EQ(info.progress.step, 4);
  ASSERT_TRUE(info.data.has_value()) << "the resumed run records the fingerprint";
  EXPECT_EQ(info.data->at(0).source, "--train-file");
  EXPECT_EQ(info.data->at(0).size, gradcache::files::read_file(dir / "train.tsv").size());
}

// Without a fingerprint the change goes unnoticed until the saved position lies past the data.
TEST(ResumeData, APositionPastTheDataIsRefusedNotACrash) {
  TempDir dir;
  const auto path = interrupted_run(dir);
  strip_fingerprint(path);
  write_task(dir, 48);  // one batch per epoch; the checkpoint stands before batch 3
  const auto message = resume(dir).error;
  EXPECT_TRUE(contains(message, "cannot resume " + path + ": it stopped before batch 3 of epoch 1, but the 48 "
                                "training examples now make only 1 batches per epoch: the training data changed"))
      << message;
  EXPECT_FALSE(contains(message, "max_size")) << message;
}

TEST(ResumeData, ProgressAfterAResumeCountsTheRunsSteps) {
  TempDir dir;
  interrupted_run(dir);
  const auto resumed = resume(dir);
  ASSERT_EQ(resumed.error, "");
  EXPECT_TRUE(contains(resumed.log, "step 3/4 ")) << resumed.log;
  EXPECT_TRUE(contains(resumed.log, "step 4/4 ")) << resumed.log;
  EXPECT_FALSE(contains(resumed.log, "step 1/2 ")) << resumed.log;
}

TEST(ResumeData, TheEtaOfAResumedRunUsesThisProcesssRate) {
  std::ostringstream out;
  gr::ProgressReporter reporter(out, /*terminal=*/false, /*log_every=*/50);
  gr::StepRecord record;
  record.step = 150;
  record.total_steps = 200;
  record.first_step = 100;  // 50 steps in 50 s here: 50 more take 50 s
  record.elapsed_s = 50;
  reporter.update(record);
  EXPECT_TRUE(contains(out.str(), "step 150/200 ")) << out.str();
  EXPECT_TRUE(contains(out.str(), "ETA 0m50s")) << out.str();
}
