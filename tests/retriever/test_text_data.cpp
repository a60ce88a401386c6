// Readers of retrieval data files (training pairs, collections, qrels) and the WordNet reverse
// dictionary task: formats, every kind of bad line with its PATH:LINE, and the real WordNet 3.0.
#include "retriever/text_data.h"
#include "retriever/wordnet.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <unordered_set>
#include <string>
#include <tuple>
#include <vector>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace gradcache::retriever;

namespace {

// A fresh directory for one test's input files, removed afterwards.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    std::random_device random;
    path_ = fs::temp_directory_path() / ("gradcache_text_data_" + std::to_string(::getpid()) + "_" +
                                         std::to_string(counter++) + "_" + std::to_string(random()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // Writes `contents` byte for byte to `name` in the directory; returns its path.
  std::string write(const std::string& name, const std::string& contents) const {
    const fs::path file = path_ / name;
    std::ofstream out(file, std::ios::binary);
    out << contents;
    EXPECT_TRUE(out.good()) << "cannot write " << file;
    return file.string();
  }
  std::string path(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& dir() const { return path_; }

 private:
  fs::path path_;
};

// Runs `fn`, which must throw a DataError about `path` at `line` whose message contains `part`.
void expect_data_error(const std::function<void()>& fn, const std::string& path, size_t line,
                       const std::string& part) {
  try {
    fn();
    ADD_FAILURE() << "expected a DataError at " << path << ":" << line << " mentioning '" << part << "'";
  } catch (const DataError& e) {
    const std::string message = e.what();
    EXPECT_EQ(e.path(), path) << message;
    EXPECT_EQ(e.line(), line) << message;
    const std::string prefix = line == 0 ? path + ": " : path + ":" + std::to_string(line) + ": ";
    EXPECT_EQ(message.rfind(prefix, 0), 0u) << "'" << message << "' should start with '" << prefix << "'";
    EXPECT_NE(message.find(part), std::string::npos) << "'" << message << "' should mention '" << part << "'";
  }
}

using Strings = std::vector<std::string>;

}  // namespace

// ---- find_invalid_utf8 ---------------------------------------------------------------------------

TEST(Utf8, AcceptsValidText) {
  EXPECT_EQ(find_invalid_utf8(""), std::nullopt);
  EXPECT_EQ(find_invalid_utf8("plain ASCII\t~"), std::nullopt);
  EXPECT_EQ(find_invalid_utf8("caf\xC3\xA9"), std::nullopt);                 // é, 2 bytes
  EXPECT_EQ(find_invalid_utf8("\xE2\x82\xAC 5"), std::nullopt);              // €, 3 bytes
  EXPECT_EQ(find_invalid_utf8("\xF0\x9F\x98\x80"), std::nullopt);            // U+1F600, 4 bytes
  EXPECT_EQ(find_invalid_utf8("\xED\x9F\xBF\xEE\x80\x80"), std::nullopt);    // U+D7FF, U+E000 around the surrogates
  EXPECT_EQ(find_invalid_utf8("\xF4\x8F\xBF\xBF"), std::nullopt);            // U+10FFFF, the last code point
  EXPECT_EQ(find_invalid_utf8("\xC2\x80\xE0\xA0\x80\xF0\x90\x80\x80"), std::nullopt);  // smallest non-overlongs
}

TEST(Utf8, ReportsTheOffsetOfTheFirstBadSequence) {
  EXPECT_EQ(find_invalid_utf8("\xC3\x28"), 0u);             // bad continuation byte
  EXPECT_EQ(find_invalid_utf8("ab\xC0\xAF"), 2u);           // overlong '/'
  EXPECT_EQ(find_invalid_utf8("\xC1\xBF"), 0u);             // overlong, C1 lead
  EXPECT_EQ(find_invalid_utf8("x\xE0\x80\xAF"), 1u);        // overlong, 3 bytes
  EXPECT_EQ(find_invalid_utf8("\xF0\x80\x80\xAF"), 0u);     // overlong, 4 bytes
  EXPECT_EQ(find_invalid_utf8("\xED\xA0\x80"), 0u);         // surrogate U+D800
  EXPECT_EQ(find_invalid_utf8("ok \xED\xBF\xBF"), 3u);      // surrogate U+DFFF
  EXPECT_EQ(find_invalid_utf8("\xF4\x90\x80\x80"), 0u);     // U+110000
  EXPECT_EQ(find_invalid_utf8("\xF5\x80\x80\x80"), 0u);     // lead byte beyond the range
  EXPECT_EQ(find_invalid_utf8("caf\xC3"), 3u);              // truncated at the end
  EXPECT_EQ(find_invalid_utf8("x\xE2\x82"), 1u);            // truncated 3-byte sequence
  EXPECT_EQ(find_invalid_utf8("x\xE2\x82y"), 1u);           // interrupted 3-byte sequence
  EXPECT_EQ(find_invalid_utf8("\xF0\x9F\x98"), 0u);         // truncated 4-byte sequence
  EXPECT_EQ(find_invalid_utf8("a\x80"), 1u);                // continuation byte without a lead
  EXPECT_EQ(find_invalid_utf8("\xC3\xA9\xFF"), 2u);         // after a valid one
}

// ---- small pieces ---------------------------------------------------------------------------------

TEST(TextData, ParseOnBadLine) {
  EXPECT_EQ(parse_on_bad_line("error"), OnBadLine::Error);
  EXPECT_EQ(parse_on_bad_line("skip"), OnBadLine::Skip);
  try {
    parse_on_bad_line("ignore");
    ADD_FAILURE() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("ignore"), std::string::npos) << message;
    EXPECT_NE(message.find("'error'"), std::string::npos) << message;
    EXPECT_NE(message.find("'skip'"), std::string::npos) << message;
  }
}

TEST(TextData, DataErrorMessage) {
  const DataError at_line("data/train.tsv", 7, "something is wrong");
  EXPECT_STREQ(at_line.what(), "data/train.tsv:7: something is wrong");
  EXPECT_EQ(at_line.path(), "data/train.tsv");
  EXPECT_EQ(at_line.line(), 7u);
  const DataError whole_file("data/train.tsv", 0, "cannot open");
  EXPECT_STREQ(whole_file.what(), "data/train.tsv: cannot open");
}

TEST(TextData, TextCollectionRejectsDuplicateIds) {
  TextCollection collection;
  collection.add("a", "first");
  collection.add("b", "second");
  EXPECT_THROW(collection.add("a", "again"), std::invalid_argument);
  EXPECT_EQ(collection.size(), 2u);
  EXPECT_EQ(collection.index.at("b"), 1u);
  EXPECT_EQ(collection.texts[0], "first");
}

// ---- training examples ----------------------------------------------------------------------------

TEST(TrainExamples, JsonlWithStringLists) {
  TempDir dir;
  const auto path = dir.write("train.jsonl",
                              "{\"query\": \"what is a cat\", \"positives\": [\"a small feline\", \"a pet\"], "
                              "\"negatives\": [\"a dog\"]}\n"
                              "\n"
                              "   \n"
                              "{\"query\": \"  caf\xC3\xA9 \", \"positives\": [\" coffee house\"], \"extra\": 1}\n");
  ReadStats stats;
  const auto examples = read_train_examples(path, OnBadLine::Error, &stats);
  ASSERT_EQ(examples.size(), 2u);
  EXPECT_EQ(examples[0].query, "what is a cat");
  EXPECT_EQ(examples[0].positives, (Strings{"a small feline", "a pet"}));
  EXPECT_EQ(examples[0].negatives, (Strings{"a dog"}));
  EXPECT_EQ(examples[1].query, "caf\xC3\xA9");  // trimmed, multi-byte text kept as is
  EXPECT_EQ(examples[1].positives, (Strings{"coffee house"}));
  EXPECT_TRUE(examples[1].negatives.empty());
  EXPECT_EQ(stats.lines, 4u);
  EXPECT_EQ(stats.records, 2u);
  EXPECT_EQ(stats.skipped, 0u);
}

TEST(TrainExamples, JsonlWithObjectListsAndTitles) {
  TempDir dir;
  const auto path = dir.write(
      "train.jsonl",
      "{\"query\": \"q\", \"positives\": [{\"title\": \"Cats\", \"text\": \"small felines\"}, "
      "{\"text\": \"no title\"}, {\"title\": \"\", \"text\": \"empty title\"}, {\"title\": null, \"text\": \"null title\"}],"
      " \"negatives\": [{\"title\": \"Dogs\", \"text\": \"canines\"}, \"plain string\"]}\n");
  const auto examples = read_train_examples(path);
  ASSERT_EQ(examples.size(), 1u);
  EXPECT_EQ(examples[0].positives, (Strings{"Cats small felines", "no title", "empty title", "null title"}));
  EXPECT_EQ(examples[0].negatives, (Strings{"Dogs canines", "plain string"}));
}

TEST(TrainExamples, TevatronKeysAndJsonExtension) {
  TempDir dir;
  const auto path = dir.write(
      "train.JSON",
      "{\"query_id\": \"17\", \"query\": \"who wrote hamlet\", "
      "\"positive_passages\": [{\"docid\": \"d1\", \"title\": \"Hamlet\", \"text\": \"written by Shakespeare\"}], "
      "\"negative_passages\": [{\"docid\": \"d2\", \"title\": \"Macbeth\", \"text\": \"a tragedy\"}, "
      "{\"docid\": \"d3\", \"title\": \"\", \"text\": \"unrelated\"}]}\n");
  const auto examples = read_train_examples(path);
  ASSERT_EQ(examples.size(), 1u);
  EXPECT_EQ(examples[0].query, "who wrote hamlet");
  EXPECT_EQ(examples[0].positives, (Strings{"Hamlet written by Shakespeare"}));
  EXPECT_EQ(examples[0].negatives, (Strings{"Macbeth a tragedy", "unrelated"}));
}

TEST(TrainExamples, TsvWithNegativesBomAndCrlf) {
  TempDir dir;
  const auto path = dir.write("train.tsv",
                              "\xEF\xBB\xBFq one\tpos one\tneg a\tneg b\r\n"
                              "\r\n"
                              "q two \t pos two\r\n");
  ReadStats stats;
  const auto examples = read_train_examples(path, OnBadLine::Error, &stats);
  ASSERT_EQ(examples.size(), 2u);
  EXPECT_EQ(examples[0].query, "q one");  // the byte order mark is not part of the query
  EXPECT_EQ(examples[0].positives, (Strings{"pos one"}));
  EXPECT_EQ(examples[0].negatives, (Strings{"neg a", "neg b"}));
  EXPECT_EQ(examples[1].query, "q two");
  EXPECT_EQ(examples[1].positives, (Strings{"pos two"}));
  EXPECT_TRUE(examples[1].negatives.empty());
  EXPECT_EQ(stats.lines, 3u);
  EXPECT_EQ(stats.records, 2u);
  // The .txt extension reads the same way.
  EXPECT_EQ(read_train_examples(dir.write("train.txt", "q\tp\n")).at(0).positives, (Strings{"p"}));
}

namespace {

struct BadCase {
  std::string line;    // the bad line, without its newline
  std::string reason;  // a part of the expected message
};

// Checks each bad line twice: with Error it throws at its line (3, after a good line and a blank
// one); with Skip, all of them in one file between good lines are counted and skipped.
void check_bad_train_lines(const std::string& extension, const std::string& good, const std::vector<BadCase>& cases) {
  TempDir dir;
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i) + ": " + cases[i].line);
    const auto path = dir.write("case" + std::to_string(i) + extension, good + "\n\n" + cases[i].line + "\n" + good + "\n");
    expect_data_error([&] { read_train_examples(path); }, path, 3, cases[i].reason);
  }
  std::string all = good + "\n";
  for (const auto& c : cases) all += c.line + "\n" + good + "\n";
  const auto path = dir.write("all" + extension, all);
  ReadStats stats;
  const auto examples = read_train_examples(path, OnBadLine::Skip, &stats);
  EXPECT_EQ(examples.size(), cases.size() + 1);
  EXPECT_EQ(stats.records, cases.size() + 1);
  EXPECT_EQ(stats.skipped, cases.size());
  EXPECT_EQ(stats.lines, 2 * cases.size() + 1);
  ASSERT_EQ(stats.skipped_examples.size(), std::min<size_t>(cases.size(), ReadStats::kMaxSkippedExamples));
  for (size_t i = 0; i < stats.skipped_examples.size(); ++i) {
    const std::string prefix = path + ":" + std::to_string(2 * i + 2) + ": ";
    EXPECT_EQ(stats.skipped_examples[i].rfind(prefix, 0), 0u) << stats.skipped_examples[i];
    EXPECT_NE(stats.skipped_examples[i].find(cases[i].reason), std::string::npos) << stats.skipped_examples[i];
  }
}

}  // namespace

