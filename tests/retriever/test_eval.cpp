// Tests of the retriever's evaluation pieces: tokenizer, retrieval metrics, exact blocked search.
#include "retriever/model/tokenizer.h"
#include "tests/retriever/text_test_util.h"
#include "retriever/search/exact_top_k.h"
#include "retriever/search/metrics.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace {

namespace fs = std::filesystem;
using gradcache::retriever::compute_metrics;
using gradcache::retriever::exact_top_k;
using gradcache::retriever::format_metrics_table;
using gradcache::retriever::RetrievalMetrics;
using gradcache::retriever::Tokenizer;
using gradcache::retriever::TokenizerTrainOptions;

// ---------------------------------------------------------------------------------------------
// Tokenizer

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

class TokenizerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    directory_ = new fs::path(fs::temp_directory_path() / ("gradcache_test_eval_" + std::to_string(::getpid())));
    fs::create_directories(*directory_);
    corpus_ = new std::vector<std::string>(text_test::sentences(3000));
    options_.vocab_size = 200;
    model_path_ = new std::string((*directory_ / "sub" / "tok.model").string());  // "sub" does not exist yet
    tokenizer_ = new Tokenizer(Tokenizer::train(*corpus_, options_, *model_path_));
  }
  static void TearDownTestSuite() {
    std::error_code ignored;
    fs::remove_all(*directory_, ignored);
    delete tokenizer_;
    delete model_path_;
    delete corpus_;
    delete directory_;
  }
  static std::string path_in_dir(const std::string& name) { return (*directory_ / name).string(); }

  static inline fs::path* directory_ = nullptr;
  static inline std::vector<std::string>* corpus_ = nullptr;
  static inline TokenizerTrainOptions options_;
  static inline std::string* model_path_ = nullptr;
  static inline Tokenizer* tokenizer_ = nullptr;
};

TEST_F(TokenizerTest, TrainWritesTheModelAtomically) {
  EXPECT_TRUE(fs::exists(*model_path_));
  EXPECT_FALSE(fs::exists(*model_path_ + ".tmp-" + std::to_string(::getpid())));
  EXPECT_EQ(read_bytes(*model_path_), tokenizer_->serialized());
  EXPECT_EQ(tokenizer_->vocab_size(), 200);
}

TEST_F(TokenizerTest, LoadedModelEncodesLikeTheTrainedOne) {
  const Tokenizer loaded = Tokenizer::load(*model_path_);
  EXPECT_EQ(loaded.serialized(), tokenizer_->serialized());
  for (size_t i = 0; i < 20; ++i) EXPECT_EQ(loaded.encode((*corpus_)[i]), tokenizer_->encode((*corpus_)[i]));
}

TEST_F(TokenizerTest, EncodeDecodeRoundTripAndCaseFolding) {
  const std::string text = "the quick brown fox jumps over the lazy dog.";
  const std::vector<int64_t> ids = tokenizer_->encode(text);
  EXPECT_GT(ids.size(), 1u);
  EXPECT_EQ(tokenizer_->decode(ids), text);
  // Lower-cased normalisation: case does not change the ids.
  EXPECT_EQ(tokenizer_->encode("The QUICK Brown Fox jumps over the lazy dog."), ids);
  EXPECT_EQ(tokenizer_->decode(tokenizer_->encode("The Quick FOX")), "the quick fox");
}

TEST_F(TokenizerTest, Truncation) {
  const std::string text = "the old farmer follows the young horse near the river.";
  const std::vector<int64_t> full = tokenizer_->encode(text);
  ASSERT_GT(full.size(), 4u);
  EXPECT_EQ(tokenizer_->encode(text, 3), std::vector<int64_t>(full.begin(), full.begin() + 3));
  EXPECT_EQ(tokenizer_->encode(text, 1).size(), 1u);
  EXPECT_EQ(tokenizer_->encode(text, 0), full);
  EXPECT_EQ(tokenizer_->encode(text, full.size() + 10), full);
}

