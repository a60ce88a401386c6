// Hard-negative mining: the choice of negatives from ranked lists (rank range, exclusions,
// positive-aware filter, seeded draw), the ids the readers keep for it, and `mine` end to end
// on a small corpus with a freshly initialised run.
#include "retriever/data/text_data.h"
#include "retriever/launch/stop_signal.h"
#include "retriever/search/negative_mining.h"
#include "text_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>
#include <set>

namespace {
using namespace gradcache::retriever;

// A query whose documents 0..n-1 are ranked in order with scores n, n-1, ..., 1.
MiningQuery ranked_query(int64_t n) {
  MiningQuery q;
  for (int64_t d = 0; d < n; ++d) {
    q.ranked.push_back(d);
    q.scores.push_back(static_cast<float>(n - d));
  }
  return q;
}

TEST(Mining, ParseDepth) {
  MiningOptions o;
  parse_depth("3:50", o);
  EXPECT_EQ(o.first_rank, 3);
  EXPECT_EQ(o.last_rank, 50);
  for (const char* bad : {"", "10", "0:10", "10:5", "a:b", "5:10x", ":10", "-1:4"}) {
    EXPECT_THROW(parse_depth(bad, o), std::invalid_argument) << bad;
  }
}

TEST(Mining, TakesOnlyTheRankRangeWithoutExcludedDocuments) {
  MiningOptions o;
  o.first_rank = 3;
  o.last_rank = 6;  // documents 2, 3, 4, 5
  o.negatives = 3;
  auto q = ranked_query(10);
  q.excluded = {3, 0};
  MiningStats stats;
  const auto chosen = choose_negatives({q}, o, stats);
  EXPECT_EQ(chosen[0], (std::vector<int64_t>{2, 4, 5}));  // all that is left, in rank order
  EXPECT_EQ(stats.excluded, 1);  // document 0 is outside the range: not counted
  EXPECT_EQ(stats.short_queries, 0);
  EXPECT_EQ(stats.fewest_candidates, 3);
}

TEST(Mining, PositiveAwareMarginDropsCandidatesScoredNearThePositive) {
  MiningOptions o;
  o.first_rank = 1;
  o.last_rank = 10;
  o.negatives = 10;
  o.margin = 0.5;
  auto q = ranked_query(10);  // scores 10..1
  q.positive_score = 10;      // keep scores < 5: documents 6..9
  MiningStats stats;
  const auto chosen = choose_negatives({q}, o, stats);
  EXPECT_EQ(chosen[0], (std::vector<int64_t>{6, 7, 8, 9}));
  EXPECT_EQ(stats.above_margin, 6);
  EXPECT_EQ(stats.short_queries, 1);
}

TEST(Mining, TheDrawIsSeededWithoutReplacementAndCoversTheRange) {
  MiningOptions o;
  o.first_rank = 1;
  o.last_rank = 50;
  o.negatives = 5;
  std::vector<MiningQuery> queries(200, ranked_query(50));
  MiningStats a_stats, b_stats, c_stats;
  const auto a = choose_negatives(queries, o, a_stats);
  const auto b = choose_negatives(queries, o, b_stats);
  o.seed = 7;
  const auto c = choose_negatives(queries, o, c_stats);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  std::set<int64_t> seen;
  for (const auto& row : a) {
    ASSERT_EQ(row.size(), 5u);
    EXPECT_TRUE(std::is_sorted(row.begin(), row.end()));
    EXPECT_EQ(std::set<int64_t>(row.begin(), row.end()).size(), 5u);  // no document twice
    seen.insert(row.begin(), row.end());
  }
  EXPECT_EQ(seen.size(), 50u);                 // every rank gets drawn by some query
  EXPECT_NE(a[0], a[1]);                       // queries draw independently
}

TEST(Mining, ShortQueriesAreToppedUpAtRandomWithoutExcludedOrRepeatedDocuments) {
  MiningOptions o;
  o.first_rank = 1;
  o.last_rank = 3;
  o.negatives = 5;
  auto q = ranked_query(3);  // BM25 found only 3 documents
  q.excluded = {0, 7};
  o.random_fill_from = 10;
  MiningStats stats;
  const auto chosen = choose_negatives({q}, o, stats)[0];
  ASSERT_EQ(chosen.size(), 5u);
  EXPECT_EQ(chosen[0], 1);  // the ranked candidates first
  EXPECT_EQ(chosen[1], 2);
  const std::set<int64_t> distinct(chosen.begin(), chosen.end());
  EXPECT_EQ(distinct.size(), 5u);
  EXPECT_FALSE(distinct.count(0) || distinct.count(7));
  for (int64_t row : chosen) EXPECT_LT(row, 10);
  EXPECT_EQ(stats.random_filled, 3);
  EXPECT_EQ(stats.short_queries, 0);

  o.random_fill_from = 4;  // rows 0..3: 0 excluded, 1 and 2 ranked: only row 3 is left
  MiningStats few;
  EXPECT_EQ(choose_negatives({q}, o, few)[0], (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(few.random_filled, 1);
  EXPECT_EQ(few.short_queries, 1);
}

TEST(Mining, TopUpOfAHugeCountIsBoundedByTheCorpusAndStopsOnASignal) {
  MiningOptions o;
  o.first_rank = 1;
  o.last_rank = 3;
  o.negatives = 1000000000;  // once 64 x 1e9 draws per query: minutes at 100% CPU
  o.random_fill_from = 10;
  auto q = ranked_query(3);
  MiningStats stats;
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(choose_negatives({q, q}, o, stats)[0].size(), 10u);  // every row, then it gives up
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), 5.0);
  EXPECT_EQ(stats.short_queries, 2);

  std::atomic<int> stop{15};
  o.stop = &stop;
  EXPECT_THROW(choose_negatives({q}, o, stats), StoppedBySignal);
}

TEST(Mining, RefusesNoNegativesAndMismatchedScores) {
  MiningOptions o;
  MiningStats stats;
  o.negatives = 0;
  EXPECT_THROW(choose_negatives({ranked_query(3)}, o, stats), std::invalid_argument);
  o.negatives = 1;
  auto q = ranked_query(3);
  q.scores.pop_back();
  EXPECT_THROW(choose_negatives({q}, o, stats), std::invalid_argument);
}

TEST(Mining, ReadersKeepQueryAndPassageIds) {
  text_test::TempDir dir;
  const auto path = dir.write(
      "train.jsonl",
      R"({"query_id": 17, "query": "q one", "positive_passages": [{"docid": "d9", "text": "p"}, "plain"]})"
      "\n"
      R"({"query": "q two", "positives": ["x"]})"
      "\n");
  const auto examples = read_train_examples(path);
  ASSERT_EQ(examples.size(), 2u);
  EXPECT_EQ(examples[0].query_id, "17");
  EXPECT_EQ(examples[0].positive_ids, (std::vector<std::string>{"d9", ""}));
  EXPECT_EQ(examples[1].query_id, "");
  EXPECT_EQ(examples[1].positive_ids, (std::vector<std::string>{""}));
  const auto tsv = read_train_examples(dir.write("t.tsv", "q\tpos\tneg\n"));
  EXPECT_EQ(tsv[0].positive_ids.size(), tsv[0].positives.size());
}

}  // namespace
