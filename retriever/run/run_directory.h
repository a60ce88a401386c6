// Where a training run keeps its files (config.output.dir): config.json, tokenizer.model,
// checkpoint.pt, metrics.jsonl and summary.json. Only the writer (rank 0) writes; files are
// replaced atomically, so none is ever left torn.
//
// A directory never holds files of two runs. A new run writes nothing there until it has
// checked all it can (claim()); then it moves the files of the run it replaces (--overwrite)
// into OUTPUT/.replaced-PID, checkpoint.pt first, and writes its own. Once its first
// checkpoint is saved (settle()) the old files are deleted; a run that fails before that
// removes its own files and puts the old ones back (the destructor), and a killed one leaves
// them there, which the next run names.
#pragma once

#include "files/directory_lock.h"
#include "retriever/config/train_config.h"
#include "retriever/run/checkpoint.h"
#include "retriever/run/progress.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace gradcache {
namespace retriever {

class RunDirectory {
 public:
  /// `writer`: whether this process writes (rank 0); the others only read.
  RunDirectory(const TrainConfig& config, bool writer);

  /// Restores the replaced run's files if claim() was called and settle() was not: the new
  /// run failed before its first checkpoint.
  ~RunDirectory();
  RunDirectory(const RunDirectory&) = delete;
  RunDirectory& operator=(const RunDirectory&) = delete;

  /// A new run: the writer creates the output directory and locks it (DirectoryLock: another
  /// process's train, resume or overwrite of it is refused while this run lives); refuses a
  /// directory that holds a run unless `overwrite` (also one that a killed --overwrite left in
  /// OUTPUT/.replaced-PID), and a --metrics-out that names a directory, lies in a missing one,
  /// is one of the run's inputs or (without `overwrite`) holds something; writes nothing else.
  void start(bool overwrite);
  /// A resumed run (the writer locks the directory, as start() does): the checkpoint's record,
  /// refused unless it was saved by `world_size` processes with settings that compute what
  /// `requested` does, and unless config.json and
  /// the tokenizer file beside it are that checkpoint's run's. Metrics lines after the
  /// checkpoint's step are dropped (the run logs them again).
  CheckpointInfo resume(const TrainConfig& requested, int world_size);
  /// A new run, once everything has been checked (writer only): writes `named_files` (name, content)
  /// to temporary files, so that a full disk fails here with the old run untouched; moves the
  /// earlier run's files aside; then puts the new ones in place.
  void claim(const std::vector<std::pair<std::string, std::string>>& named_files);
  /// Where this process may write a file before the claim (a tokenizer it trains): a scratch
  /// file outside the output directory, removed with this object.
  std::string scratch_path(const std::string& name);
  /// The new run's first checkpoint is saved: deletes the replaced run's files. Returns a
  /// notice when they cannot be removed (the run goes on), else "".
  std::string settle();

  const std::string& checkpoint_path() const { return checkpoint_path_; }
  /// OUTPUT/name.
  std::string path(const std::string& name) const;
  /// Where the metrics lines go: OUTPUT/metrics.jsonl or --metrics-out.
  const std::string& metrics_path() const { return metrics_path_; }
  /// Writes OUTPUT/name (writer only).
  void write(const std::string& name, const std::string& content) const;
  /// One line of metrics.jsonl (writer only); throws if it cannot be written.
  void append_metrics(const StepRecord& record);
  /// A dev evaluation's line of metrics.jsonl, {"dev": {metrics}, "step": N} (writer only);
  /// throws if it cannot be written. Readers tell the two kinds of line apart by "dev".
  void append_dev_metrics(int64_t step, const nlohmann::json& metrics);

 private:
  void append_line(const std::string& line);

  /// The files of a run in OUTPUT, checkpoint.pt first (without it, no run is resumable).
  std::vector<std::string> run_files() const;
  /// OUTPUT/.replaced-PID directories of processes that are gone (killed --overwrite runs)
  /// that hold a checkpoint; the writer removes those that do not (nothing to resume there).
  std::vector<std::string> stale_replaced() const;
  void check_files_of(const CheckpointInfo& info) const;
  /// The command that moves a killed --overwrite's aside files back into OUTPUT.
  std::string move_back(const std::string& replaced) const;
  void restore_replaced() noexcept;

  std::string output_, checkpoint_path_, metrics_path_;
  std::string replaced_;    // OUTPUT/.replaced-PID while it holds the replaced run's files
  std::vector<std::string> scratch_;
  bool metrics_elsewhere_;  // --metrics-out given
  std::vector<std::pair<std::string, std::string>> inputs_;  // (flag, path) of the files the run reads
  bool writer_;
  bool fresh_metrics_ = false;  // a new run: the first line replaces the file's content
  bool created_ = false;        // start() made output_: removed again if the run leaves it empty
  bool claimed_ = false;        // claim() wrote the run's files and settle() has not come yet
  std::ofstream metrics_;
  files::DirectoryLock lock_;  // the writer's, from start() or resume() to the end: one writer per run
};

}  // namespace retriever
}  // namespace gradcache
