// The WordNet reverse dictionary task: a tiny synthetic database, its errors, and the real
// WordNet 3.0 when installed.
#include "retriever/data/wordnet.h"
#include "tests/retriever/text_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <string>
#include <tuple>
#include <unordered_set>
#include <vector>

using namespace gradcache::retriever;
using namespace text_test;

// ---- WordNet ----------------------------------------------------------------------------------------

namespace {

const char* const kLicenseHeader =
    "  1 This software and database is being provided to you, the LICENSEE, by  \n"
    "  2 Princeton University under the following license.  \n";

// A tiny WordNet: two nouns with the same words (one passage), a noun whose gloss is only an
// example (skipped), a verb with frames, an adjective with a marker and a satellite with "(ip)".
void write_tiny_wordnet(const TempDir& dir) {
  dir.write("data.noun", std::string(kLicenseHeader) +
                             "00000100 03 n 02 physical_entity 0 thing 0 001 @ 00000200 n 0000 | an entity that has "
                             "physical existence; a tangible object; \"a thing\"; \"another example; with a semicolon\"  \n"
                             "00000200 03 n 02 physical_entity 0 thing 0 000 | something you can touch  \n"
                             "00000300 03 n 01 foo 0 000 | \"only an example\"  \n");
  dir.write("data.verb", std::string(kLicenseHeader) +
                             "00000100 29 v 01 breathe 0 002 * 00000200 v 0000 + 00000100 n 0101 02 + 02 00 + 08 00 | "
                             "draw air into the lungs; \"I can breathe\"  \n");
  dir.write("data.adj", std::string(kLicenseHeader) +
                            "00000100 00 a 01 able(a) 0 000 | having skill:\"able to swim\"  \n"
                            "00000200 00 s 0a abounding 0 galore(ip) 0 001 & 00000100 a 0000 | existing in abundance  \n");
  dir.write("data.adv", kLicenseHeader);
}

}  // namespace

TEST(WordNet, TinySyntheticDirectory) {
  TempDir dir;
  write_tiny_wordnet(dir);
  // w_cnt is hex: "0a" would claim 10 words for a line that has 2, so it must be rejected...
  expect_data_error([&] { load_wordnet({dir.dir().string(), 90, 5}); }, dir.path("data.adj"), 4,
                    "w_cnt says 10 words");
  // ... and with the right count the directory loads.
  dir.write("data.adj", std::string(kLicenseHeader) +
                            "00000100 00 a 01 able(a) 0 000 | having skill:\"able to swim\"  \n"
                            "00000200 00 s 02 abounding 0 galore(ip) 0 001 & 00000100 a 0000 | existing in abundance  \n");

  // Everything in dev, so that queries and judgements can be checked one by one.
  const auto data = load_wordnet({dir.dir().string(), 0, 100});
  EXPECT_TRUE(data.train.empty());
  EXPECT_EQ(data.test_queries.size(), 0u);
  EXPECT_EQ(data.corpus.ids, (Strings{"p0", "p1", "p2", "p3"}));
  EXPECT_EQ(data.corpus.texts, (Strings{"physical entity, thing", "breathe", "able", "abounding, galore"}));
  EXPECT_EQ(data.dev_queries.ids, (Strings{"n00000100", "n00000200", "v00000100", "a00000100", "a00000200"}));
  EXPECT_EQ(data.dev_queries.texts, (Strings{"an entity that has physical existence; a tangible object",
                                             "something you can touch", "draw air into the lungs", "having skill",
                                             "existing in abundance"}));
  // Relevance by passage: both nouns point at the one passage.
  const Qrels expected = {{"n00000100", {{"p0", 1}}}, {"n00000200", {{"p0", 1}}}, {"v00000100", {{"p1", 1}}},
                          {"a00000100", {{"p2", 1}}}, {"a00000200", {{"p3", 1}}}};
  EXPECT_EQ(data.dev_qrels, expected);
  EXPECT_TRUE(data.test_qrels.empty());

  // Everything in train: one positive, the passage, and no negatives.
  const auto train = load_wordnet({dir.dir().string(), 100, 0});
  ASSERT_EQ(train.train.size(), 5u);
  EXPECT_EQ(train.train[1].query, "something you can touch");
  EXPECT_EQ(train.train[1].positives, (Strings{"physical entity, thing"}));
  EXPECT_TRUE(train.train[1].negatives.empty());
  EXPECT_TRUE(train.dev_queries.ids.empty());

  // The default split puts each synset where its bucket says.
  const auto split = load_wordnet({dir.dir().string(), 90, 5});
  EXPECT_EQ(split.train.size() + split.dev_queries.size() + split.test_queries.size(), 5u);
  for (const auto& id : split.dev_queries.ids) {
    EXPECT_GE(wordnet_bucket(id), 90) << id;
    EXPECT_LT(wordnet_bucket(id), 95) << id;
  }
  for (const auto& id : split.test_queries.ids) EXPECT_GE(wordnet_bucket(id), 95) << id;
}

