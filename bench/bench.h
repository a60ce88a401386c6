// gradcache-bench: shared pieces of the benchmark program. One header for the whole
// program: the option table, the settings of the workloads, the workloads themselves (models
// + synthetic batches + the three ways to take a training step) and the measurement helpers.
#pragma once

#include <gradcache/gradcache.h>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace gcbench {

using Json = nlohmann::ordered_json;  // keeps keys in the order they are written

// ---- command-line options -------------------------------------------------------------

/// One command-line option bound to a field of a settings struct (llama.cpp style: a table
/// of name, help and setter instead of a parser library). `get` prints the current value, so
/// the settings can be handed to a child process and shown in --help.
struct Option {
  std::string name;        ///< "--batch"
  std::string value_name;  ///< "N"; empty for a switch
  std::string help;
  std::function<void(const std::string&)> set;
  std::function<std::string()> get;
};

class OptionTable {
 public:
  void add_int(const std::string& name, int64_t* field, const std::string& help);
  void add_double(const std::string& name, double* field, const std::string& help);
  void add_string(const std::string& name, std::string* field, const std::string& help);
  void add_ints(const std::string& name, std::vector<int64_t>* field, const std::string& help);  // "64,128"
  void add_strings(const std::string& name, std::vector<std::string>* field, const std::string& help);
  void add_switch(const std::string& name, bool* field, const std::string& help);
  void append(const OptionTable& other);

  /// Applies `args` (flag [value] ...). A flag sets every option of that name, so `all
  /// --batch 256` reaches every scenario that has a batch. Throws std::invalid_argument on an
  /// unknown flag or a bad value.
  void parse(const std::vector<std::string>& args) const;
  /// "--name value" for every option, to re-create these settings in a child process.
  std::vector<std::string> to_args() const;
  std::string help() const;
  const std::vector<Option>& options() const { return options_; }

 private:
  std::vector<Option> options_;
};

// ---- workloads ------------------------------------------------------------------------

/// What is trained: a text encoder (the retriever's Transformer, one encoder shared by queries
/// and passages) on synthetic token batches, or a pair of MLPs on Gaussian vectors.
struct ModelSettings {
  std::string kind = "transformer";  ///< transformer | mlp
  int64_t dim = 64;                  ///< representation size (and Transformer width)
  int64_t layers = 2;
  int64_t heads = 4;
  int64_t ffn = 256;
  int64_t vocab = 1000;
  int64_t query_len = 16;     ///< query texts have 4..query_len tokens
  int64_t passage_len = 32;   ///< passage texts have 8..passage_len tokens
  double dropout = 0.1;
  int64_t mlp_in = 128;       ///< MLP: in -> hidden -> hidden -> dim
  int64_t mlp_hidden = 512;
  double temperature = 0.05;  ///< of the InfoNCE loss (representations are L2-normalised)
  std::string loss = "dense";  ///< dense (SimpleContrastiveLoss) | streaming (StreamingContrastiveLoss)
  int64_t tile = gradcache::kDefaultTileSize;  ///< of the streaming loss
  int64_t seed = 0;

  /// with_kind: also --model (scenarios that fix the kind leave it out).
  void add_options(OptionTable& table, bool with_kind = true);
  Json to_json() const;
};

/// A contrastive batch: N queries and their N positive passages (in-batch negatives).
struct Batch {
  gradcache::ModelInput queries, passages;
  int64_t pairs = 0;
};

/// The models of one benchmark run and the three ways to take a step with them.
class Workload {
 public:
  explicit Workload(const ModelSettings& settings);

  Batch batch(int64_t pairs, uint64_t seed) const;
  /// Chunks of an input as GradCache makes them (token chunks are trimmed to their own
  /// longest text, as the retriever's trainer does).
  std::vector<gradcache::ModelInput> split(const gradcache::ModelInput& input, int64_t chunk) const;
  /// GradCache options that split as split() does.
  gradcache::GradCacheOptions cache_options() const;
  std::vector<gradcache::Model> models() const { return {query_model_, passage_model_}; }
  const gradcache::Model& query_model() const { return query_model_; }
  const gradcache::Model& passage_model() const { return passage_model_; }
  const gradcache::Loss& loss() const { return loss_; }

  /// Every trainable parameter once (a tied encoder is one module).
  std::vector<torch::Tensor> parameters() const;
  int64_t parameter_count() const;
  void train(bool on);
  /// Gives every parameter a zero gradient, so that memory measured after this does not
  /// include the first allocation of the gradients.
  void allocate_grads();
  void zero_grads();
  std::vector<torch::Tensor> grads() const;  ///< copies
  const ModelSettings& settings() const { return settings_; }
  std::string describe() const;

  /// Plain training: the whole batch forward, the loss, one backward.
  double step_full(const Batch& batch) const;
  /// Gradient accumulation (the paper's baseline): each sub-batch of `chunk` pairs is its own
  /// contrastive batch (only its own negatives); loss scaled by rows / N, backward, next.
  double step_accumulate(const Batch& batch, int64_t chunk) const;

