// Bm25Index: exact-term matches first, English stemming, query text that is never syntax,
// empty queries, and a named index directory reused for the same corpus and rebuilt otherwise.
#include "retriever/search/bm25.h"

#include "retriever/model/encode_all.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace gradcache::retriever {
namespace {

namespace fs = std::filesystem;

TextCollection tiny_corpus() {
  TextCollection c;
  c.add("d0", "a small domesticated carnivorous mammal with soft fur");
  c.add("d1", "a large body of salt water covering much of the earth");
  c.add("d2", "the act of running quickly on foot");
  c.add("d3", "an aardvark is a nocturnal burrowing mammal of africa");
  c.add("d4", "a building where books are kept for reading and lending");
  return c;
}

int64_t first(const TopK& top, int64_t q = 0) { return top.indices[q][0].item<int64_t>(); }

TEST(Bm25Test, AnExactTermMatchRanksFirst) {
  const Bm25Index index(tiny_corpus());
  EXPECT_EQ(index.size(), 5u);
  const TopK top = index.search({"aardvark", "salt water", "books for reading"}, 3);
  ASSERT_EQ(top.indices.sizes(), (at::IntArrayRef{3, 3}));
  EXPECT_EQ(first(top, 0), 3);
  EXPECT_EQ(first(top, 1), 1);
  EXPECT_EQ(first(top, 2), 4);
  EXPECT_EQ(top.indices[0][1].item<int64_t>(), -1);  // only one document has the word
  EXPECT_TRUE(std::isinf(top.scores[0][1].item<float>()));
  EXPECT_GT(top.scores[1][0].item<float>(), 0.0f);
}

TEST(Bm25Test, StemmingMatchesOtherFormsOfAWord) {
  const Bm25Index index(tiny_corpus());
  const TopK top = index.search({"runs", "Mammals", "BUILDINGS"}, 2);
  EXPECT_EQ(first(top, 0), 2);  // "running"
  const int64_t mammal = first(top, 1);
  EXPECT_TRUE(mammal == 0 || mammal == 3) << mammal;
  EXPECT_EQ(first(top, 2), 4);  // "building"
}

TEST(Bm25Test, QueryTextIsNeverSyntaxAndEmptyQueriesReturnNothing) {
  const Bm25Index index(tiny_corpus());
  const std::vector<std::string> queries = {
      "\"aardvark", "aardvark aardvark AND NOT water", "NOT aardvark", "(((salt", "+-*~^ \\ aardvark:", "", "   ", "!!!",
      "mammal NEAR/3 fur", "\xff\xfe broken utf8 aardvark"};
  const TopK top = index.search(queries, 5);
  EXPECT_EQ(first(top, 0), 3);
  EXPECT_EQ(first(top, 1), 3);  // OR of its words; aardvark twice
  EXPECT_EQ(first(top, 2), 3);
  EXPECT_EQ(first(top, 3), 1);
  EXPECT_EQ(first(top, 4), 3);
  for (int64_t q : {5, 6, 7}) EXPECT_TRUE(top.indices[q].eq(-1).all().item<bool>()) << queries[q];
  EXPECT_EQ(first(top, 9), 3);
  EXPECT_THROW(index.search({"x"}, 0), std::invalid_argument);
}

// Issue 27: a signal during BM25 indexing or search was swallowed (the ranking ran to the end).
// With the stop flag set, each throws StoppedBySignal and a named index is not left half built.
TEST(Bm25Test, ASignalStopsIndexingAndSearchingAndLeavesNoIndex) {
  const fs::path dir = fs::temp_directory_path() / ("gradcache-bm25-stop-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::atomic<int> stop{SIGTERM};
  Bm25Options options;
  options.index_dir = (dir / "index").string();
  options.stop = &stop;
  EXPECT_THROW(Bm25Index(tiny_corpus(), options), StoppedBySignal);
  EXPECT_TRUE(fs::is_empty(dir)) << "a stopped build left " << fs::directory_iterator(dir)->path();
  stop = 0;
  const Bm25Index index(tiny_corpus(), options);
  stop = SIGINT;
  try {
    index.search({"aardvark"}, 1);
    ADD_FAILURE() << "a search with the stop flag set ran";
  } catch (const StoppedBySignal& e) {
    EXPECT_EQ(e.signal(), SIGINT);
  }
  fs::remove_all(dir);
}

TEST(Bm25Test, TemporaryIndexIsRemoved) {
  std::string path;
  {
    const Bm25Index index(tiny_corpus());
    path = index.path();
    EXPECT_TRUE(fs::exists(path));
  }
  EXPECT_FALSE(fs::exists(path));
}

TEST(Bm25Test, NamedIndexIsReusedForTheSameCorpusAndRebuiltOtherwise) {
  const fs::path dir = fs::temp_directory_path() / ("gradcache-bm25-test-" + std::to_string(getpid()));
  fs::remove_all(dir);
  Bm25Options options;
  options.index_dir = (dir / "index").string();
  {
    const Bm25Index built(tiny_corpus(), options);
    EXPECT_FALSE(built.reused());
  }
  {
    const Bm25Index again(tiny_corpus(), options);
    EXPECT_TRUE(again.reused());
    EXPECT_EQ(first(again.search({"aardvark"}, 1)), 3);
  }
  TextCollection changed = tiny_corpus();
  changed.texts[2] = "an aardvark eats ants";  // same size, other text: another fingerprint
  {
    const Bm25Index rebuilt(changed, options);
    EXPECT_FALSE(rebuilt.reused());
    EXPECT_EQ(first(rebuilt.search({"ants"}, 1)), 2);
  }
  EXPECT_TRUE(fs::exists(options.index_dir));
  for (const auto& entry : fs::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().filename(), "index") << "left behind: " << entry.path();
  }
  // A directory that holds something else is refused, and left as it was.
  const fs::path other = dir / "other";
  fs::create_directories(other);
  std::ofstream(other / "notes.txt") << "mine";
  options.index_dir = other.string();
  try {
    Bm25Index refused(tiny_corpus(), options);
    ADD_FAILURE() << "a foreign directory was used";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--bm25-index " + other.string()), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::exists(other / "notes.txt"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gradcache::retriever