TEST(WordNet, BucketIsFnv1a64Modulo100) {
  // Known FNV-1a 64 values: "" -> 0xcbf29ce484222325, "a" -> 0xaf63dc4c8601ec8c,
  // "foobar" -> 0x85944171f73967e8, so the split cannot drift with the platform.
  EXPECT_EQ(wordnet_bucket(""), static_cast<int>(0xcbf29ce484222325ull % 100));
  EXPECT_EQ(wordnet_bucket("a"), static_cast<int>(0xaf63dc4c8601ec8cull % 100));
  EXPECT_EQ(wordnet_bucket("foobar"), static_cast<int>(0x85944171f73967e8ull % 100));
  EXPECT_EQ(wordnet_bucket("n00001740"), 9);
}

TEST(WordNet, Errors) {
  TempDir dir;
  write_tiny_wordnet(dir);
  fs::remove(dir.path("data.verb"));
  expect_data_error([&] { load_wordnet({dir.dir().string(), 90, 5}); }, dir.path("data.verb"), 0,
                    "install the Debian package wordnet-base");

  write_tiny_wordnet(dir);
  const std::vector<std::pair<std::string, std::string>> bad_lines = {
      {"00000400 03 n 01 word 0 000 no bar before the gloss", "no \" | \""},
      {"0000040 03 n 01 word 0 000 | gloss", "synset_offset '0000040' is not 8 digits"},
      {"00000400 03 v 01 word 0 000 | gloss", "ss_type 'v' does not belong"},
      {"00000400 03 n zz word 0 000 | gloss", "w_cnt 'zz' is not a 2-digit hex number"},
      {"00000400 03 n 03 word 0 000 | gloss", "w_cnt says 3 words"},
      {"00000100 03 n 01 word 0 000 | gloss", "synset offset 00000100 does not increase"},
      {"00000099 03 n 01 word 0 000 | gloss", "synset offset 00000099 does not increase"},
  };
  for (const auto& [line, reason] : bad_lines) {
    SCOPED_TRACE(line);
    dir.write("data.noun", std::string(kLicenseHeader) + "00000100 03 n 01 thing 0 000 | a thing  \n" + line + "\n");
    expect_data_error([&] { load_wordnet({dir.dir().string(), 90, 5}); }, dir.path("data.noun"), 4, reason);
  }
  EXPECT_THROW(load_wordnet({dir.dir().string(), 90, 11}), std::invalid_argument);
  EXPECT_THROW(load_wordnet({dir.dir().string(), -1, 5}), std::invalid_argument);
}