 private:
  ModelSettings settings_;
  std::vector<std::shared_ptr<torch::nn::Module>> modules_;
  gradcache::Model query_model_, passage_model_;
  gradcache::Loss loss_;
};

/// A GradCache that records what step 1 did (ForwardResult is only visible to a subclass):
/// how many chunks of each model kept their graph and the bytes they held; and the CPU time
/// of each step, summed over all calls.
class RecordingGradCache : public gradcache::GradCache {
 public:
  using gradcache::GradCache::GradCache;
  std::vector<int64_t> retained_chunks;  ///< per model, of the last step
  std::vector<int64_t> total_chunks;
  std::vector<int64_t> retained_bytes;
  double step1_cpu_s = 0, step2_cpu_s = 0, step3_cpu_s = 0;  ///< forward_no_grad, build_cache, the backwards

 protected:
  ForwardResult forward_no_grad(size_t model_index, const std::vector<gradcache::ModelInput>& chunks) override;
  std::vector<at::Tensor> build_cache(const std::vector<at::Tensor>& reps, const gradcache::LossArgs& loss_args,
                                      at::Tensor& loss_out) override;
  void forward_backward(size_t model_index, const std::vector<gradcache::ModelInput>& chunks,
                        const ForwardResult& forward, const at::Tensor& cached_grads) override;
  void backward_retained(size_t model_index, ForwardResult& forward, const at::Tensor& cached_grads) override;
};

/// The idea "run step 1 under c10::InferenceMode instead of NoGradGuard": a GradCache whose
/// step 1 (nothing retained) runs in inference mode. The representations are copied out as
/// ordinary tensors, since inference tensors cannot enter the loss's graph.
class InferenceModeGradCache : public gradcache::GradCache {
 public:
  using gradcache::GradCache::GradCache;

 protected:
  ForwardResult forward_no_grad(size_t model_index, const std::vector<gradcache::ModelInput>& chunks) override;
};

// ---- measurement ----------------------------------------------------------------------

/// Peak tensor bytes (CpuMemoryTracker) of `fn` above what was in use when it started.
int64_t peak_bytes_of(const std::function<void()>& fn);

/// Seconds of each call of a step: wall clock, and CPU time of the whole process (all its
/// threads). On a shared machine other processes stretch the wall time of a step but hardly
/// its CPU time, so the CPU ratios are the steadier ones (with one thread, CPU ~ wall).
struct Timings {
  std::vector<double> wall, cpu;
  double wall_median() const;
  double wall_min() const;  ///< best of the repetitions: the least disturbed one
  double cpu_median() const;
  Json to_json() const;
};

/// Times each step, the steps interleaved (a, b, c, a, b, c, ...) so that slow drifts of a
/// shared machine hit all of them alike; `warmup` untimed rounds first.
std::vector<Timings> time_interleaved(const std::vector<std::function<void()>>& steps, int64_t warmup, int64_t reps);
double median(std::vector<double> values);
/// CPU seconds (user, system) this process has used so far.
std::pair<double, double> cpu_seconds();
double now_seconds();
double process_cpu_seconds();  ///< CLOCK_PROCESS_CPUTIME_ID

/// max |a - b| / max |b| over all tensors together.
double max_relative_error(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b);

/// Bytes of the cache of a step: representations and their gradients, 2 (N + M) d floats.
int64_t cache_bytes(int64_t queries, int64_t passages, int64_t dim);

// ---- threads --------------------------------------------------------------------------

/// LibTorch intra-op threads and OpenBLAS threads (-1 where OpenBLAS is not found).
struct ThreadConfig {
  int64_t intra_op = 0;
  int64_t openblas = 0;
};
ThreadConfig current_threads();
/// Sets them; values <= 0 leave that one as it is.
void set_threads(int64_t intra_op, int64_t openblas);
bool openblas_found();

// ---- output ---------------------------------------------------------------------------

/// A text table: header, rows of cells, columns aligned.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string str() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

std::string fmt(double value, int precision = 3);  ///< fixed notation
std::string sci(double value);                     ///< 1.2e-07
std::string mib(int64_t bytes);                    ///< "12.3"
double to_mib(int64_t bytes);

/// A target: `value` must be <= `limit`.
Json target(const std::string& name, double value, double limit);
std::string target_line(const Json& target);

/// Progress for humans: stderr, always (stdout holds the table or the JSON).
void progress(const std::string& line);

/// What a scenario hands back: its JSON and its text report.
struct ScenarioResult {
  Json json;
  std::string text;
};

// ---- scenarios ------------------------------------------------------------------------

/// Settings every scenario reads (filled by the common options).
struct CommonSettings {
  bool json = false;
  std::string plot;        ///< PNG path; empty: no plot
  int64_t threads = 1;     ///< LibTorch intra-op threads
  int64_t blas_threads = 1;  ///< OpenBLAS threads (0: as OpenBLAS decided)
  bool help = false;
  std::string program;     ///< argv[0] resolved (/proc/self/exe), for child processes
};