TEST(TrainExamples, JsonlBadLines) {
  check_bad_train_lines(
      ".jsonl", R"({"query": "q", "positives": ["p"]})",
      {
          {R"({"query": "q", "positives": ["p"])", "malformed JSON"},
          {R"(["q", "p"])", "expected one JSON object per line"},
          {R"({"positives": ["p"]})", "missing \"query\""},
          {R"({"query": 5, "positives": ["p"]})", "\"query\" must be a string, got number"},
          {R"({"query": "  \t ", "positives": ["p"]})", "\"query\" is empty"},
          {R"({"query": "q"})", "missing \"positives\""},
          {R"({"query": "q", "positives": []})", "no positives"},
          {R"({"query": "q", "positives": "p"})", "\"positives\" must be a list"},
          {R"({"query": "q", "positives": [3]})", "\"positives\"[0] must be a string or an object"},
          {R"({"query": "q", "positives": [{"title": "t"}]})", "\"positives\"[0] has no \"text\""},
          {R"({"query": "q", "positives": ["p", " "]})", "\"positives\"[1] is empty"},
          {R"({"query": "q", "positives": [{"text": "p", "title": 1}]})", "\"positives\"[0].title must be a string"},
          {R"({"query": "q", "positive_passages": [{"docid": "1", "text": ""}]})",
           "\"positive_passages\"[0].text is empty"},
          {R"({"query": "q", "positives": ["p"], "negatives": ["n", ""]})", "\"negatives\"[1] is empty"},
          {R"({"query": "q", "positives": ["p"], "negatives": {}})", "\"negatives\" must be a list"},
          {R"({"query": "q", "positives": ["p"], "positive_passages": ["p"]})", "has both"},
          {"{\"query\": \"q\xC3\x28\", \"positives\": [\"p\"]}", "invalid UTF-8 at byte 13"},
      });
}

