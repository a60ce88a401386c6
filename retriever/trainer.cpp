#include "retriever/trainer.h"

#include "retriever/batching.h"
#include "retriever/evaluate.h"
#include "retriever/files.h"
#include "retriever/progress.h"
#include "retriever/task.h"
#include "retriever/threads.h"
#include "retriever/tokenizer.h"

#include <gradcache/gradcache.h>

#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>
#include <unordered_map>

namespace gradcache {
namespace retriever {
namespace fs = std::filesystem;

double lr_factor(int64_t step, int64_t total, int64_t warmup_steps) {
  if (step < warmup_steps) return static_cast<double>(step + 1) / warmup_steps;
  return static_cast<double>(total - step) / std::max<int64_t>(1, total - warmup_steps);
}

namespace {

// splitmix64: decorrelates the seeds of per-epoch and per-example generators.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A permutation that depends only on (seed, epoch), so a resumed run sees the same order.
// Fisher-Yates with mt19937_64 (std::shuffle's algorithm is implementation-defined).
std::vector<int64_t> epoch_order(size_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(mix(seed ^ mix(static_cast<uint64_t>(epoch) + 1)));
  for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
  return order;
}

void check_resume_compatible(const TrainConfig& saved, TrainConfig requested, const std::string& path) {
  if (requested.model.empty()) requested.vocab_size = saved.vocab_size;  // set by the tokenizer, not by the user
  if (requested.chunk_size_auto && saved.chunk_size_auto) {  // chosen by measurement in the first run
    requested.chunk_size = saved.chunk_size;
    requested.passage_chunk_size = saved.passage_chunk_size;
  }
  const auto a = resume_invariant(saved), b = resume_invariant(requested);
  std::string differences;
  for (const auto& item : a.items()) {
    if (b.at(item.key()) != item.value()) {
      differences += "\n  " + item.key() + ": checkpoint has " + item.value().dump() + ", now " + b.at(item.key()).dump();
    }
  }
  if (!differences.empty()) {
    throw std::invalid_argument("cannot resume " + path + " with different settings (a resumed run must compute "
                                "what the original would have):" + differences +
                                "\nDrop these flags, or start a new run with another --output.");
  }
}

// Keeps the metrics lines of steps up to `step` (a resumed run logs the later ones again).
void truncate_metrics(const std::string& path, int64_t step) {
  std::ifstream in(path);
  if (!in) return;
  std::string kept, line;
  while (std::getline(in, line)) {
    try {
      if (nlohmann::json::parse(line).value("step", int64_t{0}) <= step) kept += line + "\n";
    } catch (const std::exception&) {  // a torn last line from a crash: drop it
    }
  }
  write_file_atomic(path, kept);
}

class Run {
 public:
  Run(TrainConfig config, const TrainOptions& options) : config_(std::move(config)), options_(options) {}
  TrainResult execute();

 private:
  void prepare_output();
  void prepare_data();
  void prepare_model();
  void choose_chunk_sizes();
  void build_cache();
  std::vector<int64_t> batch_examples(const std::vector<int64_t>& order) const;
  TokenBatch queries_of(const std::vector<int64_t>& examples) const;
  TokenBatch passages_of(const std::vector<int64_t>& examples, int64_t epoch) const;
  double train_step(const TokenBatch& queries, const TokenBatch& passages, int64_t step);
  double step_full(const TokenBatch& queries, const TokenBatch& passages);
  double step_accumulate(const TokenBatch& queries, const TokenBatch& passages);
  at::Tensor encode(const gradcache::Model& model, const TokenBatch& batch);
  void backward(const at::Tensor& loss);
  void save();
  bool stop_requested() const;
  void log(const std::string& text) { progress_->message(text); }
  std::optional<RetrievalMetrics> evaluate_now(const char* what);
  bool writer() const { return rank_ == 0; }  // the one process that writes, logs and evaluates

  TrainConfig config_;
  TrainOptions options_;
  const distributed::ProcessGroup* group_ = nullptr;  // null: one process
  int rank_ = 0, world_ = 1;
  std::ostringstream silent_;  // where other ranks' progress goes
  std::unique_ptr<ProgressReporter> progress_;
  std::string checkpoint_path_, metrics_path_;
  c10::Device device_{c10::kCPU};
  std::optional<CheckpointInfo> resumed_;

