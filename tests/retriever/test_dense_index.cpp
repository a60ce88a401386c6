// DenseIndex: FAISS's flat index answers exactly as exact_top_k (ties included), the
// approximate indexes find most of the exact neighbours, and bad parameters are refused clearly.
#include "retriever/commands/evaluate_run.h"
#include "retriever/data/task.h"
#include "retriever/model/encode_all.h"
#include "retriever/search/dense_index.h"
#include "retriever/search/exact_top_k.h"
#include "retriever/search/metrics.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <atomic>
#include <csignal>

#include <filesystem>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace gradcache::retriever {
namespace {

DenseIndexOptions of_type(const std::string& type) {
  DenseIndexOptions options;
  options.type = type;
  options.threads = 1;
  return options;
}

void expect_same(const TopK& found, const TopK& exact, const std::string& what) {
  EXPECT_TRUE(found.indices.equal(exact.indices)) << what;
  EXPECT_TRUE(found.scores.allclose(exact.scores, 1e-5, 1e-5)) << what;
}

TEST(DenseIndexTest, FlatEqualsExactTopKOnRandomData) {
  at::manual_seed(21);
  const at::Tensor docs = at::randn({3000, 32});
  const at::Tensor queries = at::randn({200, 32});
  for (int64_t k : {1, 10, 100}) {
    const TopK exact = exact_top_k(queries, docs, k);
    expect_same(DenseIndex(docs, of_type("flat")).search(queries, k), exact, "flat, k " + std::to_string(k));
    expect_same(DenseIndex(docs, of_type("exact")).search(queries, k), exact, "exact, k " + std::to_string(k));
    expect_same(DenseIndex(docs, of_type("blocked")).search(queries, k), exact, "blocked, k " + std::to_string(k));
  }
  EXPECT_EQ(DenseIndex(docs, of_type("exact")).type(), "flat");
}

TEST(DenseIndexTest, FlatBreaksTiesAsExactTopK) {
  // Small integer vectors: exact scores with many ties, also straddling the k-th place.
  at::manual_seed(22);
  const at::Tensor docs = at::randint(-1, 2, {500, 3}).to(at::kFloat);
  const at::Tensor queries = at::randint(-1, 2, {60, 3}).to(at::kFloat);
  const DenseIndex index(docs, of_type("flat"));
  for (int64_t k : {1, 5, 17, 100, 600}) {
    const TopK exact = exact_top_k(queries, docs, k);
    const TopK found = index.search(queries, k);
    EXPECT_TRUE(found.indices.equal(exact.indices)) << "k " << k;
    EXPECT_TRUE(found.scores.equal(exact.scores)) << "k " << k;
  }
}

/// Bag-of-hashed-words vectors of texts: real data without a model (and with real ties).
at::Tensor hashed_words(const std::vector<std::string>& texts, int64_t dim) {
  at::Tensor out = at::zeros({static_cast<int64_t>(texts.size()), dim});
  auto a = out.accessor<float, 2>();
  for (size_t i = 0; i < texts.size(); ++i) {
    std::istringstream words(texts[i]);
    for (std::string word; words >> word;) a[static_cast<int64_t>(i)][std::hash<std::string>{}(word) % dim] += 1;
  }
  return out;
}

TEST(DenseIndexTest, FlatGivesExactTopKMetricsOnWordNet) {
  if (!std::filesystem::exists("/usr/share/wordnet/data.noun")) GTEST_SKIP() << "no WordNet database";
  const EvalData data = load_wordnet_eval("/usr/share/wordnet", "test", /*quick=*/true);
  const at::Tensor docs = hashed_words(data.corpus.texts, 64);
  const at::Tensor queries = hashed_words(data.queries.texts, 64);
  std::vector<std::unordered_map<int64_t, int>> relevant(data.queries.size());
  for (size_t q = 0; q < data.queries.size(); ++q) {
    const auto judged = data.qrels.find(data.queries.ids[q]);
    if (judged == data.qrels.end()) continue;
    for (const auto& [doc, grade] : judged->second) {
      relevant[q][static_cast<int64_t>(data.corpus.index.at(doc))] = grade;
    }
  }
  const TopK exact = exact_top_k(queries, docs, 100);
  const TopK flat = DenseIndex(docs, of_type("flat")).search(queries, 100);
  EXPECT_TRUE(flat.indices.equal(exact.indices));
  const auto a = compute_metrics(ranked_lists(exact), relevant);
  const auto b = compute_metrics(ranked_lists(flat), relevant);
  EXPECT_GT(a.recall_at_100, 0.0);
  EXPECT_EQ(a.recall_at_1, b.recall_at_1);
  EXPECT_EQ(a.recall_at_10, b.recall_at_10);
  EXPECT_EQ(a.recall_at_100, b.recall_at_100);
  EXPECT_EQ(a.mrr_at_10, b.mrr_at_10);
  EXPECT_EQ(a.ndcg_at_10, b.ndcg_at_10);
}

TEST(DenseIndexTest, ApproximateIndexesFindMostExactNeighbours) {
  at::manual_seed(23);
  const at::Tensor docs = at::randn({4000, 32});
  const at::Tensor queries = at::randn({100, 32});
  const TopK exact = exact_top_k(queries, docs, 100);
  const TopK hnsw = DenseIndex(docs, of_type("hnsw")).search(queries, 100);
  EXPECT_GT(recall_against(hnsw, exact, 10), 0.9);
  EXPECT_GT(recall_against(hnsw, exact, 100), 0.8);
  DenseIndexOptions ivfpq = of_type("ivfpq");
  ivfpq.nlist = 16;
  ivfpq.nprobe = 8;
  ivfpq.pq_m = 16;
  const DenseIndex index(docs, ivfpq);
  EXPECT_NE(index.describe().find("nlist 16"), std::string::npos) << index.describe();
  const TopK found = index.search(queries, 100);
  EXPECT_GT(recall_against(found, exact, 10), 0.4);
  EXPECT_GT(recall_against(found, exact, 100), 0.4);
  EXPECT_DOUBLE_EQ(recall_against(exact, exact, 100), 1.0);
  // Scores descending in every row.
  EXPECT_TRUE(found.scores.narrow(1, 0, 99).ge(found.scores.narrow(1, 1, 99)).all().item<bool>());
}

void expect_error(const std::function<void()>& fn, const std::string& part) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one containing '" << part << "'";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(DenseIndexTest, BadParametersGiveClearErrors) {
  at::manual_seed(24);
  const at::Tensor docs = at::randn({300, 24});
  DenseIndexOptions o = of_type("ivfpq");
  o.nlist = 500;
  expect_error([&] { DenseIndex(docs, o); }, "--nlist 500 exceeds the 300 documents");
  o.nlist = 8;
  o.pq_m = 5;
  expect_error([&] { DenseIndex(docs, o); }, "--pq-m 5 must divide the embedding size 24");
  o.pq_m = 6;
  o.pq_bits = 10;
  expect_error([&] { DenseIndex(docs, o); }, "training documents");
  expect_error([&] { DenseIndex(docs, of_type("annoy")); }, "--index must be");
  DenseIndexOptions h = of_type("hnsw");
  h.hnsw_m = 1;
  expect_error([&] { DenseIndex(docs, h); }, "--hnsw-m");
  // Issue 27: a huge M grew to 24 GB before anything said no; refused before FAISS allocates.
  h.hnsw_m = 999999999999;
  expect_error([&] { DenseIndex(docs, h); }, "--hnsw-m must be at most");
  h.hnsw_m = 8;
  h.ef_search = int64_t{1} << 40;
  expect_error([&] { DenseIndex(docs, h); }, "must be at most 65536");
  for (const char* type : {"flat", "hnsw", "blocked"}) {
    const DenseIndex index(docs, of_type(type));
    expect_error([&] { index.search(at::randn({3, 16}), 5); }, "queries have 16 dimensions but the index holds 24");
  }
  expect_error([&] { DenseIndex(at::randn({0, 8}), of_type("flat")); }, "no documents");
  at::Tensor bad = at::randn({10, 8});
  bad[3][2] = std::numeric_limits<float>::quiet_NaN();
  expect_error([&] { DenseIndex(bad, of_type("flat")); }, "NaN");
}