TEST(TrainExamples, TsvBadLines) {
  check_bad_train_lines(".tsv", "q\tp",
                        {
                            {"only a query", "got 1 field"},
                            {" \tp", "the query (field 1) is empty"},
                            {"q\t ", "the positive (field 2) is empty"},
                            {"q\tp\tn\t", "a negative (field 4) is empty"},
                            {"q\xED\xA0\x80\tp", "invalid UTF-8 at byte 2"},
                            {"q\tp\xC0\xAF", "invalid UTF-8 at byte 4"},
                            {"q\tp\xE2\x82", "invalid UTF-8"},
                        });
}

TEST(TrainExamples, MissingFileAndDirectory) {
  TempDir dir;
  const auto missing = dir.path("absent.jsonl");
  expect_data_error([&] { read_train_examples(missing); }, missing, 0, "cannot open: No such file or directory");
  const auto folder = dir.path("folder.tsv");
  fs::create_directory(folder);
  expect_data_error([&] { read_train_examples(folder); }, folder, 0, "cannot open");
}

TEST(TrainExamples, UnknownExtension) {
  TempDir dir;
  const auto csv = dir.write("train.csv", "q,p\n");
  expect_data_error([&] { read_train_examples(csv); }, csv, 0, "unknown format '.csv'");
  expect_data_error([&] { read_train_examples(csv); }, csv, 0, "use .jsonl");
  const auto bare = dir.write("train", "q\tp\n");
  expect_data_error([&] { read_train_examples(bare); }, bare, 0, "unknown format (no extension)");
  expect_data_error([&] { read_collection(csv); }, csv, 0, "unknown format");
}

