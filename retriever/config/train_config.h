// Settings of a training run: what the CLI's flags and JSON config files fill in. Every
// setting is declared once, in train_settings() (config/train_config.cpp).
#pragma once

#include "retriever/config/batching_settings.h"
#include "retriever/config/matryoshka_settings.h"
#include "retriever/config/model_selection_settings.h"
#include "retriever/config/settings_table.h"
#include "retriever/config/similarity_settings.h"
#include "retriever/data/data_settings.h"
#include "retriever/data/text_data.h"
#include "retriever/model/encoder_defaults.h"
#include "retriever/model/lora_settings.h"
#include "retriever/model/trainable_parameters.h"
#include "retriever/model/tokenizer.h"

#include <gradcache/precision.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gradcache {
namespace retriever {

/// --loss.
enum class LossKind {
  InfoNce,             ///< query to passage
  Symmetric,           ///< also passage to query
  Streaming,           ///< InfoNCE tile by tile, without the batch x batch matrix
  StreamingSymmetric,  ///< the symmetric loss tile by tile
};
/// How settings files and flags name each choice (the settings table parses them once).
const ChoiceNames<LossKind>& loss_names();
const ChoiceNames<Precision>& precision_names();
const ChoiceNames<OnBadLine>& on_bad_line_names();
std::string to_string(LossKind loss);
/// Whether a --loss also scores passage to query.
bool is_symmetric(LossKind loss);
/// Whether a --loss is computed tile by tile.
bool is_streaming(LossKind loss);

/// The tokenizer and how many tokens of each side it keeps.
struct TokenizerSettings {
  std::string file;  ///< sentencepiece .model (--tokenizer); "" = train one on the training texts
  int64_t vocab_size = encoder_defaults::vocab_size;
  int64_t query_max_len = 32;
  int64_t passage_max_len = 32;
};

/// The encoders: the built-in Transformer's shape, a pretrained model's directory, or a
/// TorchScript file; and the prompts put before the texts.
struct EncoderSettings {
  std::string pretrained;   ///< Hugging Face / sentence-transformers directory (--model-dir); "" = none
  std::string torchscript;  ///< TorchScript encoder file (--model); "" = the built-in Transformer
  int64_t dim = encoder_defaults::dim;  // the built-in encoder's shape: model/encoder_defaults.h
  int64_t layers = encoder_defaults::layers;
  int64_t heads = encoder_defaults::heads;
  int64_t ffn_dim = encoder_defaults::ffn_dim;
  int64_t projection_dim = encoder_defaults::projection_dim;
  double dropout = encoder_defaults::dropout;
  bool normalize = encoder_defaults::normalize;
  bool untie = false;
  std::string query_prompt, passage_prompt;  ///< text before each query / passage; "" = the model's (if any)
  bool model_prompts = true;                 ///< use a pretrained model's "query" / "document" prompts
  bool specb = false;                        ///< SGPT's bracket markers around queries and passages
  std::string train_params;                  ///< --train-params: "" (all), "bias", or a regex over parameter names
  bool freeze_embeddings = false;            ///< --freeze-embeddings
  LoraSettings lora;                         ///< --lora-rank, --lora-alpha, ..., --adapter
  Precision base_precision = Precision::fp32;  ///< --base-precision: the frozen weight matrices' type
  PromptSettings prompts() const { return {query_prompt, passage_prompt, model_prompts, specb}; }
  TrainableParameters trainable() const { return {train_params, freeze_embeddings, lora.enabled()}; }
  /// Which encoder the settings describe.
  bool is_pretrained() const { return !pretrained.empty(); }
  bool is_builtin() const { return pretrained.empty() && torchscript.empty(); }
  /// The built-in encoder's output width: the projection's, else the model's.
  int64_t output_dim() const { return projection_dim > 0 ? projection_dim : dim; }
};

/// The contrastive loss.
struct LossSettings {
  LossKind kind = LossKind::InfoNce;
  double temperature = 0.05;
  int64_t tile_size = 1024;  ///< streaming (and sharded) loss: rows and columns of one score tile
};

/// How long and how fast the optimizer goes.
struct TrainingSettings {
  int64_t epochs = 4;
  int64_t steps = 0;           ///< > 0: stop after this many optimizer steps
  double lr = 3e-3;
  double weight_decay = 0.01;
  double warmup = 0.1;         ///< fraction of the steps with a linear warm-up
  double max_grad_norm = 1.0;  ///< 0: no clipping
  int64_t max_skipped_updates = 10;  ///< this many skipped updates in a row stop the run (0: never)
  uint64_t seed = 42;
  bool keep_last = false;      ///< keep the incomplete last batch of each epoch
  bool no_duplicates = false;  ///< batches hold no text twice (train/no_duplicates.h)
};

/// How the run uses the machine.
struct MachineSettings {
  int64_t threads = 0;         ///< intra-op threads; 0: 1
  int64_t blas_threads = 0;    ///< OpenBLAS threads; 0: 1 (docs/performance.md, "Threads": more only cost CPU here)
  std::string device = "cpu";
  int64_t prefetch = 2;        ///< batches tokenized ahead on a background thread; 0: in the step
  Precision precision = Precision::fp32;  ///< autocast per model call; fp16 with loss scaling
};

/// What the run writes, and when.
struct OutputSettings {
  std::string dir = "runs/default";  ///< --output
  int64_t save_every = 0;            ///< steps between checkpoints; 0: at the end (and on interrupt)
  int64_t log_every = 10;
  std::string metrics_out;  ///< JSON lines; default OUTPUT/metrics.jsonl
};

/// The evaluation before and after training.
struct TrainEvalSettings {
  bool enabled = true;       ///< --eval: evaluate before and after training when there is evaluation data
  bool baseline = true;      ///< also evaluate the untrained model before training
  bool bm25 = true;          ///< a BM25 baseline row (Xapian) in the end-of-run table
  int64_t batch_size = 512;  ///< encoding batch
};

/// A training run's settings, one struct per concern; each is declared (flags, JSON keys,
/// checks) in train_settings() or its feature's *_settings.cpp. config.json keeps one flat
/// object of keys, as earlier versions wrote it.
struct TrainConfig {
  DataSettings data;
  TokenizerSettings tokenizer;
  EncoderSettings encoder;
  BatchingSettings batching;      // config/batching_settings.h
  LossSettings loss;
  MatryoshkaSettings matryoshka;  // config/matryoshka_settings.h
  TrainingSettings training;
  MachineSettings machine;
  OutputSettings output;
  TrainEvalSettings eval;
  SimilaritySettings similarity;  // config/similarity_settings.h
  SelectionSettings selection;    // config/model_selection_settings.h
  bool quick = false;             ///< a tiny run for smoke tests
};

/// The table every setting of TrainConfig is declared in (flags, JSON keys, checks, help).
const SettingsTable<TrainConfig>& train_settings();

/// The defaults --quick starts from: a small model and 30 steps (config files and flags
/// given still override them).
TrainConfig quick_defaults();

/// The defaults a --model-dir run starts from (those of --quick with `quick`): a learning rate
/// for fine-tuning (5e-5, sentence-transformers' default) instead of one for training from
/// scratch, and texts cut only at the model's max_seq_length (query/passage_max_len 512).
TrainConfig pretrained_defaults(bool quick);

/// Flags given on the command line: (setting key, text), in the order given.
using GivenSettings = std::vector<std::pair<std::string, std::string>>;

/// A run's settings: the defaults (quick_defaults() when the file or a flag asks for
/// --quick) < `file` (a JSON object, e.g. a --config file) < `flags`. Former keys are read
/// with a notice. Throws SettingsError naming the key or flag. Does not validate.
TrainConfig build_train_config(const nlohmann::json& file, const GivenSettings& flags,
                               std::vector<std::string>* notices = nullptr);

/// The settings of a --config file from its text: a JSON object whose keys and value types
/// are those of config.json (checked here; values are checked by validate()). Throws
/// SettingsError naming `name` (the file) and what is wrong.
nlohmann::json parse_settings_text(const std::string& text, const std::string& name);
/// parse_settings_text on the contents of the file at `path`.
nlohmann::json read_settings_file(const std::string& path);

/// A saved config (config.json, a checkpoint's): as written, also by earlier versions
/// (former keys are renamed, with a notice).
TrainConfig read_saved_config(const nlohmann::json& j, std::vector<std::string>* notices = nullptr);

void to_json(nlohmann::json& j, const TrainConfig& c);
/// Reads the keys present in `j` over `c`; unknown keys are an error (they are usually typos).
void from_json(const nlohmann::json& j, TrainConfig& c);

/// Checks the values and their combinations; throws SettingsError naming the flag.
void validate(const TrainConfig& c);

/// Valid settings that are probably not what was meant (e.g. a contrastive batch of one query
/// with hard negatives only), one line each naming the flags; empty when none.
std::vector<std::string> setting_warnings(const TrainConfig& c);

/// Bytes from "1073741824", "512M", "2G", "1.5GiB" (K/M/G/T are powers of 1024).
/// Throws SettingsError naming `flag` otherwise.
int64_t parse_bytes(const std::string& text, const std::string& flag);

/// Settings that change what a resumed run computes (all but output, logging and the use of
/// the machine).
nlohmann::json resume_invariant(const TrainConfig& c);

/// Settings every process of a data-parallel run must share (chunking and threads aside).
nlohmann::json distributed_invariant(const TrainConfig& c);

/// The settings of a resumed run: the checkpoint's, with those it may change from `requested`.
TrainConfig resumed_config(const TrainConfig& saved, const TrainConfig& requested);

}  // namespace retriever
}  // namespace gradcache