TEST_F(TokenizerTest, PaddingAndUnknownIds) {
  EXPECT_EQ(Tokenizer::pad_id, 0);
  EXPECT_EQ(Tokenizer::unk_id, 1);
  // Known text: no padding, no unknown, every id inside the vocabulary.
  for (size_t i = 0; i < 50; ++i) {
    for (int64_t id : tokenizer_->encode((*corpus_)[i])) {
      EXPECT_GE(id, 2);
      EXPECT_LT(id, tokenizer_->vocab_size());
    }
  }
  // Characters never seen in training map to the unknown id.
  const std::vector<int64_t> unknown = tokenizer_->encode("the fox \xE6\xBC\xA2\xE5\xAD\x97");  // "漢字"
  EXPECT_NE(std::find(unknown.begin(), unknown.end(), Tokenizer::unk_id), unknown.end());
  EXPECT_EQ(std::find(unknown.begin(), unknown.end(), Tokenizer::pad_id), unknown.end());
  // Empty text gives no ids; non-empty text always gives at least one, even if it normalises away.
  EXPECT_TRUE(tokenizer_->encode("").empty());
  EXPECT_EQ(tokenizer_->encode("   "), std::vector<int64_t>{Tokenizer::unk_id});
  // Padding is skipped when decoding.
  std::vector<int64_t> padded = tokenizer_->encode("the cat");
  padded.insert(padded.end(), 3, Tokenizer::pad_id);
  EXPECT_EQ(tokenizer_->decode(padded), "the cat");
  EXPECT_THROW(tokenizer_->decode({tokenizer_->vocab_size()}), std::out_of_range);
}

TEST_F(TokenizerTest, SerializedRoundTrip) {
  const Tokenizer copy = Tokenizer::from_serialized(tokenizer_->serialized());
  EXPECT_EQ(copy.serialized(), tokenizer_->serialized());
  EXPECT_EQ(copy.vocab_size(), tokenizer_->vocab_size());
  EXPECT_EQ(copy.encode("the green bird watches the cat."), tokenizer_->encode("the green bird watches the cat."));
}

TEST_F(TokenizerTest, TrainingIsDeterministic) {
  const Tokenizer again = Tokenizer::train(*corpus_, options_, path_in_dir("again.model"));
  EXPECT_EQ(again.serialized(), tokenizer_->serialized());
  // Sampling (max_sentences) is deterministic too, and does change what is trained on.
  TokenizerTrainOptions sampled = options_;
  sampled.max_sentences = 300;
  const Tokenizer first = Tokenizer::train(*corpus_, sampled, path_in_dir("sampled1.model"));
  const Tokenizer second = Tokenizer::train(*corpus_, sampled, path_in_dir("sampled2.model"));
  EXPECT_EQ(first.serialized(), second.serialized());
  EXPECT_NE(first.serialized(), tokenizer_->serialized());
}

TEST_F(TokenizerTest, BpeModelType) {
  TokenizerTrainOptions bpe = options_;
  bpe.model_type = "bpe";
  const Tokenizer tokenizer = Tokenizer::train(*corpus_, bpe, path_in_dir("bpe.model"));
  EXPECT_EQ(tokenizer.vocab_size(), 200);
  EXPECT_NE(tokenizer.serialized(), tokenizer_->serialized());
  EXPECT_EQ(tokenizer.decode(tokenizer.encode("the happy cat sleeps near the house.")),
            "the happy cat sleeps near the house.");
}

/// Runs `action`, expecting an exception of type E whose message contains every one of `parts`.
template <typename E, typename F>
void expect_error(F action, const std::vector<std::string>& parts) {
  try {
    action();
    ADD_FAILURE() << "no exception thrown";
  } catch (const E& error) {
    const std::string message = error.what();
    for (const auto& part : parts) EXPECT_NE(message.find(part), std::string::npos) << "message: " << message;
  }
}

TEST_F(TokenizerTest, MissingOrCorruptModelFile) {
  const std::string missing = path_in_dir("missing.model");
  expect_error<std::runtime_error>([&] { Tokenizer::load(missing); }, {missing, "does not exist"});

  // Issue 27: a directory was read as an empty model ("is empty").
  const std::string folder = path_in_dir("folder.model");
  std::filesystem::create_directories(folder);
  expect_error<std::runtime_error>([&] { Tokenizer::load(folder); }, {folder, "is a directory"});

  const std::string corrupt = path_in_dir("corrupt.model");
  std::ofstream(corrupt, std::ios::binary) << "this is not a sentencepiece model";
  expect_error<std::runtime_error>([&] { Tokenizer::load(corrupt); }, {corrupt, "not a valid"});

  const std::string truncated = path_in_dir("truncated.model");
  const std::string bytes = tokenizer_->serialized();
  std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  expect_error<std::runtime_error>([&] { Tokenizer::load(truncated); }, {truncated});

  const std::string empty = path_in_dir("empty.model");
  std::ofstream(empty, std::ios::binary).flush();
  expect_error<std::runtime_error>([&] { Tokenizer::load(empty); }, {empty, "empty"});

  EXPECT_THROW(Tokenizer::from_serialized("garbage"), std::runtime_error);
}

