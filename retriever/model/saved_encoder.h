// An encoder ready to turn texts into vectors, loaded from a training run or from the directory
// `gradcache export` wrote: what `gradcache encode` (and later commands) encode with.
#pragma once

#include "retriever/model/encoders.h"
#include "retriever/model/tokenizer.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace gradcache {
namespace retriever {

/// A model, its tokenizer and its lengths: everything needed to encode a text as training did.
struct TextEncoder {
  BiEncoder model;
  Tokenizer tokenizer;
  int64_t query_max_len = 0, passage_max_len = 0;  ///< tokens kept per side
  bool normalize = false;                           ///< whether the vectors are L2-normalised
  nlohmann::json source;                            ///< what it was loaded from (for manifests)
};

/// The checkpoint file of `run`: `run` itself, or run/checkpoint.pt when it is a directory.
std::string checkpoint_of_run(const std::string& run);

/// The encoder of a run (checkpoint.pt or a run's output directory), with its weights and the
/// tokenizer stored in the checkpoint. Throws CheckpointError naming the file.
TextEncoder load_run_encoder(const std::string& run);

/// The encoder of `side` ("query" or "passage") from an export directory (export.json,
/// tokenizer.model and the TorchScript files it names). Throws std::runtime_error naming the
/// file for a missing or malformed export, or an export without that side.
TextEncoder load_exported_encoder(const std::string& dir, const std::string& side);

}  // namespace retriever
}  // namespace gradcache
