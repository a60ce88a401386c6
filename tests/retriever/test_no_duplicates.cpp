// --no-duplicates (retriever/train/no_duplicates.h): the rearranged order, and a run with it
// that moves repeated passages and resumes bit-identically.
#include "retriever/train/no_duplicates.h"
#include "tests/retriever/train_test_util.h"

#include <gradcache/gradcache.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <random>
#include <set>
#include <sstream>

using namespace train_test;

TEST(NoDuplicates, WaitingExamplesComeFirstAndTheBatchesHoldNoTextTwice) {
  // Texts by example: 0 {1}, 1 {1}, 2 {2}, 3 {3}, 4 {1}, 5 {5}, 6 {6}, 7 {3}; batches of 3.
  const std::vector<std::vector<int64_t>> texts = {{1}, {1}, {2}, {3}, {1}, {5}, {6}, {3}};
  auto texts_of = [&](int64_t e) { return texts[static_cast<size_t>(e)]; };
  const auto result = gr::without_duplicate_texts({0, 1, 2, 3, 4, 5, 6, 7}, 3, texts_of);
  // [0 2 3] (1 waits), [1 5 6] (1 first, 4 waits), then 4 and 7 are left: no full batch.
  EXPECT_EQ(result.order, (std::vector<int64_t>{0, 2, 3, 1, 5, 6, 4, 7}));
  EXPECT_EQ(result.moved, 2);
  EXPECT_EQ(result.batches_with_duplicates, 0);
  // Three batches of 2 from texts {7,7,7,8,9,10}: the last can only pair two 7s.
  const std::vector<std::vector<int64_t>> sevens = {{7}, {7}, {7}, {8}, {9}, {10}};
  const auto tail = gr::without_duplicate_texts({0, 1, 2, 3, 4, 5}, 2, [&](int64_t e) { return sevens[e]; });
  EXPECT_EQ(tail.order, (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(tail.batches_with_duplicates, 0);
  const auto stuck = gr::without_duplicate_texts({0, 1, 2, 3}, 2, [&](int64_t e) { return sevens[e]; });
  EXPECT_EQ(stuck.order, (std::vector<int64_t>{0, 3, 1, 2}));
  EXPECT_EQ(stuck.batches_with_duplicates, 1);  // [1 2]: two 7s, all that was left

  // Random examples of 3 texts over 60: a permutation, and every batch before the counted tail is clean.
  std::mt19937_64 rng(5);
  std::vector<std::vector<int64_t>> random_texts(500);
  for (auto& t : random_texts) t = {static_cast<int64_t>(rng() % 60), static_cast<int64_t>(rng() % 60), static_cast<int64_t>(rng() % 60)};
  std::vector<int64_t> order(500);
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>((i * 37) % 500);
  const auto random = gr::without_duplicate_texts(order, 8, [&](int64_t e) { return random_texts[e]; });
  EXPECT_EQ(std::multiset<int64_t>(random.order.begin(), random.order.end()), std::multiset<int64_t>(order.begin(), order.end()));
  EXPECT_GT(random.moved, 0);
  const size_t clean = (order.size() / 8 - static_cast<size_t>(random.batches_with_duplicates)) * 8;
  for (size_t b = 0; b < clean; b += 8) {
    std::set<int64_t> seen;
    for (size_t i = b; i < b + 8; ++i) {
      const std::set<int64_t> own(random_texts[random.order[i]].begin(), random_texts[random.order[i]].end());
      for (const int64_t text : own) EXPECT_TRUE(seen.insert(text).second) << "batch " << b / 8 << " holds text " << text << " twice";
    }
  }
}

TEST(Trainer, NoDuplicatesMovesRepeatedPassagesAndResumesBitIdentically) {
  // 96 queries over 20 passages: a batch of 32 drawn at random holds some passage twice.
  TempDir dir;
  write_task(dir);
  std::ostringstream train;
  for (int i = 0; i < 96; ++i) train << "which animal number " << i << "\tthe animal of passage " << i % 20 << "\n";
  write(dir / "train.tsv", train.str());
  auto config = tiny_config(dir);
  config.training.no_duplicates = true;
  config.eval.enabled = false;
  config.output.dir = dir / "straight";
  std::ostringstream log;
  auto options = quiet();
  options.log = &log;
  gr::train(config, options);
  EXPECT_NE(log.str().find("epoch 1: --no-duplicates put "), std::string::npos) << log.str();
  EXPECT_EQ(log.str().find("--no-duplicates put 0 examples"), std::string::npos) << log.str();

  config.output.dir = dir / "interrupted";
  options = quiet();
  options.stop_after_steps = 4;
  EXPECT_TRUE(gr::train(config, options).interrupted);
  options.stop_after_steps = 0;
  options.resume = true;
  EXPECT_EQ(gr::train(config, options).progress.step, 6);
  auto a = weights(dir / "straight/checkpoint.pt"), b = weights(dir / "interrupted/checkpoint.pt");
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "tensor " << i;
  // Without the flag the batches differ, and so does the model.
  config.training.no_duplicates = false;
  config.output.dir = dir / "plain";
  gr::train(config, quiet());
  auto c = weights(dir / "plain/checkpoint.pt");
  bool differ = false;
  for (size_t i = 0; i < a.size(); ++i) differ = differ || !torch::equal(a[i], c[i]);
  EXPECT_TRUE(differ);
}
