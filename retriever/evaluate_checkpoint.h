// Evaluating a saved run (the CLI's `eval`): its settings, declared once in a settings table,
// and the evaluation itself.
#pragma once

#include "retriever/metrics.h"
#include "retriever/settings.h"

#include <cstdint>
#include <string>

namespace gradcache {
namespace retriever {

struct EvalSettings {
  std::string checkpoint;                    ///< checkpoint.pt, or a run's output directory
  std::string corpus, queries, qrels;        ///< evaluation files; none: the WordNet split
  std::string split = "test";                ///< WordNet split: test or dev
  std::string wordnet_dir;                   ///< "" = the run's
  std::string on_bad_line = "error";         ///< "error" | "skip"
  int64_t batch_size = 512;                  ///< encoding batch
  int64_t top_k = 100;                       ///< documents ranked per query
  std::string device = "cpu";
  int64_t threads = 0;                       ///< intra-op threads; 0: 1
  bool quick = false;                        ///< a small subset of the WordNet split
};

/// The table every setting of EvalSettings is declared in.
const SettingsTable<EvalSettings>& eval_settings();

struct EvalReport {
  std::string checkpoint;  ///< the checkpoint file evaluated
  std::string data_name;   ///< e.g. "wordnet test", or the queries file
  size_t corpus_size = 0;
  int64_t step = 0;        ///< the checkpoint's training step
  size_t unknown_docs = 0; ///< judged documents missing from the corpus (ignored)
  RetrievalMetrics metrics;
};

/// Loads the checkpoint and the evaluation data, and evaluates. Throws std::exception
/// subclasses naming the file or flag.
EvalReport evaluate_checkpoint(const EvalSettings& settings);

}  // namespace retriever
}  // namespace gradcache