TEST(TrainExamples, EmptyFileOrNothingUsable) {
  TempDir dir;
  const auto empty = dir.write("empty.jsonl", "");
  expect_data_error([&] { read_train_examples(empty); }, empty, 0, "no training examples");
  const auto blank = dir.write("blank.tsv", "\n  \n\t\n");
  expect_data_error([&] { read_train_examples(blank, OnBadLine::Skip); }, blank, 0, "no training examples");
  // All lines skipped: the message says so and shows the first reason.
  const auto bad = dir.write("bad.tsv", "no tab here\nnor here\n");
  expect_data_error([&] { read_train_examples(bad, OnBadLine::Skip); }, bad, 0, "all 2 non-blank lines were skipped");
  expect_data_error([&] { read_train_examples(bad, OnBadLine::Skip); }, bad, 0, bad + ":1: expected query<TAB>positive");
}

TEST(TrainExamples, StatsAreResetAndSkippedExamplesCapped) {
  TempDir dir;
  std::string text = "q\tp\n";
  for (int i = 0; i < 8; ++i) text += "bad line " + std::to_string(i) + "\n";
  const auto path = dir.write("train.tsv", text);
  ReadStats stats;
  stats.skipped = 100;  // left over from another file
  stats.skipped_examples.assign(3, "stale");
  read_train_examples(path, OnBadLine::Skip, &stats);
  EXPECT_EQ(stats.lines, 9u);
  EXPECT_EQ(stats.records, 1u);
  EXPECT_EQ(stats.skipped, 8u);
  ASSERT_EQ(stats.skipped_examples.size(), 5u);
  EXPECT_EQ(stats.skipped_examples.front().rfind(path + ":2: ", 0), 0u) << stats.skipped_examples.front();
  EXPECT_EQ(stats.skipped_examples.back().rfind(path + ":6: ", 0), 0u) << stats.skipped_examples.back();
}

