// `gradcache eval`: a checkpoint, a corpus, queries and judgements -> retrieval metrics. The
// flags come from the settings table (retriever/commands/evaluate_run.cpp); --json, how to
// print, is the command's own.
#include "table_command.h"

#include "retriever/commands/evaluate_run.h"
#include "retriever/search/evaluate.h"

#include <cstdio>
#include <iostream>

namespace gradcache {
namespace cli {
namespace {

// "index hnsw M 32, ...: recall vs exact search @10 0.9912, @100 0.9876" (approximate indexes).
std::string recall_line(const retriever::DenseEvaluation& dense) {
  if (!dense.recall_vs_exact_at_10) return "";
  char text[96];
  std::snprintf(text, sizeof text, "recall vs exact search: @10 %.4f", *dense.recall_vs_exact_at_10);
  std::string line = "index " + dense.index + "; " + text;
  if (dense.recall_vs_exact_at_100) {
    std::snprintf(text, sizeof text, ", @100 %.4f", *dense.recall_vs_exact_at_100);
    line += text;
  }
  return line + "\n";
}

nlohmann::json search_json(const retriever::DenseEvaluation& dense) {
  nlohmann::json j{{"index", dense.index}, {"index_s", dense.index_seconds}, {"search_s", dense.search_seconds}};
  if (dense.recall_vs_exact_at_10) j["recall_vs_exact@10"] = *dense.recall_vs_exact_at_10;
  if (dense.recall_vs_exact_at_100) j["recall_vs_exact@100"] = *dense.recall_vs_exact_at_100;
  return j;
}

void print(const retriever::EvalReport& report, bool json) {
  if (json) {
    auto j = retriever::to_json(report.metrics);
    j["eval"] = report.data_name;
    j["checkpoint"] = report.checkpoint;
    j["step"] = report.step;
    j["search"] = search_json(report.dense);
    if (report.bm25) j["bm25"] = retriever::to_json(report.bm25->metrics);
    if (report.dim > 0) j["dim"] = report.dim;
    if (!report.prefixes.empty()) j["matryoshka"] = retriever::to_json(report.prefixes);
    if (report.dense.reranked) {
      j["reranked"] = retriever::to_json(*report.dense.reranked);
      j["reranked"]["k"] = report.dense.rerank_k;
    }
    std::cout << j.dump(2) << std::endl;
    return;
  }
  std::vector<std::pair<std::string, retriever::RetrievalMetrics>> rows{
      {report.row + (report.dim > 0 ? " @" + std::to_string(report.dim) : ""), report.metrics}};
  for (auto& row : retriever::prefix_rows(report.row, report.prefixes)) rows.push_back(row);
  if (report.dense.reranked) {
    rows.emplace_back(report.row + ", top " + std::to_string(report.dense.rerank_k) + " re-ranked by Phi",
                      *report.dense.reranked);
  }
  if (report.bm25) rows.emplace_back("bm25", report.bm25->metrics);
  std::cout << report.data_name << " (" << report.metrics.queries << " queries, " << report.corpus_size
            << " passages)\n"
            << retriever::format_metrics_table(rows) << recall_line(report.dense);
}

}  // namespace

std::function<int()> add_eval_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("eval", "Evaluate a checkpoint (or a pretrained --model-dir, zero-shot): encode "
                                         "the corpus and the queries, rank every document for every query (exact "
                                         "unless --index says otherwise), print Recall@1/10/100, MRR@10, nDCG@10, "
                                         "with a BM25 row below. Without --corpus: the WordNet split of the run's "
                                         "data.");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print the metrics as JSON instead of a table");
  return table_command<retriever::EvalSettings>(
      *cmd, retriever::eval_settings(),
      [](const retriever::EvalSettings&) { return std::string(" before the evaluation finished; no metrics were printed"); },
      [json](const retriever::EvalSettings& settings, retriever::EvalControl& control) {
        print(retriever::evaluate_checkpoint(settings, control), *json);
        return 0;
      });
}

}  // namespace cli
}  // namespace gradcache
