// gradcache-search-bench: the search methods of `gradcache eval` on a real evaluation set.
// Encodes the WordNet split with a checkpoint's model once, then measures side by side, best of
// --repeats: the two exact searches (exact_top_k, FAISS IndexFlatIP), whether they agree, HNSW
// and IVF-PQ (build and search time, recall against the exact search), and the BM25 baseline
// (Xapian indexing and search). Writes the figures as JSON (docs/figures/search.json).
//
//   gradcache-search-bench --checkpoint runs/quick --output docs/figures/search.json
#include "retriever/data/task.h"
#include "files/atomic_file.h"
#include "retriever/launch/threads.h"
#include "retriever/run/checkpoint.h"
#include "retriever/search/bm25.h"
#include "retriever/search/dense_index.h"
#include "retriever/search/evaluate.h"
#include "retriever/search/exact_top_k.h"

#include <CLI/CLI.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <string>

namespace gr = gradcache::retriever;
namespace {

struct Flags {
  std::string checkpoint, wordnet_dir, split = "test", output;
  int repeats = 3, threads = 1;
};

double seconds_of(const std::function<void()>& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Encoded {
  at::Tensor docs, queries;
  gr::TokenizedEvalSet set;
  gr::EvalData data;
  double encode_seconds = 0;
};

Encoded encode(const Flags& flags) {
  std::string path = flags.checkpoint;
  if (std::filesystem::is_directory(path)) path = (std::filesystem::path(path) / "checkpoint.pt").string();
  auto [info, model] = gr::load_checkpoint(path);
  Encoded out;
  out.data = gr::load_wordnet_eval(flags.wordnet_dir.empty() ? info.config.data.wordnet_dir : flags.wordnet_dir,
                                   flags.split, false);
  const auto tokenizer = gr::tokenizer_of(info);
  out.set = gr::tokenize_eval_set(out.data.name, out.data.corpus, out.data.queries, out.data.qrels, tokenizer,
                                  static_cast<size_t>(info.config.tokenizer.query_max_len),
                                  static_cast<size_t>(info.config.tokenizer.passage_max_len));
  model.train(false);
  out.encode_seconds = seconds_of([&] {
    out.docs = gr::encode_all(model.passage_model(), out.set.corpus, 512, c10::Device(c10::kCPU));
    out.queries = gr::encode_all(model.query_model(), out.set.queries, 512, c10::Device(c10::kCPU));
  });
  return out;
}

/// Where two exact results differ: rows and positions, and whether every difference is a tie
/// within float rounding (the scores at that position equal within 1e-6 relative).
nlohmann::json compare_exact(const gr::TopK& a, const gr::TopK& b) {
  const at::Tensor differ = a.indices.ne(b.indices);
  const int64_t positions = differ.sum().item<int64_t>();
  const at::Tensor gap = (a.scores - b.scores).abs().masked_select(differ);
  const at::Tensor scale = a.scores.abs().masked_select(differ).clamp_min(1e-30);
  const double worst = positions == 0 ? 0.0 : (gap / scale).max().item<double>();
  return {{"identical", positions == 0},
          {"rows_differing", differ.any(1).sum().item<int64_t>()},
          {"positions_differing", positions},
          {"max_relative_score_gap_where_differing", worst},
          {"max_abs_score_difference", (a.scores - b.scores).abs().max().item<double>()}};
}

/// Builds an index and searches with it, best of `repeats` for each; metrics and recall.
nlohmann::json measure_index(const Encoded& e, const gr::DenseIndexOptions& options, int repeats,
                             const gr::TopK* exact, gr::TopK* result) {
  double build = std::numeric_limits<double>::infinity(), search = build;
  std::string description;
  for (int r = 0; r < repeats; ++r) {
    std::unique_ptr<gr::DenseIndex> index;
    build = std::min(build, seconds_of([&] { index = std::make_unique<gr::DenseIndex>(e.docs, options); }));
    search = std::min(search, seconds_of([&] { *result = index->search(e.queries, 100); }));
    description = index->describe();
  }
  nlohmann::json j{{"index", description},
                   {"build_s", build},
                   {"search_s", search},
                   {"metrics", gr::to_json(gr::compute_metrics(gr::ranked_lists(*result), e.set.relevant))}};
  if (exact) {
    j["recall_vs_exact@10"] = gr::recall_against(*result, *exact, 10);
    j["recall_vs_exact@100"] = gr::recall_against(*result, *exact, 100);
  }
  std::cerr << options.type << ": " << j.dump() << std::endl;
  return j;
}

nlohmann::json measure_bm25(const Encoded& e, int repeats) {
  double build = std::numeric_limits<double>::infinity(), search = build;
  gr::TopK top;
  for (int r = 0; r < repeats; ++r) {
    std::unique_ptr<gr::Bm25Index> index;
    build = std::min(build, seconds_of([&] { index = std::make_unique<gr::Bm25Index>(e.data.corpus); }));
    search = std::min(search, seconds_of([&] { top = index->search(e.data.queries.texts, 100); }));
  }
  nlohmann::json j{{"index", "Xapian glass, English stemming, BM25 k1 0.9 b 0.4"},
                   {"build_s", build},
                   {"search_s", search},
                   {"metrics", gr::to_json(gr::compute_metrics(gr::ranked_lists(top), e.set.relevant))}};
  std::cerr << "bm25: " << j.dump() << std::endl;
  return j;
}

int run(const Flags& flags) {
  gr::configure_threads(flags.threads, flags.threads);
  Encoded e = encode(flags);
  std::cerr << "encoded " << e.docs.size(0) << " passages and " << e.queries.size(0) << " queries in "
            << e.encode_seconds << " s" << std::endl;
  auto options = [&](const std::string& type) {
    gr::DenseIndexOptions o;
    o.type = type;
    o.threads = flags.threads;
    return o;
  };
  gr::TopK blocked, flat, hnsw, ivfpq;
  nlohmann::json exact = nlohmann::json::object();
  // Side by side: each repeat measures both, so that the machine's state is shared.
  nlohmann::json blocked_runs = nlohmann::json::array(), flat_runs = nlohmann::json::array();
  for (int r = 0; r < flags.repeats; ++r) {
    blocked_runs.push_back(measure_index(e, options("blocked"), 1, nullptr, &blocked));
    flat_runs.push_back(measure_index(e, options("flat"), 1, nullptr, &flat));
  }
  auto best = [](const nlohmann::json& runs) {
    nlohmann::json out = runs[0];
    for (const auto& run : runs) {
      out["build_s"] = std::min(out["build_s"].get<double>(), run["build_s"].get<double>());
      out["search_s"] = std::min(out["search_s"].get<double>(), run["search_s"].get<double>());
    }
    return out;
  };
  exact["blocked_exact_top_k"] = best(blocked_runs);
  exact["faiss_flat"] = best(flat_runs);
  exact["agreement"] = compare_exact(flat, blocked);
  exact["metrics_equal"] = exact["blocked_exact_top_k"]["metrics"] == exact["faiss_flat"]["metrics"];
  nlohmann::json report{
      {"program", "gradcache-search-bench --checkpoint " + flags.checkpoint + " --repeats " +
                      std::to_string(flags.repeats) + " --threads " + std::to_string(flags.threads)},
      {"eval", e.data.name},
      {"passages", e.docs.size(0)},
      {"queries", e.queries.size(0)},
      {"dimension", e.docs.size(1)},
      {"threads", flags.threads},
      {"repeats_best_of", flags.repeats},
      {"k", 100},
      {"encode_s", e.encode_seconds},
      {"exact", exact},
      {"hnsw", measure_index(e, options("hnsw"), flags.repeats, &blocked, &hnsw)},
      {"ivfpq", measure_index(e, options("ivfpq"), flags.repeats, &blocked, &ivfpq)},
      {"bm25", measure_bm25(e, flags.repeats)}};
  const std::string text = report.dump(2) + "\n";
  if (flags.output.empty()) {
    std::cout << text;
  } else {
    gradcache::files::write_file_atomic(flags.output, text);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("gradcache-search-bench: exact, approximate and BM25 search on the WordNet evaluation split");
  Flags flags;
  app.add_option("--checkpoint", flags.checkpoint, "checkpoint.pt or a run directory")->required();
  app.add_option("--wordnet-dir", flags.wordnet_dir, "WordNet database (default: the run's)");
  app.add_option("--split", flags.split, "test or dev")->check(CLI::IsMember({"test", "dev"}));
  app.add_option("--repeats", flags.repeats, "Best of this many")->check(CLI::PositiveNumber);
  app.add_option("--threads", flags.threads, "Threads (intra-op, BLAS, OpenMP)")->check(CLI::PositiveNumber);
  app.add_option("--output", flags.output, "JSON file to write (default: stdout)");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(flags);
  } catch (const std::exception& e) {
    std::cerr << "gradcache-search-bench: error: " << e.what() << std::endl;
    return 1;
  }
}
