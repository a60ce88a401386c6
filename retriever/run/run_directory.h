// Where a training run keeps its files (config.output.dir): config.json, tokenizer.model,
// checkpoint.pt, metrics.jsonl and summary.json. Only the writer (rank 0) writes; files are
// replaced atomically, so none is ever left torn.
#pragma once

#include "retriever/config/train_config.h"
#include "retriever/run/checkpoint.h"
#include "retriever/train/progress.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

namespace gradcache {
namespace retriever {

class RunDirectory {
 public:
  /// `writer`: whether this process writes (rank 0); the others only read.
  RunDirectory(const TrainConfig& config, bool writer);

  /// A new run: refuses a directory that holds one unless `overwrite`, and a --metrics-out
  /// that names a directory or lies in a missing one; creates the output directory. An old
  /// metrics file is emptied only when the first new line is written, so a run that fails
  /// before its first step (a mistyped --train-file) leaves the old run's files as they were.
  void start(bool overwrite);
  /// A resumed run: the checkpoint's record, refused unless it was saved by `world_size`
  /// processes with settings that compute what `requested` does. Metrics lines after the
  /// checkpoint's step are dropped (the run logs them again).
  CheckpointInfo resume(const TrainConfig& requested, int world_size);

  const std::string& checkpoint_path() const { return checkpoint_path_; }
  /// OUTPUT/name.
  std::string path(const std::string& name) const;
  /// Where the metrics lines go: OUTPUT/metrics.jsonl or --metrics-out.
  const std::string& metrics_path() const { return metrics_path_; }
  /// Removes OUTPUT/name if it exists (writer only): an earlier run's file this run may not write.
  void remove(const std::string& name) const;
  /// Writes OUTPUT/name (writer only).
  void write(const std::string& name, const std::string& content) const;
  /// One line of metrics.jsonl (writer only); throws if it cannot be written.
  void append_metrics(const StepRecord& record);
  /// A dev evaluation's line of metrics.jsonl, {"dev": {metrics}, "step": N} (writer only);
  /// throws if it cannot be written. Readers tell the two kinds of line apart by "dev".
  void append_dev_metrics(int64_t step, const nlohmann::json& metrics);

 private:
  void append_line(const std::string& line);

  std::string output_, checkpoint_path_, metrics_path_;
  bool metrics_elsewhere_;  // --metrics-out given
  bool writer_;
  bool fresh_metrics_ = false;  // a new run: the first line replaces the file's content
  std::ofstream metrics_;
};

}  // namespace retriever
}  // namespace gradcache
