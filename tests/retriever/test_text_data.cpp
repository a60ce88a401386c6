// Readers of retrieval data files: UTF-8 checks, training pairs in every format, and every
// kind of bad line with its PATH:LINE.
#include "retriever/config/train_config.h"
#include "tests/retriever/text_test_util.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <string>
#include <tuple>
#include <unordered_set>
#include <vector>

using namespace gradcache::retriever;
using namespace text_test;

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

TEST(TextData, OnBadLineChoice) {  // the settings tables parse --on-bad-line with these names
  EXPECT_EQ(parse_choice(on_bad_line_names(), "error", "--on-bad-line"), OnBadLine::Error);
  EXPECT_EQ(parse_choice(on_bad_line_names(), "skip", "--on-bad-line"), OnBadLine::Skip);
  try {
    parse_choice(on_bad_line_names(), "ignore", "--on-bad-line");
    ADD_FAILURE() << "expected SettingsError";
  } catch (const SettingsError& e) {
    EXPECT_STREQ(e.what(), "--on-bad-line must be error or skip, got \"ignore\"");
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

// A line of NUL bytes (a binary file, a file being written) is named as such, with its file and
// line, in every reader; a JSON parser would call it "unexpected end of input".
TEST(TextData, NulBytesAreNamedWithFileAndLine) {
  TempDir dir;
  const std::string nul_line(6, '\0');
  const auto train = dir.write("train.jsonl", "{\"query\": \"q\", \"positives\": [\"p\"]}\n" + nul_line + "\n");
  expect_data_error([&] { read_train_examples(train); }, train, 2, "NUL bytes at byte 1 (binary data?)");
  const auto corpus = dir.write("corpus.tsv", "d1\tone\nd2\ttw" + std::string(1, '\0') + "o\n");
  expect_data_error([&] { read_collection(corpus); }, corpus, 2, "NUL bytes at byte 6 (binary data?)");
  const auto qrels = dir.write("qrels.txt", "q1 0 d1 1\n" + nul_line + "\n");
  expect_data_error([&] { read_qrels(qrels); }, qrels, 2, "NUL bytes");
  ReadStats stats;  // skipped like any bad line
  EXPECT_EQ(read_collection(corpus, OnBadLine::Skip, &stats).size(), 1u);
  EXPECT_EQ(stats.skipped, 1u);
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

TEST(TrainExamples, SentenceTransformersColumnNames) {
  TempDir dir;
  const auto path = dir.write(
      "train.jsonl",
      "{\"anchor\": \"a1\", \"positive\": \"p1\", \"negative\": \"n1\"}\n"
      "{\"anchor\": \"a2\", \"positive\": \"p2\", \"negative_1\": \"n2\", \"negative_2\": \"n3\", \"label\": 1}\n"
      "{\"query\": \"q3\", \"answer\": \" p3 \"}\n"
      "{\"sentence1\": \"s1\", \"sentence2\": \"s2\", \"negative\": [\"x\", \"y\"]}\n"
      "{\"anchor\": \"a5\", \"positive\": \"\"}\n"
      "{\"anchor\": \"a6\"}\n");
  ReadStats stats;
  const auto examples = read_train_examples(path, OnBadLine::Skip, &stats);
  ASSERT_EQ(examples.size(), 4u);
  EXPECT_EQ(examples[0].query, "a1");
  EXPECT_EQ(examples[0].positives, (Strings{"p1"}));
  EXPECT_EQ(examples[0].negatives, (Strings{"n1"}));
  EXPECT_EQ(examples[1].negatives, (Strings{"n2", "n3"}));
  EXPECT_EQ(examples[2].query, "q3");
  EXPECT_EQ(examples[2].positives, (Strings{"p3"}));
  EXPECT_EQ(examples[3].query, "s1");
  EXPECT_EQ(examples[3].negatives, (Strings{"x", "y"}));
  ASSERT_EQ(stats.skipped_examples.size(), 2u);
  EXPECT_NE(stats.skipped_examples[0].find("\"positive\" is empty"), std::string::npos) << stats.skipped_examples[0];
  EXPECT_NE(stats.skipped_examples[1].find("sentence-transformers' \"anchor\" and \"positive\""), std::string::npos)
      << stats.skipped_examples[1];
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
  expect_data_error([&] { read_train_examples(folder); }, folder, 0, "it is a directory");
}

// Issue 27: a FIFO as --train-file was read once (for the tokenizer) and the second open then
// waited forever for a writer. Refused before opening: without the check this test hangs on
// the open and fails by ctest's timeout.
TEST(TrainExamples, PipeIsRefusedNotWaitedOn) {
  TempDir dir;
  const auto fifo = dir.path("pipe.jsonl");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  expect_data_error([&] { read_train_examples(fifo); }, fifo, 0, "not a regular file");
  expect_data_error([&] { read_train_examples(fifo); }, fifo, 0, "write it to a file first");
  const auto device = dir.path("null.tsv");  // a device, through a link
  fs::create_symlink("/dev/null", device);
  expect_data_error([&] { read_collection(device); }, device, 0, "not a regular file");
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
