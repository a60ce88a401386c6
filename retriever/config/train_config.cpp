#include "retriever/config/train_config.h"

#include "files/atomic_file.h"
#include "retriever/config/device.h"
#include "retriever/config/encoder_settings.h"
#include "retriever/config/matryoshka_settings.h"
#include "retriever/config/model_selection_settings.h"
#include "retriever/config/similarity_settings.h"
#include "retriever/data/arrow_data.h"
#include "retriever/data/data_files.h"
#include "retriever/data/dataset_mix.h"
#include "retriever/data/text_data.h"
#include "retriever/files/comma_items.h"

#include <gradcache/precision.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>

namespace gradcache {
namespace retriever {
namespace {

using Table = SettingsTable<TrainConfig>;

void add_data_settings(Table& t) {
  const char* group = "Data";
  t.add(nested_field("train_file", &TrainConfig::data, &DataSettings::train_file, "--train-file",
                     "Training pairs: JSONL {query, positives, negatives}, TSV query<TAB>positive[<TAB>negative...], "
                     "Parquet, Arrow, a datasets save_to_disk directory or a directory of .parquet/.arrow shards; "
                     "several, comma-separated, are mixed by --mix; default: WordNet")
            .in_group(group));
  t.add(nested_field("mix", &TrainConfig::data, &DataSettings::mix, "--mix",
                     "Several --train-file data sets: each batch from one of them, proportional (each one's full "
                     "batches once an epoch, shuffled), round-robin (one of each in turn, until the smallest is "
                     "spent) or weights, one per data set (e.g. 3,1)")
            .hint("RULE")
            .in_group(group));
  t.add(nested_field("columns", &TrainConfig::data, &DataSettings::columns, "--columns",
                     "Parquet/Arrow training data: the query, positive and negative columns, in that order (e.g. "
                     "anchor,positive,negative); default: query with positives/positive_passages (and negatives), "
                     "else every column in order, as sentence-transformers takes them")
            .hint("NAMES")
            .in_group(group));
  t.add(nested_field("wordnet_dir", &TrainConfig::data, &DataSettings::wordnet_dir, "--wordnet-dir",
                     "WordNet 3.0 database (Debian: wordnet-base)")
            .in_group(group));
  t.add(nested_field("eval_corpus", &TrainConfig::data, &DataSettings::eval_corpus, "--eval-corpus",
                     "Corpus for evaluation: id<TAB>text or JSONL")
            .in_group(group));
  t.add(nested_field("eval_queries", &TrainConfig::data, &DataSettings::eval_queries, "--eval-queries",
                     "Queries for evaluation: id<TAB>text or JSONL")
            .in_group(group));
  t.add(nested_field("eval_qrels", &TrainConfig::data, &DataSettings::eval_qrels, "--eval-qrels",
                     "Judgements for evaluation: TREC 'qid 0 docid rel'")
            .in_group(group));
  t.add(nested_choice_field("on_bad_line", &TrainConfig::data, &DataSettings::on_bad_line, "--on-bad-line",
                            "What a malformed input line does: error or skip", on_bad_line_names())
            .in_group(group));
  t.add_check([](const TrainConfig& c) -> std::string {
    const auto files = training_files(c.data.train_file);
    if (files.size() > 1) {
      try {
        parse_mix(c.data.mix, files.size());
      } catch (const std::invalid_argument& e) {
        return e.what();
      }
      for (const auto& file : files)
        if (file.empty()) return "--train-file " + c.data.train_file + " has an empty name between its commas";
      if (c.selection.dev_fraction > 0)
        return "--dev-fraction holds out pairs of one data set: with several --train-file, give --dev-queries and "
               "--dev-qrels";
      if (c.training.keep_last)
        return "--keep-last keeps a short last batch, but with several --train-file every batch is a full one of one "
               "data set: leave it out";
    } else if (c.data.mix != "proportional") {
      return "--mix " + c.data.mix + " mixes several data sets: give --train-file A,B,...";
    }
    return "";
  });
  t.add_check([](const TrainConfig& c) -> std::string {
    if (c.data.columns.empty()) return "";
    const auto files = training_files(c.data.train_file);
    if (c.data.train_file.empty() ||
        std::none_of(files.begin(), files.end(), [](const std::string& f) { return is_arrow_data(f); }))
      return "--columns names the columns of Parquet or Arrow training data (--train-file); a JSONL or TSV file's "
             "fields are fixed";
    for (const auto& name : comma_items(c.data.columns))
      if (name.empty()) return "--columns has an empty name: give QUERY,POSITIVE[,NEGATIVE...]";
    return "";
  });
}

// The contrastive loss and how the streaming losses tile it.
void add_loss_settings(Table& t) {
  const char* group = "Training";
  t.add(
      nested_choice_field("loss", &TrainConfig::loss, &LossSettings::kind, "--loss",
                          "infonce (query to passage), symmetric (also passage to query), or streaming / "
                          "streaming-symmetric: the same losses computed tile by tile, never holding the batch x batch "
                          "score matrix (memory independent of the batch beyond O(batch x dim); see --tile)",
                          loss_names())
          .in_group(group));
  // The tile changes only the order of the loss's summations (and its memory and time), as
  // the chunk size does the encoders'.
  t.add(nested_field("tile_size", &TrainConfig::loss, &LossSettings::tile_size, "--tile",
                     "Streaming losses (and a multi-process run's sharded loss): rows and columns of one score tile; "
                     "the loss holds about three tile x tile float buffers")
            .in_group(group)
            .hint("N")
            .per_rank()
            .checked(positive()));
}

void add_optimisation_settings(Table& t) {
  const char* group = "Training";
  t.add(nested_field("negatives", &TrainConfig::batching, &BatchingSettings::negatives, "--negatives",
                     "Hard negatives per query (from the training file)")
            .in_group(group)
            .checked(at_least(0)));
  t.add(nested_field("epochs", &TrainConfig::training, &TrainingSettings::epochs, "--epochs", "Epochs (unless --steps)")
            .in_group(group));
  t.add(nested_field("steps", &TrainConfig::training, &TrainingSettings::steps, "--steps",
                     "Optimizer steps (0: --epochs decides)")
            .in_group(group)
            .checked(at_least(0))
            .old_key("max_steps"));
  t.add(nested_field("lr", &TrainConfig::training, &TrainingSettings::lr, "--lr", "Peak learning rate (AdamW); with --model-dir the default is 5e-5")
            .in_group(group)
            .checked(positive()));
  t.add(nested_field("weight_decay", &TrainConfig::training, &TrainingSettings::weight_decay, "--weight-decay",
                     "AdamW weight decay")
            .in_group(group)
            .checked(at_least(0)));
  t.add(nested_field("warmup", &TrainConfig::training, &TrainingSettings::warmup, "--warmup",
                     "Fraction of steps with linear warm-up (then linear decay)")
            .in_group(group)
            .checked(in_range(0, 1)));
  t.add(nested_field("max_grad_norm", &TrainConfig::training, &TrainingSettings::max_grad_norm, "--max-grad-norm",
                     "Gradient clipping (0: off)")
            .in_group(group)
            .checked(at_least(0)));
  t.add(nested_field("max_skipped_updates", &TrainConfig::training, &TrainingSettings::max_skipped_updates,
                     "--max-skipped-updates",
                     "Stop the run (exit 1, its last checkpoint kept) after this many updates in a row skipped for a "
                     "non-finite loss or gradients: it has diverged (0: never)")
            .in_group(group)
            .free_on_resume()
            .checked(at_least(0)));
  t.add(nested_field("temperature", &TrainConfig::loss, &LossSettings::temperature, "--temperature",
                     "Softmax temperature")
            .in_group(group)
            .checked(positive()));
  t.add(nested_field("seed", &TrainConfig::training, &TrainingSettings::seed, "--seed",
                     "Seed of initialisation, data order and dropout")
            .in_group(group));
  t.add(nested_field("keep_last", &TrainConfig::training, &TrainingSettings::keep_last, "--keep-last",
                     "Keep the incomplete last batch of each epoch (default: drop it)")
            .in_group(group)
            .as_switch());
  t.add(nested_field("no_duplicates", &TrainConfig::training, &TrainingSettings::no_duplicates, "--no-duplicates",
                     "Batches hold no text twice, as sentence-transformers' NO_DUPLICATES: an example whose query, "
                     "positive or hard negative is already in the batch goes to a later one")
            .in_group(group)
            .as_switch());
}

void add_machine_settings(Table& t) {
  const char* group = "Training";
  t.add(nested_field("threads", &TrainConfig::machine, &MachineSettings::threads, "--threads",
                     "LibTorch intra-op threads (0: 1); with the torch wheel's LibTorch also its MKL's, which does "
                     "the matrix products")
            .in_group(group)
            .per_rank()
            .free_on_resume()
            .checked(thread_count()));
  t.add(nested_field("blas_threads", &TrainConfig::machine, &MachineSettings::blas_threads, "--blas-threads",
                     "OpenBLAS threads (0: 1): the matrix products' with Debian's LibTorch 1.13 (see "
                     "docs/performance.md, Threads); idle with the torch wheel's, whose MKL follows --threads")
            .in_group(group)
            .per_rank()
            .free_on_resume()
            .checked(thread_count()));
  t.add(nested_field("prefetch", &TrainConfig::machine, &MachineSettings::prefetch, "--prefetch",
                     "Batches tokenized ahead of the step on a background thread (0: each in its step); the "
                     "batches are the same either way")
            .in_group(group)
            .free_on_resume()
            .checked(in_range(0, 64)));
  t.add(nested_field("device", &TrainConfig::machine, &MachineSettings::device, "--device", "cpu, cuda, cuda:1, ...")
            .in_group(group)
            .checked(existing_device()));
  t.add(
      nested_choice_field("precision", &TrainConfig::machine, &MachineSettings::precision, "--precision",
                          "fp32, bf16 (autocast; CPU or CUDA) or fp16 (autocast with loss scaling; CUDA). The loss and "
                          "the gradient cache stay fp32",
                          precision_names())
          .in_group(group));
  t.add(field("quick", &TrainConfig::quick, "--quick", "A tiny run (seconds): small model, data subset, 30 steps")
            .in_group(group)
            .as_switch());
}

void add_output_settings(Table& t) {
  const char* group = "Output";
  t.add(nested_field("output", &TrainConfig::output, &OutputSettings::dir, "--output",
                     "Directory for everything the run writes")
            .in_group(group)
            .free_on_resume()
            .checked(not_empty()));
  t.add(nested_field("save_every", &TrainConfig::output, &OutputSettings::save_every, "--save-every",
                     "Steps between checkpoints (0: at the end)")
            .in_group(group)
            .free_on_resume()
            .checked(at_least(0)));
  t.add(nested_field("log_every", &TrainConfig::output, &OutputSettings::log_every, "--log-every",
                     "Steps between progress lines and metrics")
            .in_group(group)
            .free_on_resume()
            .checked(positive()));
  t.add(nested_field("metrics_out", &TrainConfig::output, &OutputSettings::metrics_out, "--metrics-out",
                     "Metrics as JSON lines (default: OUTPUT/metrics.jsonl); an existing file is replaced only with "
                     "--overwrite, and never one the run reads")
            .in_group(group)
            .free_on_resume());
  t.add(nested_field("eval", &TrainConfig::eval, &TrainEvalSettings::enabled, "--eval",
                     "Evaluate before and after training when there is evaluation data")
            .in_group(group)
            .free_on_resume());
  t.add(nested_field("eval_baseline", &TrainConfig::eval, &TrainEvalSettings::baseline, "--eval-baseline",
                     "With --eval: also evaluate the untrained model before training (false: only after)")
            .in_group(group)
            .free_on_resume());
  t.add(nested_field("eval_bm25", &TrainConfig::eval, &TrainEvalSettings::bm25, "--eval-bm25",
                     "With --eval: also rank with BM25 (Xapian) for a baseline row in the end-of-run table")
            .in_group(group)
            .free_on_resume());
  t.add(nested_field("eval_batch_size", &TrainConfig::eval, &TrainEvalSettings::batch_size, "--eval-batch-size",
                     "Encoding batch of the evaluation")
            .in_group(group)
            .per_rank()
            .free_on_resume()
            .checked(positive()));
}

// Checks of settings together; each message names the flags.
void add_cross_checks(Table& t) {
  t.add_check([](const TrainConfig& c) {
    if (!c.encoder.is_pretrained()) return std::string();
    if (!c.encoder.torchscript.empty()) return std::string("--model-dir and --model each name the encoder: give one");
    return c.tokenizer.file.empty() ? std::string()
                                    : "--tokenizer: a --model-dir model brings its own tokenizer; drop --tokenizer";
  });
  t.add_check([](const TrainConfig& c) {  // the built-in encoder's shape would be silently ignored
    if (!c.encoder.is_pretrained()) return std::string();
    const TrainConfig d = pretrained_defaults(c.quick);
    const EncoderSettings &e = c.encoder, &de = d.encoder;
    std::string given;
    for (const auto& [flag, differs] : {std::pair{"--dim", e.dim != de.dim}, {"--layers", e.layers != de.layers},
                                        {"--heads", e.heads != de.heads}, {"--ffn-dim", e.ffn_dim != de.ffn_dim},
                                        {"--projection-dim", e.projection_dim != de.projection_dim},
                                        {"--dropout", e.dropout != de.dropout}, {"--normalize", e.normalize != de.normalize},
                                        {"--vocab-size", c.tokenizer.vocab_size != d.tokenizer.vocab_size}}) {
      if (differs) given += (given.empty() ? "" : ", ") + std::string(flag);
    }
    return given.empty() ? std::string()
                         : given + ": these shape the built-in encoder; a --model-dir model's config.json, pooling and "
                                   "Normalize module set its own (drop them)";
  });
  t.add_check([](const TrainConfig& c) {
    return !c.encoder.specb || c.encoder.is_pretrained()
               ? ""
               : "--specb marks the sides with a --model-dir model's bracket tokens; the built-in and TorchScript "
                 "encoders' sentencepiece tokenizer has none (give --model-dir, or drop --specb)";
  });
  t.add_check([](const TrainConfig& c) {
    return c.training.epochs > 0 || c.training.steps > 0 ? "" : "--epochs or --steps must be positive";
  });
  t.add_check([](const TrainConfig& c) {
    return c.encoder.dim % c.encoder.heads == 0
               ? std::string()
               : "--dim must be a multiple of --heads (" + std::to_string(c.encoder.dim) + " and " +
                     std::to_string(c.encoder.heads) + ")";
  });
  t.add_check([](const TrainConfig& c) {
    const auto device_type = c.machine.device.rfind("cuda", 0) == 0 ? c10::kCUDA : c10::kCPU;
    return c.machine.precision != Precision::fp16 ||
                   gradcache::autocast_supported(gradcache::Precision::fp16, device_type)
               ? std::string()
               : "--precision fp16 on " + c.machine.device +
                     " needs LibTorch 2.4 or later (CPU autocast supports only bf16 before); use --precision bf16 "
                     "on CPU, or fp16 with --device cuda";
  });
  t.add_check([](const TrainConfig& c) {
    const int eval_files = !c.data.eval_corpus.empty() + !c.data.eval_queries.empty() + !c.data.eval_qrels.empty();
    return eval_files == 0 || eval_files == 3 ? "" : "--eval-corpus, --eval-queries and --eval-qrels go together";
  });
}

Table make_train_settings() {
  Table t;
  add_data_settings(t);
  add_model_settings(t);
  add_batching_settings(t);
  add_loss_settings(t);
  add_optimisation_settings(t);
  add_machine_settings(t);
  add_output_settings(t);
  add_cross_checks(t);
  add_model_selection_settings(t);
  add_matryoshka_settings(t);
  add_similarity_settings(t);
  return t;
}

}  // namespace

const ChoiceNames<LossKind>& loss_names() {
  static const ChoiceNames<LossKind> names{{LossKind::InfoNce, "infonce"},
                                           {LossKind::Symmetric, "symmetric"},
                                           {LossKind::Streaming, "streaming"},
                                           {LossKind::StreamingSymmetric, "streaming-symmetric"}};
  return names;
}

const ChoiceNames<SimilarityKind>& similarity_names() {
  static const ChoiceNames<SimilarityKind> names{{SimilarityKind::Dot, "dot"}, {SimilarityKind::Mlp, "mlp"}};
  return names;
}

const ChoiceNames<Precision>& precision_names() {
  static const ChoiceNames<Precision> names{
      {Precision::fp32, "fp32"}, {Precision::bf16, "bf16"}, {Precision::fp16, "fp16"}};
  return names;
}

const ChoiceNames<OnBadLine>& on_bad_line_names() {
  static const ChoiceNames<OnBadLine> names{{OnBadLine::Error, "error"}, {OnBadLine::Skip, "skip"}};
  return names;
}

std::string to_string(LossKind loss) { return choice_name(loss_names(), loss); }
bool is_symmetric(LossKind loss) { return loss == LossKind::Symmetric || loss == LossKind::StreamingSymmetric; }
bool is_streaming(LossKind loss) { return loss == LossKind::Streaming || loss == LossKind::StreamingSymmetric; }

const SettingsTable<TrainConfig>& train_settings() {
  static const Table table = make_train_settings();
  return table;
}

TrainConfig quick_defaults() {
  TrainConfig c;
  c.quick = true;
  c.tokenizer.vocab_size = 1000;
  c.encoder.dim = 64;
  c.encoder.layers = 1;
  c.encoder.heads = 2;
  c.encoder.ffn_dim = 128;
  c.batching.batch_size = 256;
  c.batching.chunk_size = 32;
  c.training.steps = 30;
  c.training.lr = 3e-3;
  c.output.log_every = 5;
  return c;
}

TrainConfig pretrained_defaults(bool quick) {
  TrainConfig c = quick ? quick_defaults() : TrainConfig{};
  c.training.lr = 5e-5;  // sentence-transformers' default: 3e-3 (from scratch) would wreck pretrained weights
  c.tokenizer.query_max_len = c.tokenizer.passage_max_len = 512;  // capped at the model's max_seq_length
  return c;
}

TrainConfig build_train_config(const nlohmann::json& file, const GivenSettings& flags,
                               std::vector<std::string>* notices) {
  const auto& table = train_settings();
  std::vector<std::string> said;  // the notices of the last build only (--quick builds twice)
  TrainConfig c = table.build(TrainConfig{}, file, flags, &said);
  if (c.quick || c.encoder.is_pretrained()) {  // defaults only: what the file and the flags say still wins
    said.clear();
    c = table.build(c.encoder.is_pretrained() ? pretrained_defaults(c.quick) : quick_defaults(), file, flags, &said);
  }
  if (notices) notices->insert(notices->end(), said.begin(), said.end());
  // One knob for how much is computed at once, in every mode: accumulate's sub-batches are
  // --chunk-size queries (the cache's memory per forward) unless --sub-batch-size is given.
  const bool sub_batch_given =
      (file.is_object() && file.contains("sub_batch_size")) ||
      std::any_of(flags.begin(), flags.end(), [](const auto& flag) { return flag.first == "sub_batch_size"; });
  if (c.batching.mode == TrainMode::Accumulate && !sub_batch_given) c.batching.sub_batch_size = c.batching.chunk_size;
  return c;
}

nlohmann::json parse_settings_text(const std::string& text, const std::string& name) {
  try {
    nlohmann::json file = nlohmann::json::parse(text);
    TrainConfig probe;  // unknown keys and wrong types are the file's errors, named as such
    train_settings().read_json(file, probe);
    return file;
  } catch (const std::exception& e) {
    throw SettingsError(name + ": " + printable_utf8(e.what()));  // JSON errors quote the input
  }
}

nlohmann::json read_settings_file(const std::string& path) {
  return parse_settings_text(files::read_file(path), "--config " + path);
}

TrainConfig read_saved_config(const nlohmann::json& j, std::vector<std::string>* notices) {
  TrainConfig c;
  train_settings().read_json(j, c, notices);
  // Before sub_batch_size, accumulate's sub-batches were chunk_size queries (and configs were
  // saved with every key, max_steps among them).
  if (j.is_object() && j.contains("max_steps") && !j.contains("sub_batch_size")) {
    c.batching.sub_batch_size = c.batching.mode == TrainMode::Accumulate
                                    ? c.batching.chunk_size
                                    : (c.quick ? quick_defaults() : TrainConfig{}).batching.sub_batch_size;
    if (notices && c.batching.mode == TrainMode::Accumulate) {
      notices->push_back("sub_batch_size: " + std::to_string(c.batching.sub_batch_size) +
                         " (chunk_size, as earlier versions used)");
    }
  }
  return c;
}

void to_json(nlohmann::json& j, const TrainConfig& c) { j = train_settings().to_json(c); }

void from_json(const nlohmann::json& j, TrainConfig& c) { train_settings().read_json(j, c); }

void validate(const TrainConfig& c) { train_settings().validate(c); }

std::vector<std::string> setting_warnings(const TrainConfig& c) {
  std::vector<std::string> warnings;
  if (queries_per_loss(c.batching) == 1 && c.batching.negatives > 0) {
    warnings.push_back(one_query_flag(c.batching) + " 1: each query is compared with only its " +
                       std::to_string(c.batching.negatives) +
                       " hard negatives, none of the other queries' passages (no in-batch negatives)");
  }
  return warnings;
}

int64_t parse_bytes(const std::string& text, const std::string& flag) {
  size_t used = 0;
  double value = -1;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
  }
  std::string unit = text.substr(std::min(used, text.size()));
  for (auto& ch : unit) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  if (unit.size() > 1 && unit.back() == 'B') unit.pop_back();            // "GB", "GIB" -> "G", "GI"
  if (unit.size() > 1 && unit.back() == 'I') unit.pop_back();            // "GI" -> "G"
  const std::string units = "KMGT";
  double scale = 1;
  if (unit.size() == 1 && units.find(unit[0]) != std::string::npos) {
    scale = std::pow(1024.0, static_cast<double>(units.find(unit[0]) + 1));
  } else if (!unit.empty()) {
    value = -1;
  }
  if (!(value >= 0)) {
    throw SettingsError(flag + " takes a size in bytes such as 536870912, 512M or 2G, got '" + text + "'");
  }
  return static_cast<int64_t>(value * scale);
}

nlohmann::json resume_invariant(const TrainConfig& c) { return train_settings().resume_invariant(c); }

nlohmann::json distributed_invariant(const TrainConfig& c) { return train_settings().distributed_invariant(c); }

TrainConfig resumed_config(const TrainConfig& saved, const TrainConfig& requested) {
  return train_settings().resumed(saved, requested);
}

}  // namespace retriever
}  // namespace gradcache
