#include "retriever/config/batching_settings.h"

#include "retriever/config/train_config.h"

#include <algorithm>

namespace gradcache {
namespace retriever {
namespace {

// A byte count: JSON holds bytes; the flag also takes 512M, 2G, ...
Setting<TrainConfig> bytes_setting(const char* key, int64_t BatchingSettings::*member, const char* flag,
                                   const char* help) {
  return nested_field(key, &TrainConfig::batching, member, flag, help)
      .hint("SIZE")
      .checked(at_least(0))
      .parsed_by([key, flag](const std::string& text) {
        return nlohmann::json{{key, parse_bytes(text, flag)}};
      });
}

// Checks of the batching settings together; each message names the flags.
void add_batching_checks(SettingsTable<TrainConfig>& t) {
  t.add_check([](const TrainConfig& c) {
    return !c.batching.chunk_size_auto || c.batching.chunk_memory > 0
               ? ""
               : "--chunk-size auto needs --chunk-memory (the bytes one chunk's forward and backward may use)";
  });
  // The default is 0: a positive value was set, and would size nothing.
  t.add_check([](const TrainConfig& c) {
    return c.batching.chunk_size_auto || c.batching.chunk_memory == 0
               ? ""
               : "--chunk-memory is used only with --chunk-size auto; add --chunk-size auto or drop --chunk-memory";
  });
  // One query and no hard negatives: its softmax has one entry, its own positive, so the loss
  // is log 1 = 0 with zero gradient whatever the model. (With hard negatives it is a loss:
  // setting_warnings says what it lacks.)
  t.add_check([](const TrainConfig& c) {
    if (queries_per_loss(c.batching) > 1 || c.batching.negatives > 0) return std::string();
    const auto flag = one_query_flag(c.batching);
    return flag + " 1 without --negatives: each query is compared with its own positive only, so the loss is 0 "
                  "whatever the model and nothing is learned; use a larger " + flag +
           ", or hard negatives from the training file with --negatives k";
  });
}

}  // namespace

const ChoiceNames<TrainMode>& train_mode_names() {
  static const ChoiceNames<TrainMode> names{
      {TrainMode::Cache, "cache"}, {TrainMode::Full, "full"}, {TrainMode::Accumulate, "accumulate"}};
  return names;
}

std::string to_string(TrainMode mode) { return choice_name(train_mode_names(), mode); }

int64_t queries_per_loss(const BatchingSettings& b) {
  return b.mode == TrainMode::Accumulate ? std::min(b.batch_size, b.sub_batch_size) : b.batch_size;
}

std::string one_query_flag(const BatchingSettings& b) {
  return b.mode == TrainMode::Accumulate && b.sub_batch_size < b.batch_size ? "--sub-batch-size" : "--batch-size";
}

std::string describe_passes(const BatchingSettings& b) {
  if (b.mode == TrainMode::Accumulate) return "sub-batches of " + std::to_string(b.sub_batch_size);
  if (b.mode == TrainMode::Full) return "one pass";
  return "chunks of " + std::to_string(b.chunk_size) +
         (b.chunk_tokens > 0 ? " rows or " + std::to_string(b.chunk_tokens) + " tokens" : "");
}

// How a batch goes through the encoders: chunking, sub-batches, retained graphs. These
// decide memory and time; each process may choose its own (except sub-batches, which
// decide what the loss is).
void add_batching_settings(SettingsTable<TrainConfig>& t) {
  const char* group = "Training";
  t.add(nested_choice_field("mode", &TrainConfig::batching, &BatchingSettings::mode, "--mode",
                            "cache (Gradient Cache), full (no chunking) or accumulate (gradient accumulation: each "
                            "sub-batch sees only its own negatives)",
                            train_mode_names())
            .in_group(group));
  t.add(nested_field("batch_size", &TrainConfig::batching, &BatchingSettings::batch_size, "--batch-size",
                     "Contrastive batch: pairs that see each other as negatives")
            .in_group(group)
            .checked(positive()));
  t.add(nested_field("chunk_size", &TrainConfig::batching, &BatchingSettings::chunk_size, "--chunk-size",
                     "cache: rows per forward pass, the memory knob; or auto: the largest that fits --chunk-memory, "
                     "measured")
            .in_group(group)
            .hint("N|auto")
            .per_rank()
            .checked([](const nlohmann::json& v) {
              return v.get<int64_t>() > 0 ? "" : "must be positive (a chunk size larger than the batch is "
                                                 "allowed: the batch is one chunk)";
            })
            .parsed_by([](const std::string& text) {
              if (text == "auto") return nlohmann::json{{"chunk_size_auto", true}};
              return nlohmann::json{{"chunk_size", parse_setting_text<int64_t>(text, "--chunk-size")},
                                    {"chunk_size_auto", false}};
            }));
  t.add(nested_field("passage_chunk_size", &TrainConfig::batching, &BatchingSettings::passage_chunk_size,
                     "--passage-chunk-size", "cache: rows per passage forward pass (0: --chunk-size)")
            .in_group(group)
            .per_rank()
            .checked(at_least(0)));
  t.add(nested_field("chunk_size_auto", &TrainConfig::batching, &BatchingSettings::chunk_size_auto, "",
                     "Chunk sizes chosen by measurement (--chunk-size auto)")
            .per_rank());
  t.add(bytes_setting("chunk_memory", &BatchingSettings::chunk_memory, "--chunk-memory",
                      "With --chunk-size auto: what one chunk's forward and backward may use (e.g. 512M, 2G)")
            .in_group(group)
            .per_rank()
            .old_flag("--memory-budget")
            .old_key("memory_budget"));
  t.add(nested_field("chunk_tokens", &TrainConfig::batching, &BatchingSettings::chunk_tokens, "--chunk-tokens",
                     "cache: bound chunks by tokens (rows x longest) instead of rows (0: off)")
            .in_group(group)
            .per_rank()
            .checked(at_least(0)));
  t.add(nested_field("sub_batch_size", &TrainConfig::batching, &BatchingSettings::sub_batch_size, "--sub-batch-size",
                     "accumulate: queries per sub-batch, each with only its own passages as negatives (default: --chunk-size)")
            .in_group(group)
            .checked(positive()));
  t.add(nested_field("sort_by_length", &TrainConfig::batching, &BatchingSettings::sort_by_length, "--sort-by-length",
                     "Order each batch by query length, and in cache mode the passages by their own, so chunks pad less (not in accumulate)")
            .in_group(group));
  // Retained chunks trade memory for time; the gradients are the same, so a resumed run may
  // change them (and runs of earlier versions, saved with -1, still resume).
  t.add(nested_field("retain_chunks", &TrainConfig::batching, &BatchingSettings::retain_chunks, "--retain-chunks",
                     "cache: chunks per model that keep their graph instead of being recomputed (-1: as many as "
                     "--retain-memory allows, none without it, as GradCacheOptions; 0: none)")
            .in_group(group)
            .per_rank()
            .free_on_resume()
            .checked(at_least(-1)));
  t.add(bytes_setting("retain_memory", &BatchingSettings::retain_memory, "--retain-memory",
                      "cache: bytes of activations retained chunks may hold, measured (e.g. 1G)")
            .in_group(group)
            .per_rank()
            .free_on_resume());
  add_batching_checks(t);
}

}  // namespace retriever
}  // namespace gradcache