TEST_F(TokenizerTest, VocabularyTooLargeForTheTexts) {
  TokenizerTrainOptions huge = options_;
  huge.vocab_size = 50000;
  const std::string path = path_in_dir("huge.model");
  expect_error<std::invalid_argument>([&] { Tokenizer::train(*corpus_, huge, path); },
                                      {"--vocab-size", "too small", "50000"});
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".tmp-" + std::to_string(::getpid())));
}

// With fit_vocab_size (the CLI's setting), the same request trains the largest vocabulary the
// texts support: sentencepiece's limit, below the request, and above the fixture's size.
TEST_F(TokenizerTest, VocabularyTooLargeIsFittedWhenAsked) {
  TokenizerTrainOptions huge = options_;
  huge.vocab_size = 50000;
  huge.fit_vocab_size = true;
  const std::string path = path_in_dir("fitted.model");
  const Tokenizer fitted = Tokenizer::train(*corpus_, huge, path);
  EXPECT_LT(fitted.vocab_size(), 50000);
  EXPECT_GT(fitted.vocab_size(), options_.vocab_size);
  EXPECT_TRUE(fs::exists(path));
  // One more piece than the fitted size is refused: the fit is the limit, not a guess below it.
  TokenizerTrainOptions one_more = options_;
  one_more.vocab_size = static_cast<int>(fitted.vocab_size()) + 1;
  EXPECT_THROW(Tokenizer::train(*corpus_, one_more, path_in_dir("one_more.model")), std::invalid_argument);
}