  TaskData task_;
  std::optional<TokenizedEvalSet> eval_set_;
  std::optional<Tokenizer> tokenizer_;
  std::string tokenizer_bytes_;
  std::vector<std::vector<int64_t>> query_tokens_, passage_tokens_;
  std::vector<std::vector<int64_t>> positives_, negatives_;  // per example: passage rows

  std::optional<BiEncoder> model_;
  std::unique_ptr<torch::optim::AdamW> optimizer_;
  std::unique_ptr<gradcache::GradCache> cache_;
  gradcache::Precision precision_ = gradcache::Precision::fp32;
  std::shared_ptr<gradcache::GradScaler> scaler_;  // fp16 only: bf16 has fp32's exponent range
  std::unique_ptr<distributed::GradientSynchronizer> sync_;  // full and accumulate modes
  gradcache::Loss loss_;
  TrainProgress progress_state_;
  nlohmann::json baseline_ = nullptr;
  TrainResult result_;
};

void Run::prepare_output() {
  checkpoint_path_ = (fs::path(config_.output) / "checkpoint.pt").string();
  metrics_path_ = config_.metrics_out.empty() ? (fs::path(config_.output) / "metrics.jsonl").string()
                                              : config_.metrics_out;
  if (options_.resume) {
    if (!fs::exists(checkpoint_path_)) {
      throw std::invalid_argument("--resume: " + config_.output + " holds no checkpoint.pt to resume from");
    }
    resumed_ = read_checkpoint_info(checkpoint_path_);
    if (resumed_->world_size != world_) {
      throw std::invalid_argument(checkpoint_path_ + " was saved by " + std::to_string(resumed_->world_size) +
                                  " process(es); resume it with as many (now " + std::to_string(world_) + ")");
    }
    check_resume_compatible(resumed_->config, config_, checkpoint_path_);
    config_ = resumed_config(resumed_->config, config_);  // e.g. chunk sizes measured by the first run
    progress_state_ = resumed_->progress;
    baseline_ = resumed_->baseline;
    if (writer()) truncate_metrics(metrics_path_, progress_state_.step);
  } else if (fs::exists(checkpoint_path_) && !options_.overwrite) {
    throw std::invalid_argument(config_.output + " already holds a training run (checkpoint.pt). Pass --resume to "
                                "continue it, --overwrite to start again, or choose another --output.");
  } else if (writer()) {
    fs::create_directories(config_.output);
    std::ofstream(metrics_path_, std::ios::trunc);
  }
}

void Run::prepare_data() {
  task_ = load_task(config_);
  if (task_.train.empty()) throw std::invalid_argument("no training examples");
  // The tokenizer: the checkpoint's, the user's, or one trained on the training texts.
  if (resumed_) {
    tokenizer_ = Tokenizer::from_serialized(resumed_->tokenizer);
  } else if (!config_.tokenizer.empty()) {
    tokenizer_ = Tokenizer::load(config_.tokenizer);
  } else if (!writer()) {  // rank 0 trains it (deterministic, but once is enough)
    group_->barrier();
    tokenizer_ = Tokenizer::load((fs::path(config_.output) / "tokenizer.model").string());
  } else {
    std::vector<std::string> texts;
    for (const auto& ex : task_.train) {
      texts.push_back(ex.query);
      texts.insert(texts.end(), ex.positives.begin(), ex.positives.end());
      texts.insert(texts.end(), ex.negatives.begin(), ex.negatives.end());
    }
    TokenizerTrainOptions options;
    options.vocab_size = static_cast<int>(config_.vocab_size);
    const auto start = std::chrono::steady_clock::now();
    tokenizer_ = Tokenizer::train(texts, options, (fs::path(config_.output) / "tokenizer.model").string());
    log("trained a " + std::to_string(tokenizer_->vocab_size()) + "-piece tokenizer in " +
        std::to_string(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()).substr(0, 4) +
        " s");
    if (group_) group_->barrier();
  }
  tokenizer_bytes_ = tokenizer_->serialized();
  if (config_.model.empty()) config_.vocab_size = tokenizer_->vocab_size();
  if (!resumed_ && writer()) {
    write_file_atomic((fs::path(config_.output) / "tokenizer.model").string(), tokenizer_bytes_);
  }

  // Token ids of every query, and of every distinct passage once.
  std::unordered_map<std::string, int64_t> passage_row;
  auto passage = [&](const std::string& text) {
    auto [it, inserted] = passage_row.emplace(text, static_cast<int64_t>(passage_tokens_.size()));
    if (inserted) passage_tokens_.push_back(tokenizer_->encode(text, static_cast<size_t>(config_.passage_max_len)));
    return it->second;
  };
  for (size_t i = 0; i < task_.train.size(); ++i) {
    const auto& ex = task_.train[i];
    if (config_.negatives > 0 && ex.negatives.empty()) {
      throw std::invalid_argument("--negatives " + std::to_string(config_.negatives) + ": training example " +
                                  std::to_string(i + 1) + " (query \"" + ex.query.substr(0, 60) +
                                  "\") has no negatives; drop --negatives or give every example negatives");
    }
    query_tokens_.push_back(tokenizer_->encode(ex.query, static_cast<size_t>(config_.query_max_len)));
    positives_.emplace_back();
    for (const auto& p : ex.positives) positives_.back().push_back(passage(p));
    negatives_.emplace_back();
    if (config_.negatives > 0) {
      for (const auto& n : ex.negatives) negatives_.back().push_back(passage(n));
    }
  }
  if (task_.eval) {
    eval_set_ = tokenize_eval_set(task_.eval->name, task_.eval->corpus, task_.eval->queries, task_.eval->qrels,
                                  *tokenizer_, static_cast<size_t>(config_.query_max_len),
                                  static_cast<size_t>(config_.passage_max_len));
    if (eval_set_->unknown_docs > 0) {
      log("evaluation: " + std::to_string(eval_set_->unknown_docs) + " judged documents are not in the corpus (ignored)");
    }
  }
}

void Run::prepare_model() {
  torch::manual_seed(config_.seed);
  if (resumed_) {
    model_ = load_model(checkpoint_path_, *resumed_);
  } else if (!config_.model.empty()) {
    model_ = BiEncoder::torchscript(config_.model, config_.untie);
  } else {
    model_ = build_model(config_);
  }
  model_->to(device_);
  model_->train(true);
  // Every rank starts from the same weights (same seed); dropout then draws per rank.
  if (world_ > 1 && !resumed_) torch::manual_seed(mix(config_.seed ^ mix(static_cast<uint64_t>(rank_))));
  optimizer_ = std::make_unique<torch::optim::AdamW>(
      model_->parameters(), torch::optim::AdamWOptions(config_.lr).weight_decay(config_.weight_decay));
  precision_ = gradcache::parse_precision(config_.precision);
  if (precision_ == gradcache::Precision::fp16) {
    auto options = gradcache::GradScalerOptions();
    if (group_) options.agree_found_inf(distributed::any_rank(*group_));  // all ranks skip together
    scaler_ = std::make_shared<gradcache::GradScaler>(options);
  }
  if (resumed_) load_training_state(checkpoint_path_, *optimizer_, device_, rank_, scaler_.get());

  auto options = gradcache::ContrastiveLossOptions().temperature(config_.temperature);
  if (config_.loss == "symmetric") {
    loss_ = gradcache::SymmetricContrastiveLoss(options);
  } else {
    loss_ = gradcache::SimpleContrastiveLoss(options);
  }
}

// --chunk-size auto: the largest chunks whose forward and backward fit --memory-budget,
// measured on the first batch, for each side. Chosen once: a resumed run keeps them.
void Run::choose_chunk_sizes() {
  if (!config_.chunk_size_auto || resumed_) return;
  const auto order = epoch_order(task_.train.size(), config_.seed, 0);
  const auto examples = batch_examples(order);
  gradcache::GradCacheOptions options;
  options.split_input_fn(split_and_trim).precision(precision_);
  // Probe with the longest texts first: chunks are the first rows, and the longest cost most.
  auto longest_first = [](TokenBatch batch) {
    const auto order = batch.at("attention_mask").sum(1).argsort(/*dim=*/0, /*descending=*/true);
    for (auto& [name, t] : batch) t = t.index_select(0, order);
    return batch;
  };
  const auto q = gradcache::find_chunk_size(model_->query_model(), longest_first(queries_of(examples)),
                                            config_.memory_budget, options);
  const auto p = gradcache::find_chunk_size(model_->passage_model(), longest_first(passages_of(examples, 0)),
                                            config_.memory_budget, options);
  config_.chunk_size = q.chunk_size;
  config_.passage_chunk_size = p.chunk_size;
  log("chunk size auto (budget " + std::to_string(config_.memory_budget >> 20) + " MiB): " +
      std::to_string(q.chunk_size) + " queries (measured peak " + std::to_string(q.measured_peak >> 20) + " MiB), " +
      std::to_string(p.chunk_size) + " passages (" + std::to_string(p.measured_peak >> 20) + " MiB)");
}

void Run::build_cache() {
  if (group_ && config_.mode != "cache") {
    sync_ = std::make_unique<distributed::GradientSynchronizer>(*group_);
    if (config_.mode == "full") loss_ = distributed::gather_input_tensor(*group_, loss_);  // the global batch
  }
  if (config_.mode != "cache") return;
  const int64_t passage_chunk = config_.passage_chunk_size > 0 ? config_.passage_chunk_size : config_.chunk_size;
  auto options = gradcache::GradCacheOptions()
                     .split_input_fn(config_.chunk_tokens > 0 ? split_by_tokens(config_.chunk_tokens) : split_and_trim)
                     .retain_chunks(config_.retain_chunks)
                     .memory_budget(config_.retain_memory)
                     .precision(precision_)
                     .scaler(scaler_);
  std::vector<gradcache::Model> models{model_->query_model(), model_->passage_model()};
  std::vector<int64_t> chunk_sizes{config_.chunk_size, passage_chunk};
  if (group_) {
    cache_ = std::make_unique<distributed::DistributedGradCache>(*group_, models, chunk_sizes, loss_, options);
  } else {
    cache_ = std::make_unique<gradcache::GradCache>(models, chunk_sizes, loss_, options);
  }
}

// The examples of the next batch; ordered by query length (less padding per chunk) unless
// in accumulate mode, where the order decides which examples share a sub-batch.
std::vector<int64_t> Run::batch_examples(const std::vector<int64_t>& order) const {
  const auto begin = static_cast<size_t>(progress_state_.batch_in_epoch * config_.batch_size);
  std::vector<int64_t> examples(order.begin() + begin,
                                order.begin() + std::min(order.size(), begin + static_cast<size_t>(config_.batch_size)));
  if (config_.sort_by_length && config_.mode != "accumulate") examples = sorted_by_length(query_tokens_, examples);
  if (world_ == 1) return examples;
  const size_t n = examples.size();  // this rank's share of the global batch
  return std::vector<int64_t>(examples.begin() + n * rank_ / world_, examples.begin() + n * (rank_ + 1) / world_);
}

TokenBatch Run::queries_of(const std::vector<int64_t>& examples) const {
  auto batch = pad_batch(query_tokens_, examples);
  for (auto& [name, t] : batch) t = t.to(device_);
  return batch;
}

// Each query's positive, then its hard negatives (stride 1 + k), drawn from a generator that
// depends only on (seed, epoch, example): a resumed run draws the same passages.
TokenBatch Run::passages_of(const std::vector<int64_t>& examples, int64_t epoch) const {
  std::vector<int64_t> rows;
  for (auto e : examples) {
    std::mt19937_64 rng(mix(config_.seed ^ mix((static_cast<uint64_t>(epoch) << 32) ^ static_cast<uint64_t>(e))));
    const auto& pos = positives_[e];
    rows.push_back(pos[rng() % pos.size()]);
    auto negs = negatives_[e];
    for (int64_t k = 0; k < config_.negatives; ++k) {
      if (static_cast<int64_t>(negs.size()) >= config_.negatives) {  // without replacement
        std::swap(negs[k], negs[k + rng() % (negs.size() - k)]);
        rows.push_back(negs[k]);
      } else {  // too few: with replacement, as Tevatron does
        rows.push_back(negs[rng() % negs.size()]);
      }
    }
  }
  auto batch = pad_batch(passage_tokens_, rows);
  for (auto& [name, t] : batch) t = t.to(device_);
  return batch;
}

// A model call as the cache makes it: under autocast for --precision, fp32 representation.
at::Tensor Run::encode(const gradcache::Model& model, const TokenBatch& batch) {
  at::Tensor rep;
  {
    gradcache::AutocastScope autocast(precision_, device_);
    rep = model(gradcache::ModelInput(batch)).toTensor();
  }
  return gradcache::to_full_precision(rep);
}

void Run::backward(const at::Tensor& loss) {
  if (scaler_) {
    scaler_->scale(loss).backward();
  } else {
    loss.backward();
  }
}

double Run::step_full(const TokenBatch& queries, const TokenBatch& passages) {
  auto q = encode(model_->query_model(), queries);
  auto p = encode(model_->passage_model(), passages);
  auto loss = loss_({q, p});
  const double value = loss.item<double>();
  if (std::isfinite(value)) backward(loss);
  return value;
}

// Classic gradient accumulation, the paper's baseline: each sub-batch of chunk_size queries
// sees only its own passages as negatives.
double Run::step_accumulate(const TokenBatch& queries, const TokenBatch& passages) {
  const int64_t n = queries.at("input_ids").size(0);
  const int64_t group = passages.at("input_ids").size(0) / n;  // 1 + k passages per query
  double total = 0;
  for (int64_t start = 0; start < n; start += config_.chunk_size) {
    const int64_t rows = std::min(config_.chunk_size, n - start);
    TokenBatch q_sub, p_sub;
    for (const auto& [name, t] : queries) q_sub[name] = t.slice(0, start, start + rows);
    for (const auto& [name, t] : passages) p_sub[name] = t.slice(0, start * group, (start + rows) * group);
    auto q = encode(model_->query_model(), trim_padding(q_sub));
    auto p = encode(model_->passage_model(), trim_padding(p_sub));
    auto loss = loss_({q, p}) * (static_cast<double>(rows) / (n * world_));  // a mean over the global batch
    const double value = loss.item<double>();
    if (!std::isfinite(value)) return value;
    backward(loss);
    total += value;
  }
  return total;
}

double Run::train_step(const TokenBatch& queries, const TokenBatch& passages, int64_t step) {
  const int64_t total = result_.total_steps;
  const double lr = config_.lr * lr_factor(step, total, static_cast<int64_t>(config_.warmup * total));
  for (auto& group : optimizer_->param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  optimizer_->zero_grad();
  double loss = NAN;
  if (config_.mode == "cache") {
    try {
      loss = cache_->cache_step({queries, passages}).item<double>();
    } catch (const gradcache::NonFiniteLossError& e) {
      loss = e.loss();
    }
  } else {
    loss = config_.mode == "full" ? step_full(queries, passages) : step_accumulate(queries, passages);
    if (sync_) {  // sum the ranks' gradients (cache mode does it inside the step)
      sync_->start(model_->parameters());
      sync_->finish();
    }
  }
  if (!std::isfinite(loss)) {
    log("step " + std::to_string(step + 1) + ": the loss is " + std::to_string(loss) + "; the update is skipped");
    optimizer_->zero_grad();
    return loss;
  }
  // fp16: the gradients come out scaled; clip the true ones, and skip the update on overflow.
  if (scaler_) scaler_->unscale_(*optimizer_);
  if (config_.max_grad_norm > 0) torch::nn::utils::clip_grad_norm_(model_->parameters(), config_.max_grad_norm);
  if (!scaler_) {
    optimizer_->step();
    return loss;
  }
  const bool stepped = scaler_->step(*optimizer_);
  scaler_->update();
  if (!stepped) {
    log("step " + std::to_string(step + 1) + ": inf/NaN gradients (fp16 overflow); the update is skipped and "
        "the loss scale lowered to " + std::to_string(scaler_->get_scale()));
  }
  return loss;
}

void Run::save() {
  CheckpointInfo info;
  info.config = config_;
  info.tokenizer = tokenizer_bytes_;
  info.progress = progress_state_;
  info.baseline = baseline_;
  auto generators = capture_generators(device_);
  if (group_) {  // every rank's generators, so that each resumes its own dropout stream
    generators.cpu = group_->all_gather_rows(generators.cpu);
    if (generators.device.defined()) generators.device = group_->all_gather_rows(generators.device);
  }
  if (writer()) save_checkpoint(checkpoint_path_, info, *model_, *optimizer_, generators, scaler_.get());
  result_.checkpoint = checkpoint_path_;
}

// A signal may reach the ranks between different steps: they stop together, at the first
// step boundary where any of them saw it.
bool Run::stop_requested() const {
  int stop = options_.stop ? options_.stop->load() : 0;
  if (options_.stop_after_steps > 0 && progress_state_.step >= options_.stop_after_steps) stop = stop ? stop : -1;
  return group_ ? distributed::any_rank(*group_)(stop != 0) : stop != 0;
}

std::optional<RetrievalMetrics> Run::evaluate_now(const char* what) {
  if (!eval_set_ || !writer()) return std::nullopt;
  const auto start = std::chrono::steady_clock::now();
  EvalOptions options;
  options.batch_size = config_.eval_batch_size;
  options.device = device_;
  auto metrics = evaluate(*model_, *eval_set_, options);
  char line[256];
  std::snprintf(line, sizeof line, "%s: %s, %zu queries against %zu passages: R@10 %.4f  MRR@10 %.4f (%.1f s)", what,
                eval_set_->name.c_str(), metrics.queries, eval_set_->corpus.size(), metrics.recall_at_10,
                metrics.mrr_at_10, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  log(line);
  return metrics;
}

TrainResult Run::execute() {
  validate(config_);
  if (options_.group && options_.group->world_size() > 1) {
    group_ = options_.group.get();
    rank_ = group_->rank();
    world_ = group_->world_size();
  }
  device_ = c10::Device(config_.device);
  configure_threads(static_cast<int>(config_.threads), static_cast<int>(config_.blas_threads));
  if ((config_.memory_budget > 0 || config_.retain_memory > 0) && device_.is_cpu()) {
    gradcache::CpuMemoryTracker::install();  // the budgets are measured, not guessed
  }
  progress_ = std::make_unique<ProgressReporter>(writer() ? *options_.log : silent_, options_.terminal && writer(),
                                                 config_.log_every);
  const auto start = std::chrono::steady_clock::now();

  prepare_output();
  if (group_) group_->check_same("settings", distributed_invariant(config_).dump());
  prepare_data();
  prepare_model();
  choose_chunk_sizes();
  build_cache();
  if (writer()) {
    write_file_atomic((fs::path(config_.output) / "config.json").string(), nlohmann::json(config_).dump(2) + "\n");
  }

  const auto n = static_cast<int64_t>(task_.train.size());
  const int64_t steps_per_epoch = config_.keep_last ? (n + config_.batch_size - 1) / config_.batch_size
                                                    : n / config_.batch_size;
  if (steps_per_epoch == 0) {
    throw std::invalid_argument("--batch-size " + std::to_string(config_.batch_size) + " is larger than the " +
                                std::to_string(n) + " training examples; lower it or pass --keep-last");
  }
  result_.total_steps = config_.max_steps > 0 ? config_.max_steps : config_.epochs * steps_per_epoch;
  log("training on " + std::to_string(n) + " examples: " + std::to_string(result_.total_steps) + " steps of " +
      std::to_string(config_.batch_size) + " pairs, mode " + config_.mode + ", " + config_.precision + ", chunks of " +
      std::to_string(config_.chunk_size) +
      (config_.chunk_tokens > 0 ? " rows or " + std::to_string(config_.chunk_tokens) + " tokens" : "") + "; threads: " +
      describe_threads() + (world_ > 1 ? "; " + std::to_string(world_) + " processes" : ""));

  if (!resumed_) {
    if (config_.eval_baseline) {
      if (auto m = evaluate_now("untrained")) baseline_ = to_json(*m);
    }
  } else {
    log("resuming at step " + std::to_string(progress_state_.step));
  }

  std::ofstream metrics;
  if (writer()) metrics.open(metrics_path_, std::ios::app);
  std::vector<int64_t> order;
  int64_t order_epoch = -1;
  const int64_t first_step = progress_state_.step;
  const auto loop_start = std::chrono::steady_clock::now();
  while (progress_state_.step < result_.total_steps) {
    if (stop_requested()) {
      result_.interrupted = true;
      result_.stop_signal = options_.stop ? options_.stop->load() : 0;
      break;
    }
    if (order_epoch != progress_state_.epoch) {
      order = epoch_order(task_.train.size(), config_.seed, progress_state_.epoch);
      order_epoch = progress_state_.epoch;
    }
    const auto examples = batch_examples(order);
    const auto step_start = std::chrono::steady_clock::now();
    const double loss = train_step(queries_of(examples), passages_of(examples, progress_state_.epoch),
                                   progress_state_.step);
    const double step_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count();

    ++progress_state_.step;
    if (++progress_state_.batch_in_epoch == steps_per_epoch) {
      ++progress_state_.epoch;
      progress_state_.batch_in_epoch = 0;
    }
    result_.final_loss = loss;
    StepRecord record;
    record.step = progress_state_.step;
    record.total_steps = result_.total_steps;
    record.epoch = progress_state_.epoch;
    record.loss = loss;
    record.lr = optimizer_->param_groups()[0].options().get_lr();
    record.pairs_per_s = examples.size() / std::max(1e-9, step_seconds);
    record.peak_rss_mb = peak_rss_mb();
    record.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count();
    record.step -= first_step;  // rates and ETA over this process's steps
    record.total_steps -= first_step;
    progress_->update(record);
    record.step += first_step;
    record.total_steps += first_step;
    if (writer() && (progress_state_.step % config_.log_every == 0 || progress_state_.step == result_.total_steps)) {
      metrics << nlohmann::json{{"step", record.step},       {"epoch", record.epoch},
                                {"loss", record.loss},       {"lr", record.lr},
                                {"pairs_per_s", record.pairs_per_s}, {"peak_rss_mb", record.peak_rss_mb},
                                {"elapsed_s", record.elapsed_s}}
                     .dump()
              << std::endl;
    }
    if (config_.save_every > 0 && progress_state_.step % config_.save_every == 0) save();
  }
  progress_->finish();
  save();
  result_.progress = progress_state_;
  if (result_.interrupted) {
    log("stopped at step " + std::to_string(progress_state_.step) + "; checkpoint saved to " + checkpoint_path_ +
        "; continue with --resume");
  } else {
    result_.trained = evaluate_now("trained");
    if (!baseline_.is_null()) result_.untrained = metrics_from_json(baseline_);
  }
  result_.eval_name = eval_set_ ? eval_set_->name : "";
  result_.config = config_;
  result_.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result_.peak_rss_mb = peak_rss_mb();

  nlohmann::json summary{{"steps", progress_state_.step},     {"total_steps", result_.total_steps},
                         {"interrupted", result_.interrupted}, {"final_loss", result_.final_loss},
                         {"wall_s", result_.wall_seconds},     {"peak_rss_mb", result_.peak_rss_mb},
                         {"mode", config_.mode},               {"precision", config_.precision},
                         {"batch_size", config_.batch_size},
                         {"chunk_size", config_.chunk_size},   {"eval", result_.eval_name},
                         {"world_size", world_},               {"untrained", baseline_},
                         {"trained", result_.trained ? to_json(*result_.trained) : nlohmann::json(nullptr)}};
  if (writer()) write_file_atomic((fs::path(config_.output) / "summary.json").string(), summary.dump(2) + "\n");
  return result_;
}

}  // namespace

TrainResult train(TrainConfig config, const TrainOptions& options) { return Run(std::move(config), options).execute(); }

}  // namespace retriever
}  // namespace gradcache
