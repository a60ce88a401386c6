// Settings of a training run: what the CLI's flags and JSON config files fill in. Every
// setting is declared once, in train_settings() (config/train_config.cpp).
#pragma once

#include "retriever/config/settings_table.h"
#include "retriever/data/text_data.h"

#include <gradcache/precision.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gradcache {
namespace retriever {

/// --mode: how a step computes its gradients.
enum class TrainMode {
  Cache,       ///< Gradient Cache: the batch's gradients in chunks (GradCache)
  Full,        ///< the whole batch in one pass
  Accumulate,  ///< gradient accumulation over sub-batches, each seeing only its own negatives
};
/// --loss.
enum class LossKind {
  InfoNce,             ///< query to passage
  Symmetric,           ///< also passage to query
  Streaming,           ///< InfoNCE tile by tile, without the batch x batch matrix
  StreamingSymmetric,  ///< the symmetric loss tile by tile
};
/// --similarity: what scores a query against a passage.
enum class SimilarityKind {
  Dot,  ///< the encoders' dot product
  Mlp,  ///< a learned Phi(q, p) trained through the dual cache
};

/// How settings files and flags name each choice (the settings table parses them once).
const ChoiceNames<TrainMode>& train_mode_names();
const ChoiceNames<LossKind>& loss_names();
const ChoiceNames<SimilarityKind>& similarity_names();
const ChoiceNames<Precision>& precision_names();
const ChoiceNames<OnBadLine>& on_bad_line_names();
std::string to_string(TrainMode mode);
std::string to_string(LossKind loss);
/// Whether a --loss also scores passage to query.
bool is_symmetric(LossKind loss);
/// Whether a --loss is computed tile by tile.
bool is_streaming(LossKind loss);

struct TrainConfig {
  // Data: built-in WordNet reverse dictionary unless train_file is given.
  std::string train_file;  ///< JSONL (Tevatron layout) or TSV; "" = WordNet
  std::string wordnet_dir = "/usr/share/wordnet";
  std::string eval_corpus, eval_queries, eval_qrels;  ///< evaluation data for user training data
  OnBadLine on_bad_line = OnBadLine::Error;

  // Tokenizer
  std::string tokenizer;  ///< sentencepiece .model; "" = train one on the training texts
  int64_t vocab_size = 8000;
  int64_t query_max_len = 32;
  int64_t passage_max_len = 32;

  // Model
  std::string model;  ///< TorchScript encoder file; "" = the built-in Transformer
  int64_t dim = 64;
  int64_t layers = 1;
  int64_t heads = 4;
  int64_t ffn_dim = 128;
  int64_t projection_dim = 0;
  double dropout = 0.1;
  bool normalize = true;
  bool untie = false;

  // Training
  TrainMode mode = TrainMode::Cache;
  LossKind loss = LossKind::InfoNce;
  int64_t tile_size = 1024;      ///< streaming (and sharded) loss: rows and columns of one score tile
  std::string matryoshka;          ///< prefix widths the loss is summed over, "64,32,16"; "" = off
  std::string matryoshka_weights;  ///< one weight per prefix, "1,1,1"; "" = 1 each
  int64_t batch_size = 1024;   ///< the contrastive batch: queries that see each other's passages
  int64_t chunk_size = 128;    ///< cache: rows per forward pass (the memory knob)
  int64_t passage_chunk_size = 0;  ///< rows per passage forward pass (0: chunk_size)
  bool chunk_size_auto = false;    ///< choose both from chunk_memory by measurement (--chunk-size auto)
  int64_t chunk_memory = 0;        ///< bytes one chunk's forward + backward may use (with chunk_size_auto)
  int64_t chunk_tokens = 0;        ///< > 0: chunks bounded by tokens (rows x longest) instead of rows
  int64_t sub_batch_size = 128;    ///< accumulate: queries per sub-batch (as chunk_size: equal memory per forward)
  bool sort_by_length = true;      ///< order each batch by query length (less padding; not in accumulate)
  int64_t retain_chunks = 0;       ///< chunks per model kept with their graph (0: none; -1: what retain_memory allows)
  int64_t retain_memory = 0;       ///< bytes of activations retained chunks may hold (0: no budget)
  int64_t negatives = 0;       ///< hard negatives per query
  int64_t epochs = 4;
  int64_t steps = 0;           ///< > 0: stop after this many optimizer steps
  double lr = 3e-3;
  double weight_decay = 0.01;
  double warmup = 0.1;         ///< fraction of the steps with a linear warm-up
  double max_grad_norm = 1.0;  ///< 0: no clipping
  double temperature = 0.05;
  uint64_t seed = 42;
  bool keep_last = false;      ///< keep the incomplete last batch of each epoch
  int64_t threads = 0;         ///< intra-op threads; 0: 1
  int64_t blas_threads = 0;    ///< OpenBLAS threads; 0: 1 (docs/performance.md, "Threads": more only cost CPU here)
  std::string device = "cpu";
  Precision precision = Precision::fp32;  ///< autocast per model call; fp16 with loss scaling

  // Output
  std::string output = "runs/default";
  int64_t save_every = 0;  ///< steps between checkpoints; 0: at the end (and on interrupt)
  int64_t log_every = 10;
  std::string metrics_out;  ///< JSON lines; default OUTPUT/metrics.jsonl
  bool eval = true;         ///< evaluate before and after training when there is evaluation data
  bool eval_baseline = true;  ///< with eval: also evaluate the untrained model before training
  bool eval_bm25 = true;      ///< with eval: a BM25 baseline row (Xapian) in the end-of-run table
  int64_t eval_batch_size = 512;
  bool quick = false;       ///< a tiny run for smoke tests

  // Learned similarity (declared in config/similarity_settings.cpp)
  SimilarityKind similarity = SimilarityKind::Dot;
  int64_t phi_hidden = 0;          ///< Phi's hidden width; 0: twice the representation width
  double phi_dropout = 0.1;        ///< dropout on Phi's hidden layer
  bool phi_dot = true;             ///< Phi = MLP + q.p / temperature (false: the MLP alone)
  int64_t phi_tile = 64;           ///< dual cache: queries and passages per tile of Phi's pairs
  int64_t rerank_k = 100;          ///< evaluation: dense candidates per query re-ranked by Phi

  // Model selection (declared in config/model_selection_settings.cpp)
  int64_t eval_every = 0;              ///< steps between dev evaluations; 0: none
  std::string dev_corpus, dev_queries, dev_qrels;  ///< dev files for user data (corpus: eval_corpus if "")
  double dev_fraction = 0;             ///< > 0: hold out this fraction of the training pairs as dev queries
  std::string select_metric = "recall@10";  ///< the dev metric best.pt is chosen by
  int64_t patience = 0;                ///< > 0: stop after this many dev evaluations without improvement
};

/// The table every setting of TrainConfig is declared in (flags, JSON keys, checks, help).
const SettingsTable<TrainConfig>& train_settings();

/// The defaults --quick starts from: a small model and 30 steps (config files and flags
/// given still override them).
TrainConfig quick_defaults();

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