TEST_F(TokenizerTest, BadTrainingArguments) {
  TokenizerTrainOptions word = options_;
  word.model_type = "word";
  EXPECT_THROW(Tokenizer::train(*corpus_, word, path_in_dir("x.model")), std::invalid_argument);
  TokenizerTrainOptions tiny = options_;
  tiny.vocab_size = 2;
  EXPECT_THROW(Tokenizer::train(*corpus_, tiny, path_in_dir("x.model")), std::invalid_argument);
  EXPECT_THROW(Tokenizer::train({"", ""}, options_, path_in_dir("x.model")), std::invalid_argument);
  EXPECT_THROW(Tokenizer::train(*corpus_, options_, ""), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// Metrics

constexpr double kTolerance = 1e-12;

TEST(MetricsTest, SingleRelevantDocument) {
  // The relevant document 5 is at rank 2.
  const RetrievalMetrics m = compute_metrics({{3, 5, 7}}, {{{5, 1}}});
  EXPECT_EQ(m.queries, 1u);
  EXPECT_NEAR(m.recall_at_1, 0.0, kTolerance);
  EXPECT_NEAR(m.recall_at_10, 1.0, kTolerance);
  EXPECT_NEAR(m.recall_at_100, 1.0, kTolerance);
  EXPECT_NEAR(m.mrr_at_10, 0.5, kTolerance);
  EXPECT_NEAR(m.ndcg_at_10, 1.0 / std::log2(3.0), kTolerance);  // 0.6309
}

TEST(MetricsTest, RecallWithSeveralRelevantDocuments) {
  // Four relevant documents; 1 at rank 1, 2 at rank 3; 3 and 4 not retrieved.
  const RetrievalMetrics m = compute_metrics({{1, 9, 2}}, {{{1, 1}, {2, 1}, {3, 1}, {4, 1}}});
  EXPECT_NEAR(m.recall_at_1, 0.25, kTolerance);
  EXPECT_NEAR(m.recall_at_10, 0.5, kTolerance);
  EXPECT_NEAR(m.recall_at_100, 0.5, kTolerance);
  EXPECT_NEAR(m.mrr_at_10, 1.0, kTolerance);
  // DCG = 1/log2(2) + 1/log2(4) = 1.5; ideal = 1 + 1/log2(3) + 1/2 + 1/log2(5) = 2.5616
  EXPECT_NEAR(m.ndcg_at_10, 1.5 / (1.0 + 1.0 / std::log2(3.0) + 0.5 + 1.0 / std::log2(5.0)), kTolerance);
}

TEST(MetricsTest, GradedNdcg) {
  // Grades 3, 1, 2 for documents 10, 20, 30; ranking 20, 10, 99, 30.
  const RetrievalMetrics m = compute_metrics({{20, 10, 99, 30}}, {{{10, 3}, {20, 1}, {30, 2}}});
  const double dcg = 1.0 / std::log2(2.0) + 3.0 / std::log2(3.0) + 2.0 / std::log2(5.0);    // 3.7542
  const double ideal = 3.0 / std::log2(2.0) + 2.0 / std::log2(3.0) + 1.0 / std::log2(4.0);  // 4.7619
  EXPECT_NEAR(m.ndcg_at_10, dcg / ideal, kTolerance);
  EXPECT_NEAR(m.ndcg_at_10, 0.788377, 1e-6);
  EXPECT_NEAR(m.mrr_at_10, 1.0, kTolerance);
  EXPECT_NEAR(m.recall_at_1, 1.0 / 3.0, kTolerance);
  EXPECT_NEAR(m.recall_at_10, 1.0, kTolerance);
}

TEST(MetricsTest, RelevantDocumentsBeyondRank10And100) {
  std::vector<int64_t> ranking;
  for (int64_t doc = 0; doc < 150; ++doc) ranking.push_back(doc);
  // Document 50 is at rank 51 (inside 100), document 120 at rank 121 (outside).
  const RetrievalMetrics m = compute_metrics({ranking}, {{{50, 1}, {120, 1}}});
  EXPECT_NEAR(m.recall_at_1, 0.0, kTolerance);
  EXPECT_NEAR(m.recall_at_10, 0.0, kTolerance);
  EXPECT_NEAR(m.recall_at_100, 0.5, kTolerance);
  EXPECT_NEAR(m.mrr_at_10, 0.0, kTolerance);
  EXPECT_NEAR(m.ndcg_at_10, 0.0, kTolerance);
  // Rank 11: outside MRR@10 and nDCG@10, inside recall@100.
  const RetrievalMetrics eleventh = compute_metrics({ranking}, {{{10, 1}}});
  EXPECT_NEAR(eleventh.mrr_at_10, 0.0, kTolerance);
  EXPECT_NEAR(eleventh.recall_at_10, 0.0, kTolerance);
  EXPECT_NEAR(eleventh.recall_at_100, 1.0, kTolerance);
  // Rank 10: inside.
  const RetrievalMetrics tenth = compute_metrics({ranking}, {{{9, 1}}});
  EXPECT_NEAR(tenth.mrr_at_10, 0.1, kTolerance);
  EXPECT_NEAR(tenth.ndcg_at_10, 1.0 / std::log2(11.0), kTolerance);
}

TEST(MetricsTest, AveragesOverQueriesAndSkipsQueriesWithoutRelevantDocuments) {
  const RetrievalMetrics m = compute_metrics({{1, 2}, {4, 3}, {7}, {8}},
                                             {{{1, 1}},             // hit at rank 1
                                              {{3, 1}},             // hit at rank 2
                                              {},                   // no judgement: skipped
                                              {{8, 0}, {9, -1}}});  // only non-relevant grades: skipped
  EXPECT_EQ(m.queries, 2u);
  EXPECT_NEAR(m.recall_at_1, 0.5, kTolerance);
  EXPECT_NEAR(m.recall_at_10, 1.0, kTolerance);
  EXPECT_NEAR(m.mrr_at_10, 0.75, kTolerance);
  EXPECT_NEAR(m.ndcg_at_10, (1.0 + 1.0 / std::log2(3.0)) / 2, kTolerance);
}

TEST(MetricsTest, EdgeCases) {
  // Nothing evaluable: zeros.
  const RetrievalMetrics none = compute_metrics({{1}}, {{}});
  EXPECT_EQ(none.queries, 0u);
  EXPECT_EQ(none.recall_at_10, 0.0);
  EXPECT_EQ(none.ndcg_at_10, 0.0);
  // A repeated document counts once.
  const RetrievalMetrics repeated = compute_metrics({{5, 5, 6}}, {{{5, 1}, {6, 1}}});
  EXPECT_NEAR(repeated.recall_at_10, 1.0, kTolerance);
  EXPECT_NEAR(repeated.ndcg_at_10, (1.0 + 1.0 / std::log2(4.0)) / (1.0 + 1.0 / std::log2(3.0)), kTolerance);
  // Empty ranking.
  const RetrievalMetrics empty = compute_metrics({{}}, {{{5, 1}}});
  EXPECT_EQ(empty.queries, 1u);
  EXPECT_EQ(empty.recall_at_100, 0.0);
  // Mismatched sizes.
  EXPECT_THROW(compute_metrics({{1}, {2}}, {{{1, 1}}}), std::invalid_argument);
}

TEST(MetricsTest, JsonAndTable) {
  RetrievalMetrics m;
  m.recall_at_1 = 0.125;
  m.recall_at_10 = 0.5;
  m.recall_at_100 = 0.75;
  m.mrr_at_10 = 0.25;
  m.ndcg_at_10 = 1.0 / 3.0;
  m.queries = 42;
  const nlohmann::json j = gradcache::retriever::to_json(m);
  EXPECT_EQ(j.size(), 6u);
  EXPECT_EQ(j.at("recall@1").get<double>(), 0.125);
  EXPECT_EQ(j.at("recall@10").get<double>(), 0.5);
  EXPECT_EQ(j.at("recall@100").get<double>(), 0.75);
  EXPECT_EQ(j.at("mrr@10").get<double>(), 0.25);
  EXPECT_EQ(j.at("ndcg@10").get<double>(), 1.0 / 3.0);
  EXPECT_EQ(j.at("queries").get<size_t>(), 42u);

  const std::string table = format_metrics_table({{"untrained", RetrievalMetrics{}}, {"trained", m}});
  for (const char* part : {"R@1", "R@10", "R@100", "MRR@10", "nDCG@10", "queries", "untrained", "trained", "0.1250",
                           "0.5000", "0.7500", "0.2500", "0.3333", "42", "0.0000"}) {
    EXPECT_NE(table.find(part), std::string::npos) << part << " missing from:\n" << table;
  }
  // Aligned: every line has the same length, and three lines (header and two rows).
  std::istringstream lines(table);
  std::string line;
  std::vector<size_t> lengths;
  while (std::getline(lines, line)) lengths.push_back(line.size());
  ASSERT_EQ(lengths.size(), 3u) << table;
  EXPECT_EQ(lengths[0], lengths[1]) << table;
  EXPECT_EQ(lengths[0], lengths[2]) << table;
  // Rows start with their names, in the given order.
  EXPECT_LT(table.find("\nuntrained "), table.find("\ntrained ")) << table;
}

// ---------------------------------------------------------------------------------------------
// Search

/// The reference: the full score matrix, stably sorted (score descending, index ascending).
std::tuple<at::Tensor, at::Tensor> reference_top_k(const at::Tensor& queries, const at::Tensor& docs, int64_t k) {
  const auto [scores, indices] = queries.mm(docs.t()).sort(/*stable=*/true, /*dim=*/1, /*descending=*/true);
  const int64_t kept = std::min(k, docs.size(0));
  return {scores.narrow(1, 0, kept), indices.narrow(1, 0, kept)};
}

TEST(SearchTest, MatchesTopkOfTheFullScoreMatrix) {
  at::manual_seed(7);
  const at::Tensor queries = at::randn({50, 16});
  const at::Tensor docs = at::randn({1000, 16});
  const auto [full_scores, full_indices] = queries.mm(docs.t()).topk(10, 1);
  for (const auto& [query_block, doc_block] : std::vector<std::pair<int64_t, int64_t>>{
           {7, 333}, {50, 1}, {1, 250}, {50, 1000}, {64, 4096}, {3, 10}, {13, 11}}) {
    const auto found = exact_top_k(queries, docs, 10, query_block, doc_block);
    EXPECT_TRUE(found.indices.equal(full_indices)) << query_block << " x " << doc_block;
    EXPECT_TRUE(found.scores.allclose(full_scores, 1e-5, 1e-5)) << query_block << " x " << doc_block;
    EXPECT_EQ(found.scores.scalar_type(), at::kFloat);
    EXPECT_EQ(found.indices.scalar_type(), at::kLong);
  }
}

TEST(SearchTest, KLargerThanTheCorpus) {
  at::manual_seed(8);
  const at::Tensor queries = at::randn({4, 8});
  const at::Tensor docs = at::randn({5, 8});
  const auto found = exact_top_k(queries, docs, 10, 3, 2);
  ASSERT_EQ(found.indices.sizes(), (at::IntArrayRef{4, 5}));
  const auto [scores, indices] = reference_top_k(queries, docs, 10);
  EXPECT_TRUE(found.indices.equal(indices));
  EXPECT_TRUE(found.scores.allclose(scores, 1e-5, 1e-5));
}

TEST(SearchTest, TiesGoToTheLowerDocumentIndex) {
  // All documents identical: every score ties, so the answer is 0, 1, 2 whatever the blocks.
  // Small integers, so that every score is exact: with random floats a GEMM may round the same
  // dot product differently for different rows (it did once in a loaded ctest -j2, under MKL).
  const at::Tensor queries = at::randint(-3, 4, {3, 4}).to(at::kFloat);
  const at::Tensor same = at::ones({20, 4});
  for (int64_t doc_block : {1, 2, 7, 20}) {
    const auto found = exact_top_k(queries, same, 3, 2, doc_block);
    EXPECT_TRUE(found.indices.equal(at::arange(3, at::kLong).expand({3, 3}))) << doc_block << "\n" << found.indices;
  }
  // Many ties: small integer vectors (exact scores), compared with a stable sort of the full matrix.
  at::manual_seed(9);
  const at::Tensor int_queries = at::randint(-1, 2, {40, 3}).to(at::kFloat);
  const at::Tensor int_docs = at::randint(-1, 2, {300, 3}).to(at::kFloat);
  for (int64_t k : {1, 5, 17, 100}) {
    const auto [scores, indices] = reference_top_k(int_queries, int_docs, k);
    for (const auto& [query_block, doc_block] :
         std::vector<std::pair<int64_t, int64_t>>{{40, 300}, {7, 33}, {1, 64}, {16, 7}, {5, 250}}) {
      const auto found = exact_top_k(int_queries, int_docs, k, query_block, doc_block);
      EXPECT_TRUE(found.indices.equal(indices)) << "k " << k << ", blocks " << query_block << " x " << doc_block;
      EXPECT_TRUE(found.scores.equal(scores)) << "k " << k << ", blocks " << query_block << " x " << doc_block;
    }
  }
}

TEST(SearchTest, OtherDtypesAndEmptyQueries) {
  at::manual_seed(10);
  const at::Tensor queries = at::randn({6, 8}, at::kDouble);
  const at::Tensor docs = at::randn({30, 8}, at::kDouble);
  const auto found = exact_top_k(queries, docs, 4, 4, 8);
  const auto [scores, indices] = reference_top_k(queries, docs, 4);
  EXPECT_EQ(found.scores.scalar_type(), at::kFloat);
  EXPECT_TRUE(found.indices.equal(indices));
  EXPECT_TRUE(found.scores.allclose(scores.to(at::kFloat)));

  const auto nothing = exact_top_k(at::randn({0, 8}), at::randn({30, 8}), 4);
  EXPECT_EQ(nothing.indices.sizes(), (at::IntArrayRef{0, 4}));
}

TEST(SearchTest, BadArgumentsAreRejected) {
  const at::Tensor queries = at::randn({4, 8});
  const at::Tensor docs = at::randn({10, 8});
  EXPECT_THROW(exact_top_k(at::randn({8}), docs, 3), std::invalid_argument);
  EXPECT_THROW(exact_top_k(queries, at::randn({2, 10, 8}), 3), std::invalid_argument);
  EXPECT_THROW(exact_top_k(queries, at::randn({10, 7}), 3), std::invalid_argument);
  EXPECT_THROW(exact_top_k(queries.to(at::kLong), docs.to(at::kLong), 3), std::invalid_argument);
  EXPECT_THROW(exact_top_k(queries, docs.to(at::kDouble), 3), std::invalid_argument);
  EXPECT_THROW(exact_top_k(queries, at::randn({0, 8}), 3), std::invalid_argument);
  EXPECT_THROW(exact_top_k(queries, docs, 0), std::invalid_argument);
  EXPECT_THROW(exact_top_k(queries, docs, 3, 0, 5), std::invalid_argument);
  EXPECT_THROW(exact_top_k(queries, docs, 3, 5, 0), std::invalid_argument);
  EXPECT_THROW(exact_top_k(at::Tensor(), docs, 3), std::invalid_argument);
  at::Tensor broken = docs.clone();
  broken[3][2] = std::nan("");
  EXPECT_THROW(exact_top_k(queries, broken, 3), std::invalid_argument);
  try {
    exact_top_k(queries, at::randn({10, 7}), 3);
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("[10, 7]"), std::string::npos) << error.what();
  }
}

}  // namespace
