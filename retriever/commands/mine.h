// Hard-negative mining (the CLI's `mine`): for each training query, retrieve the top documents
// of a corpus with a trained run (dense) or with BM25, choose negatives among them
// (search/negative_mining.h), and write Tevatron JSONL that `train --negatives n` reads.
#pragma once

#include "retriever/commands/command_control.h"
#include "retriever/config/settings_table.h"
#include "retriever/config/train_config.h"
#include "retriever/model/encode_all.h"
#include "retriever/run/saved_encoder.h"
#include "retriever/search/dense_index.h"
#include "retriever/search/negative_mining.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace gradcache::retriever {

struct MineSettings {
  std::string run;                       ///< checkpoint.pt or a run directory: dense retrieval
  std::string model;                     ///< or an export directory (gradcache export): dense retrieval
  PretrainedSource pretrained;           ///< or a pretrained model's directory (--model-dir): dense retrieval
  bool bm25 = false;                     ///< or BM25 (Xapian)
  DenseIndexOptions index;               ///< how the dense search runs (--index ...)
  std::string embeddings;                ///< the corpus's vectors from `gradcache encode` (not encoded again)
  std::string bm25_index;                ///< BM25 database directory ("" = temporary)
  double bm25_k1 = 0.9, bm25_b = 0.4;    ///< BM25 parameters
  std::string train_file;                ///< queries and positives; "" = WordNet's train split
  std::string corpus;                    ///< documents to mine; "" = WordNet's, or the training file's passages
  std::string qrels;                     ///< judgements: documents marked relevant are never negatives
  std::string wordnet_dir = "/usr/share/wordnet";
  std::string output;                    ///< Tevatron JSONL
  bool overwrite = false;
  int64_t negatives = 8;                 ///< per query
  std::string depth = "10:100";          ///< rank range FIRST:LAST the negatives come from
  double margin = 0;                     ///< > 0: positive-aware filter (dense only)
  uint64_t seed = 42;
  std::string on_short = "error";        ///< a query with too few candidates: "error" | "drop" | "random"
  OnBadLine on_bad_line = OnBadLine::Error;
  int64_t batch_size = 512;              ///< encoding batch (dense)
  std::string device = "cpu";
  int64_t threads = 0;                   ///< intra-op threads; 0: 1
  int64_t limit = 0;                     ///< > 0: only the first N training queries (quick looks, tests)
};

/// The table every setting of MineSettings is declared in (flags, checks, help).
const SettingsTable<MineSettings>& mine_settings();

struct MineReport {
  std::string output;
  std::string source;  ///< "bm25", or the run or export used
  size_t corpus_size = 0;
  MiningStats stats;
  int64_t written = 0;  ///< queries written (all but those dropped with --on-short drop)
};

/// How mine() reports as it goes, and how it is stopped (between batches).
using MineControl = CommandControl;

/// Mines and writes settings.output atomically. Throws std::exception subclasses naming the
/// file or flag (a missing file, an output that exists without --overwrite, fewer candidates
/// than --negatives for some query: nothing is written then), or StoppedBySignal.
MineReport mine(const MineSettings& settings, const MineControl& control = {});

}  // namespace gradcache::retriever
