// Training examples by number (retriever/data/training_examples.h): an indexed file reads back
// exactly what read_train_examples reads, in subsets, with the reader's errors; a file changed
// under a run is refused, one replaced by a rename is not read.
#include "retriever/data/training_examples.h"
#include "tests/retriever/text_test_util.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

using namespace text_test;

namespace {

void expect_same(const TrainExample& a, const TrainExample& b, size_t i) {
  EXPECT_EQ(a.query, b.query) << "example " << i;
  EXPECT_EQ(a.positives, b.positives) << "example " << i;
  EXPECT_EQ(a.negatives, b.negatives) << "example " << i;
  EXPECT_EQ(a.query_id, b.query_id) << "example " << i;
  EXPECT_EQ(a.positive_ids, b.positive_ids) << "example " << i;
}

}  // namespace

TEST(TrainingExamples, AnIndexedFileReadsBackWhatTheReaderReads) {
  TempDir dir;
  const std::string long_text(20000, 'x');  // longer than one read of the indexed file
  const std::string jsonl =
      "\xEF\xBB\xBF{\"query\": \"first\", \"positives\": [\"p1\"], \"negatives\": [\"n1\", \"n2\"]}\r\n"
      "\n"
      "{\"query\": \"second\", \"qid\": 7, \"positive_passages\": [{\"docid\": \"d9\", \"title\": \"T\", \"text\": \"body\"}]}\n"
      "not json\n"
      "{\"query\": \"" + long_text + "\", \"positives\": [\"p3\"], \"negatives\": [\"n3\"]}\n"
      "{\"query\": \"last\", \"positives\": [\"p4\"]}";  // no line end
  const std::string tsv = "\xEF\xBB\xBFq1\tp1\tn1\r\nonly a query\nq2\tp2\n\nq3\t" + long_text + "\n";
  for (const auto& [name, text] : {std::pair<std::string, std::string>{"pairs.jsonl", jsonl}, {"pairs.tsv", tsv}}) {
    const std::string path = dir.write(name, text);
    ReadStats read_stats, index_stats;
    const auto read = read_train_examples(path, OnBadLine::Skip, &read_stats);
    const auto indexed = index_train_file(path, OnBadLine::Skip, &index_stats);
    ASSERT_EQ(indexed->size(), read.size()) << name;
    EXPECT_EQ(index_stats.records, read_stats.records);
    EXPECT_EQ(index_stats.skipped, 1u) << name;
    EXPECT_EQ(index_stats.skipped_examples, read_stats.skipped_examples);
    for (size_t i = 0; i < read.size(); ++i) expect_same(indexed->at(i), read[i], i);
    // Read from several threads at once (the prefetch thread and the main one do).
    std::vector<std::thread> readers;
    for (int t = 0; t < 4; ++t)
      readers.emplace_back([&] {
        for (int k = 0; k < 50; ++k) EXPECT_EQ(indexed->at(static_cast<size_t>(k) % read.size()).query, read[static_cast<size_t>(k) % read.size()].query);
      });
    for (auto& r : readers) r.join();
    const auto sub = indexed->subset({2, 0});
    ASSERT_EQ(sub->size(), 2u);
    expect_same(sub->at(0), read[2], 2);
    expect_same(sub->at(1), read[0], 0);
    EXPECT_THROW(indexed->subset({read.size()}), std::out_of_range);
    EXPECT_EQ(indexed->source(), "indexed in " + path + " (read per batch)");
  }
  // The same rules as the reader: an error names the line.
  const std::string bad = dir.write("bad.tsv", "q\tp\nno tab here\n");
  expect_data_error([&] { index_train_file(bad); }, bad, 2, "expected query<TAB>positive");
  const std::string empty = dir.write("empty.jsonl", "\n\n");
  expect_data_error([&] { index_train_file(empty); }, empty, 0, "no training examples");
  expect_data_error([&] { index_train_file(dir.path("missing.tsv")); }, dir.path("missing.tsv"), 0, "cannot open");
}

TEST(TrainingExamples, FirstWithoutNegativesIsFoundInTheFileAndInMemory) {
  TempDir dir;
  const std::string path = dir.write("pairs.tsv", "q1\tp1\tn1\nq2\tp2\tn2\nq3\tp3\nq4\tp4\n");
  const auto indexed = index_train_file(path);
  EXPECT_EQ(indexed->first_without_negatives(), std::optional<size_t>(2));
  EXPECT_EQ(indexed->subset({0, 1})->first_without_negatives(), std::nullopt);
  EXPECT_EQ(indexed->subset({1, 3})->first_without_negatives(), std::optional<size_t>(1));
  const auto in_memory = examples_in_memory(read_train_examples(path));
  EXPECT_EQ(in_memory->first_without_negatives(), std::optional<size_t>(2));
  EXPECT_EQ(in_memory->source(), "in memory");
  EXPECT_EQ(all_examples(*indexed).size(), 4u);
  expect_same(in_memory->subset({3})->at(0), indexed->at(3), 3);
}

TEST(TrainingExamples, AFileWrittenToAfterIndexingIsRefusedOneReplacedIsNotRead) {
  TempDir dir;
  const std::string path = dir.write("pairs.tsv", "q1\tp1\nq2\tp2\n");
  const auto indexed = index_train_file(path);
  EXPECT_EQ(indexed->at(1).query, "q2");
  // Replaced by a rename (as an editor or a download does): the index still reads what it indexed.
  const std::string other = dir.write("other.tsv", "different\tfile\nwith\tother lines\n");
  std::filesystem::rename(other, path);
  EXPECT_EQ(indexed->at(1).query, "q2");
  // Written to in place: refused, naming the file.
  const auto again = index_train_file(path);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a later modification time, even on coarse clocks
  dir.write("pairs.tsv", "changed\tlines\nand\tmore of them\n");
  expect_data_error([&] { again->at(0); }, path, 0, "the file changed while this run was training on it");
}

TEST(TrainingExamples, AnIndexLargerThanWhatIsHeldReadsBackFromItsScratchFile) {
  // Beyond 2^16 records the offsets go to an unlinked scratch file (the process does not grow with
  // the data): every record reads back, on both sides of the boundary and in a subset across it.
  TempDir dir;
  constexpr size_t kRecords = (size_t{1} << 16) + 3000;
  std::string tsv;
  for (size_t i = 0; i < kRecords; ++i) tsv += "q" + std::to_string(i) + "\tp" + std::to_string(i) + "\n";
  const auto indexed = index_train_file(dir.write("many.tsv", tsv));
  ASSERT_EQ(indexed->size(), kRecords);
  for (const size_t i : {size_t{0}, (size_t{1} << 16) - 1, size_t{1} << 16, (size_t{1} << 16) + 1, kRecords - 1}) {
    EXPECT_EQ(indexed->at(i).query, "q" + std::to_string(i));
    EXPECT_EQ(indexed->at(i).positives, (Strings{"p" + std::to_string(i)}));
  }
  const auto subset = indexed->subset({kRecords - 1, 5, size_t{1} << 16});
  EXPECT_EQ(subset->at(0).query, "q" + std::to_string(kRecords - 1));
  EXPECT_EQ(subset->at(1).query, "q5");
  EXPECT_EQ(subset->at(2).query, "q" + std::to_string(size_t{1} << 16));
  EXPECT_THROW(indexed->at(kRecords), std::out_of_range);
  EXPECT_THROW(indexed->subset({kRecords}), std::out_of_range);
}
