// Evaluating a saved run (the CLI's `eval`): its settings, declared once in a settings table,
// and the evaluation itself.
#pragma once

#include "retriever/commands/command_control.h"
#include "retriever/config/settings_table.h"
#include "retriever/config/train_config.h"
#include "retriever/run/saved_encoder.h"
#include "retriever/search/evaluate.h"
#include "retriever/search/metrics.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gradcache {
namespace retriever {

struct EvalSettings {
  std::string checkpoint;                    ///< checkpoint.pt, or a run's output directory
  PretrainedSource pretrained;               ///< or a pretrained model's directory (zero-shot)
  std::string corpus, queries, qrels;        ///< evaluation files; none: the WordNet split
  std::string split = "test";                ///< WordNet split: test or dev
  std::string wordnet_dir;                   ///< "" = the run's
  OnBadLine on_bad_line = OnBadLine::Error;
  int64_t batch_size = 512;                  ///< encoding batch
  int64_t top_k = 100;                       ///< documents ranked per query
  std::string device = "cpu";
  int64_t threads = 0;                       ///< intra-op threads; 0: 1
  bool quick = false;                        ///< a small subset of the WordNet split
  DenseIndexOptions index;                   ///< how the corpus is searched (--index and its parameters)
  bool eval_bm25 = true;                     ///< also rank with BM25 (the baseline row)
  std::string bm25_index;                    ///< BM25 database directory ("" = temporary)
  double bm25_k1 = 0.9, bm25_b = 0.4;        ///< BM25 parameters (Anserini's defaults)
  int64_t dim = 0;                           ///< > 0: evaluate the embeddings' first dim dimensions only
  int64_t rerank_k = 100;                    ///< runs with a learned similarity: dense candidates Phi re-ranks
};

/// The table every setting of EvalSettings is declared in.
const SettingsTable<EvalSettings>& eval_settings();

struct EvalReport {
  std::string checkpoint;  ///< the checkpoint file evaluated, or the --model-dir
  std::string data_name;   ///< e.g. "wordnet test", or the queries file
  size_t corpus_size = 0;
  int64_t step = 0;        ///< the checkpoint's training step
  std::string row;         ///< what the metrics are of: "step N", or "zero-shot" for a --model-dir
  RetrievalMetrics metrics;
  DenseEvaluation dense;                 ///< how the search went (index, recall vs exact, Phi's re-ranking)
  std::optional<Bm25Evaluation> bm25;    ///< the BM25 baseline (with --eval-bm25)
  int64_t dim = 0;                       ///< --dim: the prefix width `metrics` are of (0: all)
  std::vector<PrefixMetrics> prefixes;   ///< a --matryoshka run without --dim: each prefix width
};

/// How evaluate_checkpoint reports as it goes, and how it is stopped (between encoding batches).
using EvalControl = CommandControl;

/// Loads the checkpoint (or the --model-dir model) and the evaluation data, and evaluates. Throws std::exception
/// subclasses naming the file or flag (all before the encoding starts), or StoppedBySignal.
EvalReport evaluate_checkpoint(const EvalSettings& settings, const EvalControl& control = {});

}  // namespace retriever
}  // namespace gradcache
