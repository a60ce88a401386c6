// The training loop, checkpoints and summary of a run (its setup: train/run_setup.cpp). What it
// stands on lives in its own files: the run directory (run/run_directory.h), the data and its
// batches (train/training_data.h), the model, optimizer and loss (train/training_state.h), and the
// step of each mode (train/training_step.h).
#include "retriever/train/run.h"

#include "retriever/config/matryoshka_settings.h"
#include "retriever/data/data_fingerprint.h"
#include "retriever/launch/threads.h"
#include "retriever/model/batching.h"
#include "retriever/model/encode_all.h"
#include "retriever/run/progress.h"
#include "retriever/run/run_directory.h"
#include "retriever/search/evaluate.h"
#include "retriever/train/batch_prefetch.h"
#include "retriever/train/curves.h"
#include "retriever/train/model_selection.h"
#include "retriever/train/run_evaluation.h"
#include "retriever/train/training_data.h"
#include "retriever/train/training_state.h"
#include "retriever/train/training_step.h"

#include <gradcache/chunk_size.h>
#include <gradcache/grad_cache.h>
#include <gradcache/memory.h>

#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>

namespace gradcache {
namespace retriever {

double TrainingRun::train_step(const TokenBatch& queries, const TokenBatch& passages, int64_t step, StepRecord& times) {
  const int64_t total = result_.total_steps;
  const auto& t = config_.training;
  model_->prepare_step(t.lr * lr_factor(step, total, static_cast<int64_t>(t.warmup * total)));
  const double loss = step_->run(queries, passages);
  times.forward_s = step_->last_times().forward_s;
  times.loss_s = step_->last_times().loss_s;
  times.backward_s = step_->last_times().backward_s;
  const auto update_start = Clock::now();
  struct UpdateTime {  // on every return below
    double& out;
    Clock::time_point start;
    ~UpdateTime() { out = seconds_since(start); }
  } update_time{times.update_s, update_start};
  if (!std::isfinite(loss)) {
    log("step " + std::to_string(step + 1) + ": the loss is " + std::to_string(loss) + "; the update is skipped");
    model_->optimizer().zero_grad();
    count_skipped_update(step, "the loss was " + std::to_string(loss));
    return loss;
  }
  if (model_->update(config_.training.max_grad_norm) == UpdateOutcome::skipped_overflow) {
    log("step " + std::to_string(step + 1) + ": inf/NaN gradients (fp16 overflow); the update is skipped and "
        "the loss scale lowered to " + std::to_string(model_->scaler()->get_scale()));
    count_skipped_update(step, "the gradients overflowed fp16 down to a loss scale of " +
                                   std::to_string(model_->scaler()->get_scale()));
    return loss;
  }
  skipped_in_a_row_ = 0;
  return loss;
}

// A run whose updates are skipped --max-skipped-updates times in a row has diverged (or cannot
// start): it stops with an error rather than run on and write a model that never trained. Every
// rank counts the same skips (the skip is decided for all ranks at once), so all stop together.
void TrainingRun::count_skipped_update(int64_t step, const std::string& why) {
  const int64_t limit = config_.training.max_skipped_updates;
  if (++skipped_in_a_row_ < limit || limit == 0) return;
  const bool saved = std::filesystem::exists(directory_->checkpoint_path());
  throw std::runtime_error(
      "steps " + std::to_string(step + 2 - limit) + " to " + std::to_string(step + 1) + " skipped their update, " +
      std::to_string(limit) + " updates in a row (" + why + "): the run has diverged; " +
      (saved ? "its last checkpoint, " + directory_->checkpoint_path() + ", is kept" : "no checkpoint was written") +
      ". Try a lower --lr, a higher --temperature or --precision fp32; --max-skipped-updates sets how many skips "
      "in a row stop a run (0: never)");
}

void TrainingRun::record_step(StepRecord record, double loss, size_t pairs, double step_seconds, int64_t first_step,
                      Clock::time_point loop_start) {
  result_.final_loss = loss;
  record.step = progress_state_.step;
  record.total_steps = result_.total_steps;
  record.epoch = progress_state_.epoch;
  record.loss = loss;
  record.lr = model_->lr();
  record.pairs_per_s = pairs / std::max(1e-9, step_seconds);
  record.peak_rss_mb = peak_rss_mb();
  record.elapsed_s = seconds_since(loop_start);
  record.first_step = first_step;
  progress_->update(record);
  if (progress_state_.step % config_.output.log_every == 0 || progress_state_.step == result_.total_steps) {
    directory_->append_metrics(record);
  }
}

void TrainingRun::train_loop() {
  // The batches of the current epoch, prepared --prefetch ahead on a thread that shares `order`.
  std::shared_ptr<const EpochOrder> order;
  std::optional<BatchPrefetch> batches;
  int64_t order_epoch = -1;
  const int64_t first_step = progress_state_.step;
  const auto loop_start = Clock::now();
  while (progress_state_.step < result_.total_steps && !stopped_early_) {
    if (stop_requested()) {
      result_.interrupted = true;
      result_.stop_signal = options_.stop ? options_.stop->load() : 0;
      break;
    }
    if (order_epoch != progress_state_.epoch) {  // a permutation per epoch, the same on resume
      batches.reset();
      order = std::make_shared<const EpochOrder>(
          data_->order_of_epoch(progress_state_.epoch, [this](const std::string& text) { log(text); }));
      order_epoch = progress_state_.epoch;
      batches.emplace([data = data_.get(), order, epoch = order_epoch](int64_t b) { return data->prepare_batch(*order, b, epoch); },
                      progress_state_.batch_in_epoch, steps_per_epoch_, config_.machine.prefetch);
    }
    const auto step_start = Clock::now();
    StepRecord times;
    const PreparedBatch batch = batches->next();  // waits only when tokenizing is slower than the steps
    const auto queries = on_device(batch.queries, device_);
    const auto passages = on_device(batch.passages, device_);
    const auto& examples = batch.examples;
    times.collate_s = seconds_since(step_start);
    times.dataset = batch.dataset;
    const double loss = train_step(queries, passages, progress_state_.step, times);
    const double step_seconds = seconds_since(step_start);
    ++progress_state_.step;
    if (++progress_state_.batch_in_epoch == steps_per_epoch_) {
      ++progress_state_.epoch;
      progress_state_.batch_in_epoch = 0;
    }
    record_step(times, loss, examples.size(), step_seconds, first_step, loop_start);
    if (config_.selection.eval_every > 0 &&
        (progress_state_.step % config_.selection.eval_every == 0 || progress_state_.step == result_.total_steps)) {
      select_on_dev();
    }
    if (config_.output.save_every > 0 && progress_state_.step % config_.output.save_every == 0) save();
  }
  progress_->finish();
}

// The first files of the run. A new run claims the directory only now, with everything checked
// (run/run_directory.h: an earlier run there is untouched until here).
void TrainingRun::write_run_files() {
  const std::string config = nlohmann::json(config_).dump(2) + "\n";
  if (resumed_) {
    directory_->write("config.json", config);
    return;
  }
  stop_if_signalled(options_.stop);  // a signal during the set-up: exit 128 + signal, nothing written
  const bool sentencepiece = data_->tokenizer().kind() == TokenizerKind::SentencePiece;
  directory_->claim({{sentencepiece ? "tokenizer.model" : "tokenizer.json", data_->tokenizer().serialized()},
                     {"config.json", config}});
}

void TrainingRun::save(const std::string& name) {
  CheckpointInfo info;
  info.config = config_;
  info.tokenizer = data_->tokenizer().serialized();
  info.pretrained = pretrained_description_;
  info.progress = progress_state_;
  info.baseline = baseline_;
  info.data = data_fingerprint_;
  if (config_.selection.eval_every > 0) info.selection = to_json(selection_);
  auto generators = capture_generators(device_);
  if (group_) {  // every rank's generators, so that each resumes its own dropout stream
    generators.cpu = group_->all_gather_rows(generators.cpu);
    if (generators.device.defined()) generators.device = group_->all_gather_rows(generators.device);
  }
  if (writer()) {
    save_checkpoint(directory_->path(name), info, model_->model(), model_->optimizer(), generators,
                    model_->scaler().get());
  }
  if (name != "checkpoint.pt") return;
  result_.checkpoint = directory_->checkpoint_path();
  const std::string notice = directory_->settle();  // the replaced run's files are not needed now
  if (!notice.empty()) log("notice: " + notice);
}

// Rank 0 evaluates on the dev data while the others wait for its decisions in any_rank
// (within --dist-timeout); then all save best.pt together (save gathers every rank's generators).
void TrainingRun::select_on_dev() {
  const int64_t step = progress_state_.step;
  bool improved = false, stop = false;
  if (writer()) {
    std::string line;
    const auto metrics = evaluate_and_describe(model_->model(), *data_->dev_set(), evaluation_->options(),
                                               "step " + std::to_string(step), line);
    directory_->append_dev_metrics(step, to_json(metrics));
    improved = record_evaluation(selection_, metric_value(metrics, config_.selection.metric), step);
    stop = patience_exhausted(selection_, config_.selection.patience);
    log(line + (improved ? "; best so far, saved to best.pt"
                         : "; best " + config_.selection.metric + " " + std::to_string(selection_.best_value) +
                               " at step " + std::to_string(selection_.best_step)));
  }
  if (group_) {
    improved = distributed::any_rank(*group_)(improved);
    stop = distributed::any_rank(*group_)(stop);
  }
  if (improved) save("best.pt");
  if (!stop) return;
  stopped_early_ = true;
  log("early stop at step " + std::to_string(step) + ": dev " + config_.selection.metric + " has not improved for " +
      std::to_string(config_.selection.patience) + " evaluations (--patience); best " +
      std::to_string(selection_.best_value) + " at step " + std::to_string(selection_.best_step) + ", in " +
      directory_->path("best.pt"));
}

// A signal may reach the ranks between different steps: they stop together, at the first
// step boundary where any of them saw it.
bool TrainingRun::stop_requested() const {
  int stop = options_.stop ? options_.stop->load() : 0;
  if (options_.stop_after_steps > 0 && progress_state_.step >= options_.stop_after_steps) stop = stop ? stop : -1;
  return group_ ? distributed::any_rank(*group_)(stop != 0) : stop != 0;
}

nlohmann::json TrainingRun::selection_summary() const {
  auto j = to_json(selection_);
  j["checkpoint"] = selection_.best_step > 0 ? nlohmann::json(directory_->path("best.pt")) : nlohmann::json(nullptr);
  j["patience"] = config_.selection.patience;
  return j;
}

void TrainingRun::write_summary() {
  const auto& c = config_;
  // clang-format off: two keys a line
  nlohmann::json summary{{"steps", progress_state_.step},              {"total_steps", result_.total_steps},
                         {"interrupted", result_.interrupted},          {"final_loss", result_.final_loss},
                         {"wall_s", result_.wall_seconds},              {"peak_rss_mb", result_.peak_rss_mb},
                         {"mode", to_string(c.batching.mode)},          {"precision", to_string(c.machine.precision)},
                         {"batch_size", c.batching.batch_size},         {"chunk_size", c.batching.chunk_size},
                         {"eval", result_.eval_name},                   {"world_size", world_},
                         {"untrained", baseline_},                      {"stopped_early", stopped_early_},
                         {"selection", c.selection.eval_every > 0 ? selection_summary() : nlohmann::json(nullptr)},
                         {"bm25", result_.bm25 ? to_json(*result_.bm25) : nlohmann::json(nullptr)},
                         {"trained", result_.trained ? to_json(*result_.trained) : nlohmann::json(nullptr)},
                         {"matryoshka", c.matryoshka.enabled() ? to_json(result_.trained_prefixes)
                                                               : nlohmann::json(nullptr)}};
  // clang-format on
  if (result_.trained_reranked) {  // --similarity mlp: the second stage's row
    summary["trained_reranked"] = to_json(*result_.trained_reranked);
    summary["rerank_k"] = config_.similarity.rerank_k;
  }
  if (const auto counts = data_->batches_per_dataset(progress_state_.step); !counts.empty()) {
    auto& per_dataset = summary["batches_per_dataset"] = nlohmann::json::object();  // several --train-file
    for (const auto& [name, batches] : counts) per_dataset[name] = batches;
  }
  directory_->write("summary.json", summary.dump(2) + "\n");
}

TrainResult TrainingRun::execute() {
  validate(config_);
  const auto start = Clock::now();
  set_up_machine();
  for (const auto& warning : setting_warnings(config_)) log("warning: " + warning);
  open_directory();
  if (group_) group_->check_same("settings", distributed_invariant(config_).dump());
  load_pretrained_model();
  if (config_.encoder.is_pretrained()) result_.untrained_name = "zero-shot";  // not untrained: pretrained
  load_data();
  fingerprint_data();
  model_ = std::make_unique<TrainingModel>(
      config_, device_, group_.get(), rank_,
      TrainingModel::Resume{resumed_ ? &*resumed_ : nullptr, directory_->checkpoint_path()},
      pretrained_ ? &*pretrained_ : nullptr);
  pretrained_.reset();
  if (!config_.encoder.trainable().everything()) log(describe(model_->trainable(), config_.encoder.trainable()));
  for (const auto& script : model_->model().scripts())
    check_script_vocabulary(*script, data_->tokenizer().vocab_size(), config_.encoder.torchscript,
                            config_.tokenizer.file.empty() ? "trained by this run" : config_.tokenizer.file);
  choose_chunk_sizes();
  build_step();

  const auto n = static_cast<int64_t>(data_->size());
  steps_per_epoch_ = data_->batches_per_epoch(config_.training.keep_last);
  result_.total_steps = count_steps();
  check_resumed_position();
  log("training on " + std::to_string(n) + " examples: " + std::to_string(result_.total_steps) + " steps of " +
      std::to_string(config_.batching.batch_size) + " pairs, mode " + to_string(config_.batching.mode) + ", " +
      to_string(config_.machine.precision) + ", " + describe_passes(config_.batching) + "; threads: " + describe_threads() +
      (world_ > 1 ? "; " + std::to_string(world_) + " processes" : ""));
  if (resumed_) {
    log("resuming at step " + std::to_string(progress_state_.step));
  } else if (config_.eval.baseline) {
    const auto m = writer() ? evaluation_->model(model_->model(), result_.untrained_name) : std::nullopt;
    if (m) baseline_ = to_json(*m);
  }
  write_run_files();
  train_loop();
  save();
  result_.progress = progress_state_;
  if (result_.interrupted) {
    log("stopped at step " + std::to_string(progress_state_.step) + "; checkpoint saved to " +
        directory_->checkpoint_path() + "; continue with --resume");
  } else {
    try {
      if (writer())
        result_.trained = evaluation_->trained(model_->model(), &result_.trained_reranked, &result_.trained_prefixes);
      if (result_.trained) result_.bm25 = evaluation_->bm25();
    } catch (const StoppedBySignal& stopped) {  // the trained model is saved: only its evaluation is lost
      result_.interrupted = true;
      result_.stop_signal = stopped.signal();
      log(std::string(stopped.what()) + "; the trained model is in " + directory_->checkpoint_path());
    }
    if (!baseline_.is_null()) result_.untrained = metrics_from_json(baseline_);
  }
  result_.eval_name = data_->eval_set() ? data_->eval_set()->name : "";
  result_.config = config_;
  result_.stopped_early = stopped_early_;
  if (selection_.best_step > 0) result_.best = selection_summary();
  result_.wall_seconds = seconds_since(start);
  result_.peak_rss_mb = peak_rss_mb();
  write_summary();
  try {  // curves.png: a notice, never an error (the run's results are in its other files)
    if (writer())
      plot_training_curves({{run_name(config_.output.dir), directory_->metrics_path()}}, directory_->path("curves.png"),
                           config_.selection.metric);
  } catch (const std::exception& e) {
    log("notice: no curves.png: " + std::string(e.what()));
  }
  return result_;
}


TrainResult train(TrainConfig config, const TrainOptions& options) {
  return TrainingRun(std::move(config), options).execute();
}

}  // namespace retriever
}  // namespace gradcache