struct ExactnessSettings {
  ModelSettings transformer;
  ModelSettings mlp;
  int64_t batch = 64, chunk = 16;          ///< Transformer (dropout on)
  int64_t mlp_batch = 256, mlp_chunk = 32;  ///< MLP (eval mode)
  double limit = 1e-5;
  ExactnessSettings();
  void add_options(OptionTable& table);
};
ScenarioResult run_exactness(const ExactnessSettings& s, const CommonSettings& common);

struct MemorySettings {
  ModelSettings model;
  std::vector<int64_t> batches;
  std::vector<std::string> modes{"full", "accumulate", "cache", "cache-streaming", "cache-r0-streaming"};
  int64_t chunk = 64;
  int64_t check_batch = 4096;  ///< the batch at which the target is checked
  int64_t full_max = 1024;        ///< largest batch for mode full (it grows linearly)
  int64_t accumulate_max = 1024;  ///< largest batch for mode accumulate (it stays flat)
  bool no_spawn = false;       ///< measure in this process (no RSS)
  double limit = 0.10;
  MemorySettings();
  void add_options(OptionTable& table);
};
ScenarioResult run_memory(const MemorySettings& s, const CommonSettings& common);

/// One configuration of the memory scenario, measured in a fresh process (`--child memory`).
struct MemoryPointSettings {
  ModelSettings model;
  std::string mode = "cache";
  int64_t batch = 64;
  int64_t chunk = 64;
  int64_t retain = -1;  ///< cache only: GradCacheOptions::retain_chunks
  int64_t threads = 1, blas_threads = 1;
  void add_options(OptionTable& table);
};
Json measure_memory_point(const MemoryPointSettings& s);

struct OverheadSettings {
  ModelSettings model;
  int64_t batch = 256, chunk = 64;
  int64_t reps = 7, warmup = 1;
  bool extras = true;  ///< also time the default cache (1 chunk retained) and the InferenceMode idea
  double limit = 1.25;
  void add_options(OptionTable& table);
};
ScenarioResult run_overhead(const OverheadSettings& s, const CommonSettings& common);

struct RetainSettings {
  ModelSettings model;
  int64_t batch = 256, chunk = 64;  ///< 4 chunks per model: r = 0, 1, 2, 3, 4
  std::vector<int64_t> retain;      ///< empty: 0..n for n <= 8, else 0, n/4, n/2, 3n/4, n
  int64_t reps = 5, warmup = 1;
  double budget_fraction = 0.5;  ///< memory_budget as a fraction of the batch's activations
  double limit = 1.10;           ///< at half the chunks retained
  void add_options(OptionTable& table);
};
ScenarioResult run_retain(const RetainSettings& s, const CommonSettings& common);

struct ChunkSizeSettings {
  ModelSettings model;
  int64_t sample = 512;  ///< passages the probe may use
  std::vector<int64_t> budgets_mib{4, 16, 64, 256};
  void add_options(OptionTable& table);
};
ScenarioResult run_chunk_size(const ChunkSizeSettings& s, const CommonSettings& common);

struct ThreadsSettings {
  ModelSettings model;
  int64_t batch = 128, chunk = 64;
  int64_t reps = 3;
  double max_seconds = 8;  ///< per setting: fewer repetitions for a slow one
  void add_options(OptionTable& table);
};
ScenarioResult run_threads(const ThreadsSettings& s, const CommonSettings& common);

struct DistributedSettings {
  ModelSettings model;
  int64_t batch = 256, chunk = 32;
  int64_t reps = 5, warmup = 1;
  std::vector<int64_t> processes{1, 2};
  void add_options(OptionTable& table);
};
ScenarioResult run_distributed(const DistributedSettings& s, const CommonSettings& common);

/// One rank of one configuration of the distributed scenario (`--child distributed`).
struct DistributedPointSettings {
  ModelSettings model;
  int64_t batch = 256, chunk = 32, reps = 5, warmup = 1;
  int64_t rank = 0, world = 1, port = 0;
  int64_t threads = 1, blas_threads = 1;
  void add_options(OptionTable& table);
};
Json measure_distributed_point(const DistributedPointSettings& s);
struct PrecisionSettings {
  ModelSettings model;
  int64_t batch = 128, chunk = 32;
  int64_t reps = 5, warmup = 1;
  void add_options(OptionTable& table);
};
ScenarioResult run_precision(const PrecisionSettings& s, const CommonSettings& common);

// ---- child processes and plots (system.cpp) -------------------------------------------

/// Runs `program args...` with stdout into a pipe; returns what it wrote. Throws if it fails.
std::string run_child(const std::string& program, const std::vector<std::string>& args);
/// Peak resident set size of this process so far (VmHWM) and now (VmRSS), bytes.
int64_t peak_rss_bytes();
/// /proc/loadavg's 1-minute figure: how busy the (shared) machine was.
double load_average();
int64_t current_rss_bytes();

/// Writes PNG + data + gnuplot script from the scenarios' JSON (memory curves; overhead /
/// trade-off points). Returns the files written; throws if gnuplot fails.
std::vector<std::string> write_plot(const std::string& png, const Json& scenarios);

}  // namespace gcbench
