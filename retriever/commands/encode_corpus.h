// `gradcache encode`: a corpus -> an embeddings directory (run/embeddings.h), encoded shard by
// shard so that memory stays bounded by --shard-size whatever the corpus size.
#pragma once

#include "retriever/commands/command_control.h"
#include "retriever/config/settings_table.h"
#include "retriever/config/train_config.h"
#include "retriever/model/encode_all.h"
#include "retriever/run/saved_encoder.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace gradcache {
namespace retriever {

struct EncodeSettings {
  std::string run;                  ///< checkpoint.pt or a run's output directory; or
  std::string model;                ///< an export directory (gradcache export); or
  PretrainedSource pretrained;      ///< a pretrained model's directory (--model-dir)
  std::string corpus;               ///< id<TAB>text[<TAB>title] or JSONL {id, text, title?}
  std::string side = "passage";     ///< which encoder and max length: passage | query
  std::string output;               ///< the embeddings directory
  std::string dtype = "fp32";       ///< storage: fp32 | fp16 (computed in fp32 either way)
  int64_t shard_size = 100000;      ///< rows per shard: texts held in memory at once
  int64_t batch_size = 512;         ///< encoding batch
  int64_t threads = 0;              ///< intra-op threads; 0: 1
  std::string device = "cpu";
  OnBadLine on_bad_line = OnBadLine::Error;
  bool overwrite = false;           ///< replace an existing embeddings directory
  int64_t dim = 0;                  ///< > 0: write the first dim dimensions (Matryoshka prefix)
};

/// The table every setting of EncodeSettings is declared in (the CLI's flags).
const SettingsTable<EncodeSettings>& encode_settings();

/// Where an encoding stands, for a progress bar.
struct EncodeProgress {
  int64_t rows = 0;                          ///< encoded so far
  uint64_t bytes_read = 0, file_size = 0;    ///< of the corpus file
  double elapsed_s = 0;
};

/// How encode_corpus reports as it goes, and how it is stopped: as every command (a stop removes
/// the partial directory; --output is left as it was), and a progress report.
struct EncodeControl : CommandControl {
  std::function<void(const EncodeProgress&)> progress;  ///< after every few batches
};

struct EncodeReport {
  std::string output;
  int64_t rows = 0, dim = 0, shards = 0;
  size_t skipped = 0;  ///< bad lines skipped (--on-bad-line skip)
  double seconds = 0;
};

/// Encodes the corpus into settings.output: written in a partial sibling directory and renamed
/// at the end, so a failed or stopped run leaves no directory that looks finished. Checks the
/// settings, the corpus file and --output before loading the model. Throws std::exception
/// subclasses naming the file or flag, or StoppedBySignal (search/evaluate.h).
EncodeReport encode_corpus(const EncodeSettings& settings, const EncodeControl& control = {});

}  // namespace retriever
}  // namespace gradcache