// ---- collections ------------------------------------------------------------------------------------

TEST(Collections, TsvWithOptionalTitle) {
  TempDir dir;
  const auto path = dir.write("corpus.tsv", "d1\tfirst text\nd2\t second text \tA Title\n\nd3\tthird\t\n");
  ReadStats stats;
  const auto corpus = read_collection(path, OnBadLine::Error, &stats);
  ASSERT_EQ(corpus.size(), 3u);
  EXPECT_EQ(corpus.ids, (Strings{"d1", "d2", "d3"}));
  EXPECT_EQ(corpus.texts, (Strings{"first text", "A Title second text", "third"}));
  EXPECT_EQ(corpus.index.at("d1"), 0u);
  EXPECT_EQ(corpus.index.at("d3"), 2u);
  EXPECT_EQ(stats.lines, 4u);
  EXPECT_EQ(stats.records, 3u);
}

TEST(Collections, JsonlWithIdKeysAndNumericIds) {
  TempDir dir;
  const auto path = dir.write("corpus.jsonl",
                              "{\"id\": 7, \"text\": \"seven\"}\n"
                              "{\"_id\": \"doc-8\", \"title\": \"Eight\", \"text\": \"is a number\"}\n"
                              "{\"docid\": \"9\", \"title\": \"\", \"text\": \"nine\"}\n"
                              "{\"qid\": 10, \"text\": \"ten\"}\n"
                              "{\"query_id\": \"q11\", \"query\": \"eleven?\"}\n");
  const auto collection = read_collection(path);
  EXPECT_EQ(collection.ids, (Strings{"7", "doc-8", "9", "10", "q11"}));
  EXPECT_EQ(collection.texts, (Strings{"seven", "Eight is a number", "nine", "ten", "eleven?"}));
  EXPECT_EQ(collection.index.at("10"), 3u);
}

TEST(Collections, BadLines) {
  TempDir dir;
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {".tsv", "lonely", "got 1 field (no tab in the line)"},
      {".tsv", "a\tb\tc\td", "got 4 fields"},
      {".tsv", " \ttext", "the id (field 1) is empty"},
      {".tsv", "d9\t  ", "the text (field 2) is empty"},
      {".tsv", "d1\tagain", "duplicate id 'd1' (first on line 1)"},
      {".tsv", "d9\tbad \xC3\x28", "invalid UTF-8 at byte 8"},
      {".jsonl", R"({"text": "no id"})", "missing an id"},
      {".jsonl", R"({"id": 1.5, "text": "x"})", "\"id\" must be a string or an integer, got number"},
      {".jsonl", R"({"id": "", "text": "x"})", "\"id\" is empty"},
      {".jsonl", R"({"id": "d9"})", "missing \"text\""},
      {".jsonl", R"({"id": "d9", "text": ""})", "\"text\" is empty"},
      {".jsonl", R"({"id": "d9", "text": "x", "title": []})", "\"title\" must be a string"},
      {".jsonl", R"({"_id": "d1", "text": "again"})", "duplicate id 'd1' (first on line 1)"},
      {".jsonl", "{\"id\": \"d9\", \"text\": ", "malformed JSON"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& [extension, line, reason] = cases[i];
    SCOPED_TRACE(line);
    const std::string good = extension == ".tsv" ? "d1\tfirst" : R"({"id": "d1", "text": "first"})";
    const auto path = dir.write("c" + std::to_string(i) + extension, good + "\n" + line + "\n");
    expect_data_error([&] { read_collection(path); }, path, 2, reason);
    ReadStats stats;
    const auto collection = read_collection(path, OnBadLine::Skip, &stats);
    EXPECT_EQ(collection.ids, (Strings{"d1"}));
    EXPECT_EQ(stats.skipped, 1u);
    EXPECT_EQ(stats.records, 1u);
  }
  const auto empty = dir.write("empty.tsv", "");
  expect_data_error([&] { read_collection(empty); }, empty, 0, "no records");
  const auto missing = dir.path("missing.jsonl");
  expect_data_error([&] { read_collection(missing); }, missing, 0, "cannot open");
}

