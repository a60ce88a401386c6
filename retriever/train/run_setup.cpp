// Setting a training run up: the machine, the run directory (or the run resumed), the
// pretrained model, the data, the chunk sizes and the step of the mode.
#include "retriever/train/run.h"

#include "retriever/config/matryoshka_settings.h"
#include "retriever/launch/threads.h"
#include "retriever/model/batching.h"

#include <gradcache/chunk_size.h>
#include <gradcache/grad_cache.h>
#include <gradcache/memory.h>

#include <torch/torch.h>

#include <stdexcept>

namespace gradcache {
namespace retriever {

void TrainingRun::set_up_machine() {
  if (options_.group && options_.group->world_size() > 1) {
    group_ = options_.group;
    rank_ = group_->rank();
    world_ = group_->world_size();
  }
  device_ = c10::Device(config_.machine.device);
  configure_threads(static_cast<int>(config_.machine.threads), static_cast<int>(config_.machine.blas_threads));
  if ((config_.batching.chunk_memory > 0 || config_.batching.retain_memory > 0) && device_.is_cpu()) {
    CpuMemoryTracker::install();  // the budgets are measured, not guessed
  }
  progress_ = std::make_unique<ProgressReporter>(writer() ? *options_.log : silent_, options_.terminal && writer(),
                                                 config_.output.log_every);
}

void TrainingRun::open_directory() {
  directory_ = std::make_unique<RunDirectory>(config_, writer());
  if (!options_.resume) {
    directory_->start(options_.overwrite);
    return;
  }
  resumed_ = directory_->resume(config_, world_);
  for (const auto& notice : resumed_->notices) log(directory_->checkpoint_path() + ": " + notice);
  config_ = resumed_config(resumed_->config, config_);  // e.g. chunk sizes measured by the first run
  progress_state_ = resumed_->progress;
  baseline_ = resumed_->baseline;
  if (!resumed_->selection.is_null()) selection_ = selection_from_json(resumed_->selection);
  stopped_early_ = patience_exhausted(selection_, config_.selection.patience);
}

// --model-dir: the pretrained model, read once (a resumed run's checkpoint describes it).
void TrainingRun::load_pretrained_model() {
  if (resumed_) {
    pretrained_description_ = resumed_->pretrained;
  } else if (config_.encoder.is_pretrained()) {
    pretrained_ = load_pretrained(config_.encoder.pretrained);
    torch::manual_seed(config_.training.seed);  // new adapters' A: the same for every run (and rank) of a seed
    add_adapters(*pretrained_, config_.encoder.lora);
    pretrained_description_ = pretrained_->description;
    log("pretrained model " + config_.encoder.pretrained + ": " + describe(pretrained_->description));
  }
}

void TrainingRun::load_data() {
  TrainingData::TokenizerSource tokenizer;
  tokenizer.pretrained = pretrained_description_ ? &*pretrained_description_ : nullptr;
  tokenizer.saved = resumed_ ? &resumed_->tokenizer : nullptr;
  tokenizer.trained_path = directory_->scratch_path("tokenizer.model");  // written there at the claim
  tokenizer.group = group_.get();
  tokenizer.stop = options_.stop;
  data_ = std::make_unique<TrainingData>(config_, tokenizer, BatchShare{rank_, world_},
                                         [this](const std::string& text) { log(text); });
  evaluation_ = std::make_unique<RunEvaluation>(config_, *data_, device_,
                                                [this](const std::string& text) { log(text); }, options_.stop);
  if (config_.encoder.is_builtin()) config_.tokenizer.vocab_size = data_->tokenizer().vocab_size();
}

// A resumed run must read the data the checkpoint was trained on: its position in them (epoch
// order, batch) means nothing in other data.
void TrainingRun::fingerprint_data() {
  data_fingerprint_ = fingerprint_training_data(config_.data);
  if (!resumed_) return;
  if (resumed_->data) {
    check_same_training_data(*resumed_->data, data_fingerprint_, directory_->checkpoint_path());
  } else {
    log(directory_->checkpoint_path() + " records no fingerprint of its training data (saved by an earlier "
        "gradcache): changes to the data since then cannot be detected");
  }
}

// Checked even where the fingerprint is missing (checkpoints of earlier versions): a position
// past the end of the data's epoch would index past the data.
void TrainingRun::check_resumed_position() const {
  if (!resumed_ || progress_state_.batch_in_epoch < steps_per_epoch_) return;
  throw std::invalid_argument(
      "cannot resume " + directory_->checkpoint_path() + ": it stopped before batch " +
      std::to_string(progress_state_.batch_in_epoch + 1) + " of epoch " + std::to_string(progress_state_.epoch + 1) +
      ", but the " + std::to_string(data_->size()) + " training examples now make only " +
      std::to_string(steps_per_epoch_) + " batches per epoch: the training data changed since it was saved. "
      "Resume with the original data, or start a new run on these with --overwrite (or another --output).");
}

// --chunk-size auto: the largest chunks whose forward and backward fit --chunk-memory,
// measured on the first batch, for each side. Chosen once: a resumed run keeps them.
void TrainingRun::choose_chunk_sizes() {
  if (!config_.batching.chunk_size_auto || resumed_) return;
  const auto first = data_->prepare_batch(EpochOrder::shuffled(data_->size(), config_.training.seed, 0), 0, 0);
  GradCacheOptions options;
  options.split_input_fn(split_and_trim).precision(model_->precision());
  // Probe with the longest texts first: chunks are the first rows, and the longest cost most.
  auto longest_first = [](TokenBatch batch) {
    const auto order = batch.at("attention_mask").sum(1).argsort(/*dim=*/0, /*descending=*/true);
    for (auto& [name, t] : batch) t = t.index_select(0, order);
    return batch;
  };
  auto& model = model_->model();
  const auto q = find_chunk_size(model.query_model(), longest_first(on_device(first.queries, device_)),
                                 config_.batching.chunk_memory, options);
  const auto p = find_chunk_size(model.passage_model(), longest_first(on_device(first.passages, device_)),
                                 config_.batching.chunk_memory, options);
  config_.batching.chunk_size = q.chunk_size;
  config_.batching.passage_chunk_size = p.chunk_size;
  log("chunk size auto (budget " + std::to_string(config_.batching.chunk_memory >> 20) +
      " MiB): " + std::to_string(q.chunk_size) + " queries (measured peak " + std::to_string(q.measured_peak >> 20) +
      " MiB), " + std::to_string(p.chunk_size) + " passages (" + std::to_string(p.measured_peak >> 20) + " MiB)");
}

// The step layer does the work of each mode; the trainer only picks its options.
void TrainingRun::build_step() {
  const auto& b = config_.batching;
  // sub-batches pair queries with their passages: cut by rows, never by tokens
  const bool by_tokens = b.chunk_tokens > 0 && b.mode != TrainMode::Accumulate;
  auto options = StepOptions()
                     .mode(b.mode)
                     .chunk_size(b.chunk_size)
                     .passage_chunk_size(b.passage_chunk_size)
                     .sub_batch_size(b.sub_batch_size)
                     .split_input_fn(by_tokens ? split_by_tokens(b.chunk_tokens) : split_and_trim)
                     .cache(GradCacheOptions().retain_chunks(b.retain_chunks).retain_memory(b.retain_memory))
                     .sort_passages(b.sort_by_length)
                     .precision(model_->precision())
                     .scaler(model_->scaler())
                     .group(group_)
                     .sharded_loss(model_->sharded_loss())
                     .similarity(model_->similarity())
                     .similarity_options(model_->similarity_options());
  auto& model = model_->model();
  step_ = make_training_step(model.query_model(), model.passage_model(), model_->loss(), options);
}

int64_t TrainingRun::count_steps() const {
  const auto n = static_cast<int64_t>(data_->size());
  if (steps_per_epoch_ == 0) {
    throw std::invalid_argument("--batch-size " + std::to_string(config_.batching.batch_size) + " is larger than the " +
                                std::to_string(n) + " training examples; lower it or pass --keep-last");
  }
  return config_.training.steps > 0 ? config_.training.steps : config_.training.epochs * steps_per_epoch_;
}

}  // namespace retriever
}  // namespace gradcache
