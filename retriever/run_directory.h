// Where a training run keeps its files (config.output): config.json, tokenizer.model,
// checkpoint.pt, metrics.jsonl and summary.json. Only the writer (rank 0) writes; files are
// replaced atomically, so none is ever left torn.
#pragma once

#include "retriever/checkpoint.h"
#include "retriever/progress.h"
#include "retriever/train_config.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

namespace gradcache {
namespace retriever {

class RunDirectory {
 public:
  /// `writer`: whether this process writes (rank 0); the others only read.
  RunDirectory(const TrainConfig& config, bool writer);

  /// A new run: refuses a directory that holds one unless `overwrite`; creates the directory
  /// and an empty metrics file.
  void start(bool overwrite);
  /// A resumed run: the checkpoint's record, refused unless it was saved by `world_size`
  /// processes with settings that compute what `requested` does. Metrics lines after the
  /// checkpoint's step are dropped (the run logs them again).
  CheckpointInfo resume(const TrainConfig& requested, int world_size);

  const std::string& checkpoint_path() const { return checkpoint_path_; }
  /// OUTPUT/name.
  std::string path(const std::string& name) const;
  /// Writes OUTPUT/name (writer only).
  void write(const std::string& name, const std::string& content) const;
  /// One line of metrics.jsonl (writer only).
  void append_metrics(const StepRecord& record);

 private:
  std::string output_, checkpoint_path_, metrics_path_;
  bool writer_;
  std::ofstream metrics_;
};

}  // namespace retriever
}  // namespace gradcache
