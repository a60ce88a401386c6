// Batches prepared ahead (retriever/train/batch_prefetch.h): in order, at most --prefetch ahead,
// errors where they belong, no hang when dropped; a run is bit-identical with and without it,
// and resumes so.
#include "retriever/train/batch_prefetch.h"
#include "tests/retriever/train_test_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <set>
#include <chrono>
#include <stdexcept>
#include <thread>

using namespace train_test;

namespace {

gr::PreparedBatch numbered(int64_t b) {
  gr::PreparedBatch batch;
  batch.examples = {b};
  return batch;
}

// Waits up to 10 s for `calls` to reach `want`; true if it did.
bool reaches(const std::atomic<int64_t>& calls, int64_t want) {
  for (int i = 0; i < 1000 && calls.load() < want; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return calls.load() >= want;
}

}  // namespace

TEST(BatchPrefetch, GivesTheBatchesInOrderAndPreparesAtMostDepthAhead) {
  for (const int64_t depth : {0, 1, 3}) {
    std::atomic<int64_t> calls{0};
    gr::BatchPrefetch batches([&](int64_t b) { ++calls; return numbered(b); }, 2, 9, depth);
    if (depth > 0) {
      ASSERT_TRUE(reaches(calls, depth)) << "depth " << depth;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      EXPECT_EQ(calls.load(), depth) << "prepared more than --prefetch ahead";
    } else {
      EXPECT_EQ(calls.load(), 0);
    }
    for (int64_t b = 2; b < 9; ++b) EXPECT_EQ(batches.next().examples, std::vector<int64_t>{b}) << "depth " << depth;
    EXPECT_EQ(calls.load(), 7);
    EXPECT_THROW(batches.next(), std::out_of_range);
  }
}

TEST(BatchPrefetch, AnErrorIsThrownAtItsOwnBatchAndEndsThePrefetch) {
  for (const int64_t depth : {0, 2}) {
    gr::BatchPrefetch batches(
        [](int64_t b) {
          if (b == 3) throw std::invalid_argument("batch 4 is bad");
          return numbered(b);
        },
        0, 6, depth);
    EXPECT_EQ(batches.next().examples, std::vector<int64_t>{0});
    EXPECT_EQ(batches.next().examples, std::vector<int64_t>{1});
    EXPECT_EQ(batches.next().examples, std::vector<int64_t>{2});
    try {
      batches.next();
      ADD_FAILURE() << "no error at batch 4";
    } catch (const std::invalid_argument& e) {
      EXPECT_STREQ(e.what(), "batch 4 is bad");
    }
    if (depth > 0) {
      EXPECT_THROW(batches.next(), std::out_of_range);  // never waits for a batch that cannot come
    }
  }
}

TEST(BatchPrefetch, DroppedWhilePreparingItReturnsAfterThatBatch) {
  std::atomic<int64_t> calls{0};
  const auto start = std::chrono::steady_clock::now();
  {
    gr::BatchPrefetch batches(
        [&](int64_t b) {
          ++calls;
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          return numbered(b);
        },
        0, 1000, 4);
    EXPECT_EQ(batches.next().examples, std::vector<int64_t>{0});
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_LE(calls.load(), 6);
}

TEST(Trainer, PrefetchGivesTheSameRunAndResumesBitIdentically) {
  TempDir dir;
  write_task(dir);  // 96 pairs, batches of 32: 6 steps cross an epoch
  auto config = tiny_config(dir);
  config.eval.enabled = false;
  config.machine.prefetch = 0;
  config.output.dir = dir / "in_the_step";
  gr::train(config, quiet());
  config.machine.prefetch = 3;
  config.output.dir = dir / "ahead";
  gr::train(config, quiet());
  config.output.dir = dir / "interrupted";
  auto options = quiet();
  options.stop_after_steps = 4;  // in the second epoch, with batches prepared past the stop
  EXPECT_TRUE(gr::train(config, options).interrupted);
  options.stop_after_steps = 0;
  options.resume = true;
  config.machine.prefetch = 1;  // free on resume
  EXPECT_EQ(gr::train(config, options).progress.step, 6);
  const auto a = weights(dir / "in_the_step/checkpoint.pt");
  for (const char* run : {"ahead", "interrupted"}) {
    const auto b = weights(dir / (std::string(run) + "/checkpoint.pt"));
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << run << ": tensor " << i;
  }
}

TEST(TrainingData, EachRankPreparesItsShareOfTheBatchOneProcessPrepares) {
  TempDir dir;
  write_task(dir);  // 96 pairs, batches of 32
  auto config = tiny_config(dir);
  config.eval.enabled = false;
  auto quiet_log = [](const std::string&) {};
  gr::TrainingData::TokenizerSource trained;
  trained.trained_path = dir / "tokenizer.model";
  const gr::TrainingData whole(config, trained, {0, 1}, quiet_log);
  config.tokenizer.file = dir / "tokenizer.model";
  const gr::TrainingData rank0(config, {}, {0, 2}, quiet_log), rank1(config, {}, {1, 2}, quiet_log);
  const auto order = gr::EpochOrder::shuffled(whole.size(), config.training.seed, 0);
  const auto all = whole.prepare_batch(order, 1, 0), first = rank0.prepare_batch(order, 1, 0),
             second = rank1.prepare_batch(order, 1, 0);
  // Rank r: the rows [16 r, 16 r + 16) of batch 2 sorted by query length, as one process has them.
  using Set = std::set<int64_t>;
  const std::vector<int64_t> every = order.all();
  EXPECT_EQ(Set(all.examples.begin(), all.examples.end()), Set(every.begin() + 32, every.begin() + 64));
  EXPECT_EQ(first.examples, std::vector<int64_t>(all.examples.begin(), all.examples.begin() + 16));
  EXPECT_EQ(second.examples, std::vector<int64_t>(all.examples.begin() + 16, all.examples.end()));
  EXPECT_TRUE(torch::equal(second.passages.at("input_ids"),
                           all.passages.at("input_ids").slice(0, 16).slice(1, 0, second.passages.at("input_ids").size(1))));
  EXPECT_EQ(first.queries.at("input_ids").size(0), 16);
  EXPECT_EQ(second.passages.at("input_ids").size(0), 16);
  const auto lengths = first.queries.at("attention_mask").sum(1);
  for (int64_t i = 1; i < lengths.size(0); ++i) EXPECT_LE(lengths[i - 1].item<int64_t>(), lengths[i].item<int64_t>());
  EXPECT_THROW(whole.prepare_batch(order, 3, 0), std::out_of_range);  // 96 pairs make 3 batches
}
