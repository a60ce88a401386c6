// The skeleton every scenario is built on, so that a scenario_*.cpp holds only what is its
// own. A scenario's settings are the option groups below, each declaring its flags once
// (the models and the batch, repetitions, a child process's threads and rank), plus flags of
// its own; its run function prepares the workload, measures, and fills a Report (report.h),
// which builds the JSON rows and the text table together and lays the text out alike in
// every scenario. A scenario that measures in child processes hands its settings to them as
// flags (child_command_line in options.h, run_ranks in ranks.h).
#pragma once

#include "report.h"
#include "workload.h"

#include <cstdint>
#include <string>

namespace gcbench {

class OptionTable;

/// Settings every scenario reads (filled by the common options).
struct CommonSettings {
  bool json = false;
  std::string plot;        ///< PNG path; empty: no plot
  int64_t threads = 1;     ///< LibTorch intra-op threads
  int64_t blas_threads = 1;  ///< OpenBLAS threads (0: as OpenBLAS decided; the streaming scenario's default)
  std::string program;     ///< argv[0] resolved (/proc/self/exe), for child processes
};

/// The models and the contrastive batch a step trains on: `batch` pairs (queries and their
/// positive passages) in chunks of `chunk` rows.
struct BatchSettings {
  ModelSettings model;
  int64_t batch, chunk;
  BatchSettings(int64_t batch, int64_t chunk) : batch(batch), chunk(chunk) {}
  /// The model flags (ModelSettings), --batch and --chunk.
  void add_options(OptionTable& t, const std::string& batch_help = "contrastive batch (pairs)");
  /// {"model", "batch", "chunk"}: how the JSON of a scenario with these settings begins.
  Json to_json() const;
};

/// Timed repetitions after untimed warm-up rounds.
struct Repetitions {
  int64_t reps, warmup;
  Repetitions(int64_t reps, int64_t warmup) : reps(reps), warmup(warmup) {}
  void add_options(OptionTable& t, const std::string& reps_help = "timed repetitions of each step (interleaved)",
                   const std::string& warmup_help = "untimed rounds first");
};

/// The threads of a child process: the parent's, handed over.
struct ChildThreads {
  int64_t threads = 1, blas_threads = 1;
  void add_options(OptionTable& t);
  /// Sets them in this (the child) process.
  void apply() const;
};

/// A child process that is one of `world` ranks on loopback; rank 0 serves 127.0.0.1:`port`.
struct ChildRank : ChildThreads {
  int64_t rank = 0, world = 1, port = 0;
  void add_options(OptionTable& t);
};

/// The models a scenario steps: in training mode, their gradients allocated (memory measured
/// after this leaves out their first allocation), described on the report's progress line.
Workload prepare_workload(const ModelSettings& model, const Report& report);

/// The models' JSON with their parameter count, for a scenario whose children build the
/// models: the parent builds them once, to count them and to say what they are.
Json describe_models(const ModelSettings& model, const Report& report);

}  // namespace gcbench
