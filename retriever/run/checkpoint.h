// Training checkpoints: one file holding everything a run needs to continue bit-identically.
#pragma once

#include "retriever/config/train_config.h"
#include "retriever/data/data_fingerprint.h"
#include "retriever/model/encoders.h"

#include <gradcache/grad_scaler.h>

#include <torch/optim/optimizer.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gradcache {
namespace retriever {

/// Where a run stands: optimizer steps done, and the position in the data.
struct TrainProgress {
  int64_t step = 0;            ///< optimizer steps done
  int64_t epoch = 0;           ///< epoch of the next batch
  int64_t batch_in_epoch = 0;  ///< index of the next batch within its epoch
};

/// Random generator states of every process of a run, one row per rank: the CPU generator's
/// and, when training on an accelerator, its generator's.
struct GeneratorStates {
  at::Tensor cpu, device;  ///< [ranks, state bytes]; `device` undefined on CPU
};

/// This process's generator states (one row).
GeneratorStates capture_generators(const c10::Device& device);

/// What a checkpoint says besides the weights.
struct CheckpointInfo {
  TrainConfig config;
  std::string tokenizer;                      ///< Tokenizer::serialized(): sentencepiece model or tokenizer.json
  std::vector<std::string> torchscript;       ///< serialized TorchScript encoders (empty: built-in)
  std::optional<PretrainedModel> pretrained;  ///< a --model-dir run's model (its weights are the checkpoint's)
  TrainProgress progress;
  nlohmann::json baseline = nullptr;          ///< metrics of the untrained model, if measured
  int64_t world_size = 1;                     ///< processes of the run that saved it
  std::vector<std::string> notices;           ///< settings of an earlier version, read under their new names
  std::optional<DataFingerprint> data;        ///< the training data's files; none in checkpoints of earlier versions
  nlohmann::json selection = nullptr;         ///< model selection's state (to_json(SelectionState)); null: none
};

/// A checkpoint that cannot be written or read: the message names the file and says what to do.
/// LibTorch's errors come out as these, their backtraces left out.
class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Writes a checkpoint atomically (temporary file + rename): the model's parameters and
/// buffers, the optimizer state, every rank's generator states, `info`, and the loss
/// scaler's state when there is one (fp16).
void save_checkpoint(const std::string& path, const CheckpointInfo& info, const BiEncoder& model,
                     torch::optim::Optimizer& optimizer, const GeneratorStates& generators,
                     const GradScaler* scaler = nullptr);

/// Reads a checkpoint's info. Throws CheckpointError saying what is wrong when the file is
/// missing, damaged (a zip entry fails its CRC check: see files/zip_integrity.h), truncated or not a
/// gradcache checkpoint.
CheckpointInfo read_checkpoint_info(const std::string& path);

/// A checkpoint's info and its model, with the weights.
struct LoadedCheckpoint {
  CheckpointInfo info;
  BiEncoder model;
};

/// Verifies and loads a checkpoint held in memory (the bytes of a checkpoint.pt); `name`
/// names it in messages. Every zip entry's CRC-32 is checked before LibTorch reads a byte.
/// Throws CheckpointError on a byte string that is not a sound gradcache checkpoint, e.g.
/// "checkpoint NAME is damaged: entry 'archive/data/3' fails its CRC check (stored 0x..,
/// computed 0x..); restore it from a backup or retrain".
LoadedCheckpoint load_checkpoint_bytes(const std::string& bytes, const std::string& name = "(in memory)");

/// load_checkpoint_bytes on the file at `path` (a missing file is a CheckpointError too).
LoadedCheckpoint load_checkpoint(const std::string& path);

/// The tokenizer of a checkpoint's run, with the run's prompts.
Tokenizer tokenizer_of(const CheckpointInfo& info);

/// The model a checkpoint was saved from, with its weights.
BiEncoder load_model(const std::string& path, const CheckpointInfo& info);

/// Restores the optimizer state, the generators of `rank` and, given a scaler, its state (for
/// --resume).
void load_training_state(const std::string& path, torch::optim::Optimizer& optimizer, const c10::Device& device,
                         int rank = 0, GradScaler* scaler = nullptr);

}  // namespace retriever
}  // namespace gradcache