// Issue 27: a signal during dense search was swallowed. With the stop flag set, building and
// searching throw StoppedBySignal, for every index type.
TEST(DenseIndexTest, ASignalStopsBuildingAndSearching) {
  const at::Tensor docs = at::randn({300, 24}), queries = at::randn({5, 24});
  for (const char* type : {"flat", "hnsw", "blocked", "exact"}) {
    std::atomic<int> stop{0};
    DenseIndexOptions options = of_type(type);
    options.stop = &stop;
    const DenseIndex index(docs, options);
    stop = SIGTERM;
    EXPECT_THROW(index.search(queries, 3), StoppedBySignal) << type;
    if (std::string(type) != "blocked" && std::string(type) != "exact") {
      EXPECT_THROW(DenseIndex(docs, options), StoppedBySignal) << type;
    }
  }
}

TEST(DenseIndexTest, EvalFlagsSetTheIndexOptions) {
  const EvalSettings s = eval_settings().build(
      EvalSettings{}, nlohmann::json::object(),
      {{"index", "ivfpq"}, {"nlist", "50"}, {"nprobe", "5"}, {"pq_m", "8"}, {"pq_bits", "6"}, {"hnsw_m", "12"},
       {"ef_search", "40"}, {"ef_construction", "60"}, {"eval_bm25", "false"}, {"bm25_index", "/tmp/x"}});
  EXPECT_EQ(s.index.type, "ivfpq");
  EXPECT_EQ(s.index.nlist, 50);
  EXPECT_EQ(s.index.nprobe, 5);
  EXPECT_EQ(s.index.pq_m, 8);
  EXPECT_EQ(s.index.pq_bits, 6);
  EXPECT_EQ(s.index.hnsw_m, 12);
  EXPECT_EQ(s.index.ef_search, 40);
  EXPECT_EQ(s.index.ef_construction, 60);
  EXPECT_FALSE(s.eval_bm25);
  EXPECT_EQ(s.bm25_index, "/tmp/x");
  EXPECT_TRUE(EvalSettings{}.eval_bm25);
  EvalSettings bad;
  bad.checkpoint = "x";
  bad.index.type = "annoy";
  expect_error([&] { eval_settings().validate(bad); }, "--index must be exact, flat, blocked, hnsw or ivfpq");
}

}  // namespace
}  // namespace gradcache::retriever
