// The scenarios of gradcache-bench: the settings each one reads (option groups of the
// skeleton, skeleton.h, and flags of its own) and the function that runs it.
#pragma once

#include "skeleton.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gcbench {

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
  std::vector<std::string> modes{"full", "accumulate", "cache", "cache-streaming", "cache-r1"};
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

/// One configuration of the memory scenario, measured in a fresh process (`child-memory`).
struct MemoryPointSettings : BatchSettings, ChildThreads {
  std::string mode = "cache";
  MemoryPointSettings() : BatchSettings(64, 64) {}
  void add_options(OptionTable& table);
};
Json measure_memory_point(const MemoryPointSettings& s);

struct OverheadSettings : BatchSettings, Repetitions {
  bool extras = true;  ///< also time a cache with 1 chunk retained per model and the InferenceMode idea
  double model_limit = 1.05;  ///< measured / predicted cache / accumulate, nothing retained
  OverheadSettings() : BatchSettings(256, 64), Repetitions(7, 1) {}
  void add_options(OptionTable& table);
};
ScenarioResult run_overhead(const OverheadSettings& s, const CommonSettings& common);

/// By default 256 pairs in chunks of 64: 4 chunks per model, r = 0, 1, 2, 3, 4.
struct RetainSettings : BatchSettings, Repetitions {
  std::vector<int64_t> retain;      ///< empty: 0..n for n <= 8, else 0, n/4, n/2, 3n/4, n
  /// retain_memory budgets, in percent of the batch's activations (the budget table)
  std::vector<int64_t> budget_percents{15, 30, 45, 60, 75, 90};
  double budget_goal = 1.2;   ///< the budget table names the first budget with cache / accumulate <= this
  double model_limit = 1.05;  ///< measured / predicted, nothing and half the chunks retained
  RetainSettings() : BatchSettings(256, 64), Repetitions(5, 1) {}
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

struct ThreadsSettings : BatchSettings {
  int64_t reps = 3;
  double max_seconds = 8;  ///< per setting: fewer repetitions for a slow one
  ThreadsSettings() : BatchSettings(128, 64) {}
  void add_options(OptionTable& table);
};
ScenarioResult run_threads(const ThreadsSettings& s, const CommonSettings& common);

struct DistributedSettings : BatchSettings, Repetitions {
  std::vector<int64_t> processes{1, 2};
  DistributedSettings() : BatchSettings(256, 32), Repetitions(5, 1) {}
  void add_options(OptionTable& table);
};
ScenarioResult run_distributed(const DistributedSettings& s, const CommonSettings& common);

/// One rank of one configuration of the distributed scenario (`child-distributed`).
struct DistributedPointSettings : BatchSettings, Repetitions, ChildRank {
  DistributedPointSettings() : BatchSettings(256, 32), Repetitions(5, 1) {}
  explicit DistributedPointSettings(const DistributedSettings& s) : BatchSettings(s), Repetitions(s) {}
  void add_options(OptionTable& table);
};
Json measure_distributed_point(const DistributedPointSettings& s);

/// What the sharded-loss scenario hands to each of its points: the representations' size, the
/// score tiles, the timed steps.
struct ShardedLossShape {
  int64_t dim = 256, tile = 1024, reps = 1;
  void add_options(OptionTable& table);
};

/// The loss alone across W processes: every rank computing the whole loss over gathered
/// representations (streaming) vs each rank its share, passage blocks going round a ring
/// (ShardedContrastiveLoss). Loss forward + backward time and peak memory per rank.
struct ShardedLossSettings : ShardedLossShape {
  std::vector<int64_t> sizes{4096, 16384, 65536};  ///< global N (pairs)
  std::vector<int64_t> processes{1, 2, 4};
  int64_t gathered_up_to = 16384;  ///< the gathered baseline only up to this N (it costs W = 1's time on every rank)
  void add_options(OptionTable& table);
};
ScenarioResult run_sharded_loss(const ShardedLossSettings& s, const CommonSettings& common);

/// One rank of one point of the sharded-loss scenario (`child-sharded-loss`).
struct ShardedLossPointSettings : ShardedLossShape, ChildRank {
  std::string mode = "sharded";  ///< "sharded" or "gathered"
  int64_t size = 4096;
  ShardedLossPointSettings() = default;
  explicit ShardedLossPointSettings(const ShardedLossShape& shape) : ShardedLossShape(shape) {}
  void add_options(OptionTable& table);
};
Json measure_sharded_loss_point(const ShardedLossPointSettings& s);

struct PrecisionSettings : BatchSettings, Repetitions {
  PrecisionSettings() : BatchSettings(128, 32), Repetitions(5, 1) {}
  void add_options(OptionTable& table);
};
ScenarioResult run_precision(const PrecisionSettings& s, const CommonSettings& common);

/// The dense vs the streaming contrastive loss (forward + backward on the representations):
/// peak memory and time as N grows, or the streaming loss's time per tile size.
struct StreamingSettings {
  std::vector<int64_t> sizes{1024, 2048, 4096, 8192, 16384, 32768, 65536};  ///< N (M = N)
  int64_t dim = 256;
  int64_t tile = gradcache::kDefaultTileSize;
  double temperature = 0.05;
  bool symmetric = false;
  int64_t repeats = 3;
  int64_t single_run_from = 16384;  ///< from this N on: one run, no warm-up
  double dense_limit_gib = 8;       ///< skip the dense loss where its estimated peak exceeds this
  int64_t seed = 0;
  int64_t tile_sweep = 0;           ///< > 0: only time the streaming loss at this N per tile size
  std::vector<int64_t> sweep_tiles{256, 512, 1024, 2048, 4096};
  void add_options(OptionTable& table);
};
ScenarioResult run_streaming(const StreamingSettings& s, const CommonSettings& common);

/// Many training steps in one process, RSS sampled as they go: does memory stop growing once
/// warmed up? A smaller model than the others' (dim 32, 1 layer): 1,000 steps in minutes.
struct SoakSettings : BatchSettings {
  int64_t steps = 1000;
  int64_t every = 50;          ///< steps between RSS samples
  int64_t warmup_steps = 200;  ///< growth is measured from the first sample at or after this step
  double lr = 1e-3;
  double limit_mib = 1.0;      ///< target: RSS growth after the warm-up
  SoakSettings();
  void add_options(OptionTable& table);
};
ScenarioResult run_soak(const SoakSettings& s, const CommonSettings& common);

}  // namespace gcbench
