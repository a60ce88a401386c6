// A training run (gradcache train) as one object: its setup (train/run_setup.cpp: machine,
// directory, pretrained model, data, chunk sizes, step) and its loop, checkpoints and summary
// (train/trainer.cpp). Private to those two files; train() (trainer.h) is the public entry.
#pragma once

#include "retriever/data/data_fingerprint.h"
#include "retriever/run/progress.h"
#include "retriever/run/run_directory.h"
#include "retriever/train/model_selection.h"
#include "retriever/train/run_evaluation.h"
#include "retriever/train/trainer.h"
#include "retriever/train/training_data.h"
#include "retriever/train/training_state.h"
#include "retriever/train/training_step.h"

#include <chrono>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

namespace gradcache {
namespace retriever {

class TrainingRun {
 public:
  using Clock = std::chrono::steady_clock;
  static double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

  TrainingRun(TrainConfig config, const TrainOptions& options) : config_(std::move(config)), options_(options) {}
  TrainResult execute();

 private:
  void set_up_machine();
  void open_directory();
  void load_pretrained_model();
  void load_data();
  void fingerprint_data();
  void check_resumed_position() const;
  void choose_chunk_sizes();
  void build_step();
  int64_t count_steps() const;
  void train_loop();
  /// Fills `times`' step phases and update_s.
  double train_step(const TokenBatch& queries, const TokenBatch& passages, int64_t step, StepRecord& times);
  void count_skipped_update(int64_t step, const std::string& why);
  void record_step(StepRecord record, double loss, size_t pairs, double step_seconds, int64_t first_step,
                   Clock::time_point loop_start);
  void write_run_files();
  void save(const std::string& name = "checkpoint.pt");
  void select_on_dev();
  bool stop_requested() const;
  void log(const std::string& text) { progress_->message(text); }
  void write_summary();
  nlohmann::json selection_summary() const;
  bool writer() const { return rank_ == 0; }  // the one process that writes, logs and evaluates

  TrainConfig config_;
  TrainOptions options_;
  std::shared_ptr<distributed::ProcessGroup> group_;  // null: one process
  int rank_ = 0, world_ = 1;
  std::ostringstream silent_;  // where other ranks' progress goes
  std::unique_ptr<ProgressReporter> progress_;
  c10::Device device_{c10::kCPU};
  std::unique_ptr<RunDirectory> directory_;
  std::optional<CheckpointInfo> resumed_;
  std::optional<LoadedPretrained> pretrained_;             // --model-dir, until the model holds it
  std::optional<PretrainedModel> pretrained_description_;  // what checkpoints record of it
  std::unique_ptr<TrainingData> data_;
  std::unique_ptr<RunEvaluation> evaluation_;  // on data_'s evaluation set
  DataFingerprint data_fingerprint_;  // recorded in every checkpoint
  std::unique_ptr<TrainingModel> model_;
  std::unique_ptr<TrainingStep> step_;
  TrainProgress progress_state_;
  int64_t steps_per_epoch_ = 0;
  nlohmann::json baseline_ = nullptr;
  SelectionState selection_;   // model selection on dev data (--eval-every); rank 0's is the one
  bool stopped_early_ = false;  // --patience ran out
  int64_t skipped_in_a_row_ = 0;  // updates skipped for a non-finite loss or gradients, up to this step
  TrainResult result_;
};

}  // namespace retriever
}  // namespace gradcache