// ---- qrels ------------------------------------------------------------------------------------------

TEST(Qrels, Trec) {
  TempDir dir;
  const auto path = dir.write("qrels.txt", "q1 0 d1 1\nq1 0 d2 0\n\nq2\tQ0\td1  2\nq3 0 d7 -1\n");
  ReadStats stats;
  const auto qrels = read_qrels(path, OnBadLine::Error, &stats);
  ASSERT_EQ(qrels.size(), 3u);
  EXPECT_EQ(qrels.at("q1"), (std::map<std::string, int>{{"d1", 1}, {"d2", 0}}));
  EXPECT_EQ(qrels.at("q2"), (std::map<std::string, int>{{"d1", 2}}));
  EXPECT_EQ(qrels.at("q3"), (std::map<std::string, int>{{"d7", -1}}));  // kept, although not relevant
  EXPECT_EQ(stats.lines, 5u);
  EXPECT_EQ(stats.records, 4u);
}

TEST(Qrels, BeirWithAndWithoutHeader) {
  TempDir dir;
  const auto with_header = dir.write("test.tsv", "query-id\tcorpus-id\tscore\n1\t10\t1\n1\t11\t2\n2\t10\t0\n");
  ReadStats stats;
  const auto qrels = read_qrels(with_header, OnBadLine::Error, &stats);
  EXPECT_EQ(qrels, (Qrels{{"1", {{"10", 1}, {"11", 2}}}, {"2", {{"10", 0}}}}));
  EXPECT_EQ(stats.records, 3u);  // the header is no record
  EXPECT_EQ(stats.skipped, 0u);
  const auto without = dir.write("test2.tsv", "1\t10\t1\n");
  EXPECT_EQ(read_qrels(without), (Qrels{{"1", {{"10", 1}}}}));
}

TEST(Qrels, BadLines) {
  TempDir dir;
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"q1 0 d1 1", "q2 d2 1", "expected 4 fields like the first line"},
      {"q1\td1\t1", "q2 0 d2 1", "expected 3 fields like the first line"},
      {"q1\td1\t1", "q2\td2\tyes", "the relevance grade 'yes' is not an integer"},
      {"q1\td1\t1", "q2\td2\t1.0", "'1.0' is not an integer"},
      {"q1 0 d1 1", "q1 0 d1 0", "duplicate judgement for query 'q1' and document 'd1'"},
      {"q1 0 d1 1", "q1 0 d\xFF 0", "invalid UTF-8"},
  };
  for (const auto& [first, second, reason] : cases) {
    SCOPED_TRACE(second);
    const auto path = dir.write("qrels.txt", first + "\n" + second + "\n");
    expect_data_error([&] { read_qrels(path); }, path, 2, reason);
    ReadStats stats;
    EXPECT_EQ(read_qrels(path, OnBadLine::Skip, &stats).size(), 1u);
    EXPECT_EQ(stats.skipped, 1u);
  }
  // Only a 3-field first line can be a header; and a bad field count on line 1 is reported.
  const auto trec_header = dir.write("trec.txt", "qid iter docid rel\nq1 0 d1 1\n");
  expect_data_error([&] { read_qrels(trec_header); }, trec_header, 1, "'rel' is not an integer");
  const auto two_fields = dir.write("two.txt", "q1 d1\n");
  expect_data_error([&] { read_qrels(two_fields); }, two_fields, 1, "expected 4 fields (TREC");
  const auto header_only = dir.write("header.tsv", "query-id\tcorpus-id\tscore\n");
  expect_data_error([&] { read_qrels(header_only); }, header_only, 0, "no judgements");
  const auto missing = dir.path("none.tsv");
  expect_data_error([&] { read_qrels(missing); }, missing, 0, "cannot open");
}

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

  const auto start = std::chrono::steady_clock::now();
  const auto data = load_wordnet(options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const size_t train = data.train.size(), dev = data.dev_queries.size(), test = data.test_queries.size();
  const size_t total = train + dev + test;
  std::cout << "WordNet: " << total << " synsets (" << train << " train, " << dev << " dev, " << test << " test), "
            << data.corpus.size() << " distinct passages, loaded in " << seconds << " s\n";
  EXPECT_LT(seconds, 5.0);

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