TEST(WordNet, RealWordNet30) {
  const WordNetOptions options;  // /usr/share/wordnet, 90/5/5
  if (!fs::exists(fs::path(options.dir) / "data.noun")) GTEST_SKIP() << "WordNet not installed at " << options.dir;

  const auto data = load_wordnet(options);  // how fast: a benchmark's business, not a test's
  const size_t train = data.train.size(), dev = data.dev_queries.size(), test = data.test_queries.size();
  const size_t total = train + dev + test;
  std::cout << "WordNet: " << total << " synsets (" << train << " train, " << dev << " dev, " << test << " test), "
            << data.corpus.size() << " distinct passages\n";

  // WordNet 3.0 has 117,659 synsets, and every one of them has a definition.
  EXPECT_GT(total, 117000u);
  EXPECT_LT(total, 118500u);
  EXPECT_NEAR(100.0 * train / total, 90.0, 1.0);
  EXPECT_NEAR(100.0 * dev / total, 5.0, 0.5);
  EXPECT_NEAR(100.0 * test / total, 5.0, 0.5);
  EXPECT_GT(data.corpus.size(), 90000u);  // synsets share passages, e.g. the many senses of "break"
  EXPECT_LT(data.corpus.size(), total);

  // Every passage once; every train positive and every judged passage is in the corpus.
  const std::unordered_set<std::string> passages(data.corpus.texts.begin(), data.corpus.texts.end());
  EXPECT_EQ(passages.size(), data.corpus.size());
  for (const auto& example : data.train) {
    ASSERT_FALSE(example.query.empty());
    ASSERT_EQ(example.positives.size(), 1u);
    ASSERT_TRUE(passages.count(example.positives[0])) << example.positives[0];
    ASSERT_TRUE(example.negatives.empty());
  }
  for (const auto* split : {&data.dev_qrels, &data.test_qrels}) {
    for (const auto& [query, judged] : *split) {
      ASSERT_EQ(judged.size(), 1u) << query;
      ASSERT_EQ(judged.begin()->second, 1) << query;
      ASSERT_TRUE(data.corpus.index.count(judged.begin()->first)) << query << " -> " << judged.begin()->first;
    }
  }
  EXPECT_EQ(data.dev_qrels.size(), dev);
  EXPECT_EQ(data.test_qrels.size(), test);
  for (const auto& id : data.dev_queries.ids) ASSERT_TRUE(data.dev_qrels.count(id)) << id;
  for (const auto& id : data.test_queries.ids) ASSERT_TRUE(data.test_qrels.count(id)) << id;

  // Known entries: markers and underscores are gone, examples are cut from definitions.
  EXPECT_TRUE(passages.count("laying waste, ruin, ruining, ruination, wrecking"));
  EXPECT_TRUE(passages.count("ruin, ruination"));  // two noun synsets share this passage
  EXPECT_TRUE(passages.count("abounding, galore"));
  for (const auto& text : data.corpus.texts) {
    ASSERT_EQ(text.find('_'), std::string::npos) << text;
    ASSERT_EQ(text.find("(a)"), std::string::npos) << text;
    ASSERT_EQ(text.find("(p)"), std::string::npos) << text;
    ASSERT_EQ(text.find("(ip)"), std::string::npos) << text;
  }
  const auto entity = std::find_if(data.train.begin(), data.train.end(),
                                   [](const TrainExample& e) { return e.positives[0] == "entity"; });
  ASSERT_NE(entity, data.train.end());  // n00001740 is in bucket 9, i.e. train
  EXPECT_EQ(entity->query,
            "that which is perceived or known or inferred to have its own distinct existence (living or nonliving)");
  std::unordered_set<std::string> queries;
  for (const auto& example : data.train) queries.insert(example.query);
  queries.insert(data.dev_queries.texts.begin(), data.dev_queries.texts.end());
  queries.insert(data.test_queries.texts.begin(), data.test_queries.texts.end());
  EXPECT_TRUE(queries.count("restrict or confine"));  // was: restrict or confine, "I limit you to two visits..."
  EXPECT_TRUE(queries.count("a demand especially in the phrase \"the call of duty\""));  // the phrase defined: kept
  size_t quoted = 0;
  for (const auto& example : data.train) quoted += example.query.find("\"") != std::string::npos;
  EXPECT_LT(quoted, 20u);  // only quotes inside definitions remain, no examples

  // Deterministic: a second load gives the very same task.
  const auto again = load_wordnet(options);
  EXPECT_EQ(again.corpus.ids, data.corpus.ids);
  EXPECT_EQ(again.corpus.texts, data.corpus.texts);
  EXPECT_EQ(again.dev_queries.ids, data.dev_queries.ids);
  EXPECT_EQ(again.dev_queries.texts, data.dev_queries.texts);
  EXPECT_EQ(again.test_queries.ids, data.test_queries.ids);
  EXPECT_EQ(again.dev_qrels, data.dev_qrels);
  EXPECT_EQ(again.test_qrels, data.test_qrels);
  ASSERT_EQ(again.train.size(), data.train.size());
  for (size_t i = 0; i < data.train.size(); ++i) {
    ASSERT_EQ(again.train[i].query, data.train[i].query) << i;
    ASSERT_EQ(again.train[i].positives, data.train[i].positives) << i;
  }
}
