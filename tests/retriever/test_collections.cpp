// Readers of collections (corpus, queries) and relevance judgements: formats and bad lines.
#include "retriever/data/judgements.h"
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
    std::string name = "c";  // appended piece by piece: GCC 12 warns of "c" + std::to_string(i)
    name += std::to_string(i);  // (-Wstringop-overflow, a false positive, in a clean build's PCH)
    name += extension;
    const auto path = dir.write(name, good + "\n" + line + "\n");
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
  // Issue 27: a TREC line missing its grade was taken for a header, leaving "no judgements".
  const auto no_grade = dir.write("no_grade.txt", "q1 0 d1\n");
  expect_data_error([&] { read_qrels(no_grade); }, no_grade, 1, "the relevance grade 'd1' is not an integer");
  expect_data_error([&] { read_qrels(no_grade); }, no_grade, 1, "a TREC line has 4: qid 0 docid rel");
  const auto header_only = dir.write("header.tsv", "query-id\tcorpus-id\tscore\n");
  expect_data_error([&] { read_qrels(header_only); }, header_only, 0, "no judgements");
  const auto missing = dir.path("none.tsv");
  expect_data_error([&] { read_qrels(missing); }, missing, 0, "cannot open");
}

// ---- judgements against their queries and corpus ----------------------------------------------

namespace {

TextCollection collection_of(const Strings& ids) {
  TextCollection c;
  for (const auto& id : ids) c.add(id, "text of " + id);
  return c;
}

const JudgementFiles kFiles{"corpus.tsv", "queries.tsv", "qrels.txt"};

}  // namespace

TEST(Judgements, UnknownQueryAndDocumentIdsAreCountedWithAnExample) {
  const auto corpus = collection_of({"d1", "d2"});
  const auto queries = collection_of({"q1", "q2"});
  const Qrels qrels{{"q1", {{"d1", 1}, {"d9", 1}}}, {"q2", {{"d2", 1}}}, {"q7", {{"d1", 1}}}, {"q8", {{"d2", 2}}}};
  const auto notices = check_judgements(corpus, queries, qrels, kFiles);
  ASSERT_EQ(notices.size(), 2u);
  EXPECT_EQ(notices[0], "qrels.txt: 2 of 5 judgements name a query id that is not in queries.tsv (e.g. 'q7'); "
                        "they are ignored");
  EXPECT_EQ(notices[1], "qrels.txt: 1 of 5 judgements name a document id that is not in corpus.tsv (e.g. 'd9'); "
                        "they are ignored");
  EXPECT_TRUE(check_judgements(corpus, queries, {{"q1", {{"d1", 1}}}}, kFiles).empty());
}

TEST(Judgements, NoUsableQueryIsAnErrorThatSaysWhy) {
  const auto corpus = collection_of({"d1", "d2"});
  const auto queries = collection_of({"q1", "q2"});
  // Query ids from another data set.
  expect_data_error([&] { check_judgements(corpus, queries, {{"x1", {{"d1", 1}}}, {"x2", {{"d2", 1}}}}, kFiles); },
                    "qrels.txt", 0,
                    "no query can be evaluated: of 2 judgements, 2 name a query id not in queries.tsv (e.g. 'x1')");
  // Known queries, but their documents are missing from the corpus.
  expect_data_error([&] { check_judgements(corpus, queries, {{"q1", {{"z1", 1}}}}, kFiles); }, "qrels.txt", 0,
                    "1 name a document id not in corpus.tsv (e.g. 'z1')");
  // Known queries and documents, but no judgement says relevant.
  expect_data_error([&] { check_judgements(corpus, queries, {{"q1", {{"d1", 0}}}, {"q2", {{"d2", -1}}}}, kFiles); },
                    "qrels.txt", 0, "2 have a grade <= 0 (not relevant)");
  // One usable query is enough.
  EXPECT_EQ(check_judgements(corpus, queries, {{"q1", {{"d1", 0}}}, {"q2", {{"d2", 1}}}}, kFiles).size(), 0u);
}
