// How a batch of a training run goes through the encoders (--mode, --batch-size, chunking,
// sub-batches, retained graphs): the settings, declared here as one concept, and what is
// derived from them.
#pragma once

#include "retriever/config/settings_table.h"

#include <cstdint>
#include <string>

namespace gradcache {
namespace retriever {

struct TrainConfig;

/// --mode: how a step computes its gradients.
enum class TrainMode {
  Cache,       ///< Gradient Cache: the batch's gradients in chunks (GradCache)
  Full,        ///< the whole batch in one pass
  Accumulate,  ///< gradient accumulation over sub-batches, each seeing only its own negatives
};
const ChoiceNames<TrainMode>& train_mode_names();
std::string to_string(TrainMode mode);

/// What a batch holds and how it goes through the encoders: the mode, chunking, sub-batches,
/// retained graphs. Chunking and retention decide memory and time, not the gradients.
struct BatchingSettings {
  TrainMode mode = TrainMode::Cache;
  int64_t batch_size = 1024;       ///< the contrastive batch: queries that see each other's passages
  int64_t negatives = 0;           ///< hard negatives per query
  int64_t chunk_size = 128;        ///< cache: rows per forward pass (the memory knob)
  int64_t passage_chunk_size = 0;  ///< rows per passage forward pass (0: chunk_size)
  bool chunk_size_auto = false;    ///< choose both from chunk_memory by measurement (--chunk-size auto)
  int64_t chunk_memory = 0;        ///< bytes one chunk's forward + backward may use (with chunk_size_auto)
  int64_t chunk_tokens = 0;        ///< > 0: chunks bounded by tokens (rows x longest) instead of rows
  int64_t sub_batch_size = 128;    ///< accumulate: queries per sub-batch; not given: chunk_size (build_train_config)
  bool sort_by_length = true;      ///< order each batch by query length (less padding; not in accumulate)
  int64_t retain_chunks = -1;      ///< chunks per model kept with their graph (-1: what retain_memory allows, none without it; 0: none)
  int64_t retain_memory = 0;       ///< bytes of activations retained chunks may hold (0: no budget)
};

/// Adds the batching settings and their checks across settings to a run's table. Chunking and
/// retention decide memory and time (each process may choose its own); sub-batches decide what
/// the loss is.
void add_batching_settings(SettingsTable<TrainConfig>& table);

/// The queries one loss term compares: the batch, or accumulate's sub-batch (each its own loss).
int64_t queries_per_loss(const BatchingSettings& b);
/// The flag that makes a loss term hold one query when queries_per_loss is 1.
std::string one_query_flag(const BatchingSettings& b);
/// How a batch goes through the encoders, for a log: "chunks of 64", "sub-batches of 64", ...
std::string describe_passes(const BatchingSettings& b);

}  // namespace retriever
}  // namespace gradcache
