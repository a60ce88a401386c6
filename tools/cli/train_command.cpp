// `gradcache train`: flags -> TrainConfig -> retriever::train.
#include "commands.h"

#include "retriever/files.h"
#include "retriever/trainer.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <map>

namespace gradcache {
namespace cli {
namespace {

using retriever::TrainConfig;

// What --quick changes, unless the flag is given explicitly (or set by --config).
void apply_quick(TrainConfig& c, const std::function<bool(const std::string&)>& explicitly_set) {
  auto set = [&](const char* key, auto& field, auto value) {
    if (!explicitly_set(key)) field = value;
  };
  set("vocab_size", c.vocab_size, 1000);
  set("dim", c.dim, 64);
  set("layers", c.layers, 1);
  set("heads", c.heads, 2);
  set("ffn_dim", c.ffn_dim, 128);
  set("batch_size", c.batch_size, 256);
  set("chunk_size", c.chunk_size, 32);
  set("max_steps", c.max_steps, 30);
  set("lr", c.lr, 3e-3);
  set("log_every", c.log_every, 5);
}

std::string flag_of(const std::string& key) {
  std::string flag = "--" + key;
  for (auto& ch : flag) {
    if (ch == '_') ch = '-';
  }
  return flag == "--max-steps" ? "--steps" : flag;
}

}  // namespace

std::string find_config_arg(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--config" && i + 1 < argc) return argv[i + 1];
    if (arg.rfind("--config=", 0) == 0) return arg.substr(9);
  }
  return "";
}

std::function<int()> add_train_command(CLI::App& app, int argc, char** argv) {
  auto* cmd = app.add_subcommand("train", "Train a bi-encoder retriever with a large contrastive batch. Without "
                                          "--train-file: the WordNet reverse dictionary (query: a definition; "
                                          "passage: its words), evaluated on its test split.");
  auto config = std::make_shared<TrainConfig>();
  auto from_file = std::make_shared<nlohmann::json>(nlohmann::json::object());
  // A config file stands in for flags; flags given as well override it.
  const bool is_train = argc > 1 && std::string(argv[1]) == "train";
  const std::string config_path = is_train ? find_config_arg(argc, argv) : "";
  if (!config_path.empty()) {
    try {
      *from_file = nlohmann::json::parse(retriever::read_file(config_path));
      from_json(*from_file, *config);
    } catch (const std::exception& e) {
      std::cerr << "gradcache train: error: --config " << config_path << ": " << e.what() << std::endl;
      std::exit(2);
    }
  }
  auto& c = *config;
  struct RunFlags {  // flags that are not settings; they outlive this function with the action
    bool resume = false, overwrite = false;
    double dist_timeout = 300;  // seconds
    std::string config_file;  // read above, before the flags
  };
  auto flags = std::make_shared<RunFlags>();
  cmd->add_option("--config", flags->config_file, "JSON file of settings (keys as in config.json); flags override it");

  auto group = [&](const char* name) { return cmd->add_option_group(name); };
  auto* data = group("Data");
  data->add_option("--train-file", c.train_file, "Training pairs: JSONL {query, positives, negatives} or TSV "
                                                 "query<TAB>positive[<TAB>negative...]; default: WordNet")
      ->capture_default_str();
  data->add_option("--wordnet-dir", c.wordnet_dir, "WordNet 3.0 database (Debian: wordnet-base)")->capture_default_str();
  data->add_option("--eval-corpus", c.eval_corpus, "Corpus for evaluation: id<TAB>text or JSONL");
  data->add_option("--eval-queries", c.eval_queries, "Queries for evaluation: id<TAB>text or JSONL");
  data->add_option("--eval-qrels", c.eval_qrels, "Judgements for evaluation: TREC 'qid 0 docid rel'");
  data->add_option("--on-bad-line", c.on_bad_line, "What a malformed input line does: error or skip")
      ->capture_default_str();

  auto* model = group("Tokenizer and model");
  model->add_option("--tokenizer", c.tokenizer, "sentencepiece .model; default: train one on the training texts");
  model->add_option("--vocab-size", c.vocab_size, "Pieces of a trained tokenizer")->capture_default_str();
  model->add_option("--query-max-len", c.query_max_len, "Query tokens kept")->capture_default_str();
  model->add_option("--passage-max-len", c.passage_max_len, "Passage tokens kept")->capture_default_str();
  model->add_option("--model", c.model, "TorchScript encoder: forward(input_ids, attention_mask) -> [B, d] or "
                                        "[B, T, d]; default: the built-in Transformer");
  model->add_option("--dim", c.dim, "Built-in encoder width")->capture_default_str();
  model->add_option("--layers", c.layers, "Transformer layers")->capture_default_str();
  model->add_option("--heads", c.heads, "Attention heads")->capture_default_str();
  model->add_option("--ffn-dim", c.ffn_dim, "Feed-forward width")->capture_default_str();
  model->add_option("--projection", c.projection_dim, "Projection after pooling (0: none)")->capture_default_str();
  model->add_option("--dropout", c.dropout, "Dropout")->capture_default_str();
  model->add_option("--normalize", c.normalize, "L2-normalise the representations (cosine similarity)")
      ->capture_default_str();
  model->add_flag("--untie", c.untie, "Separate query and passage encoders (default: one shared encoder)");

  const CLI::Validator bytes(
      [](std::string& v) {
        try {
          retriever::parse_bytes(v, "a size");
          return std::string();
        } catch (const std::exception& e) {
          return std::string(e.what());
        }
      },
      "SIZE");
  auto* training = group("Training");
  training->add_option("--mode", c.mode, "cache (Gradient Cache), full (no chunking) or accumulate (gradient "
                                         "accumulation: each chunk sees only its own negatives)")
      ->capture_default_str();
  training->add_option("--loss", c.loss, "infonce or symmetric")->capture_default_str();
  training->add_option("--batch-size", c.batch_size, "Contrastive batch: pairs that see each other as negatives")
      ->capture_default_str();
  training
      ->add_option_function<std::string>(
          "--chunk-size",
          [config](const std::string& v) {
            config->chunk_size_auto = v == "auto";
            if (!config->chunk_size_auto) config->chunk_size = std::stoll(v);
          },
          "Rows per forward pass, the memory knob; or auto: the largest that fits --memory-budget, measured")
      ->default_str(std::to_string(c.chunk_size))
      ->check(CLI::IsMember({"auto"}) | CLI::Number);
  training->add_option("--passage-chunk-size", c.passage_chunk_size, "Rows per passage forward pass (0: --chunk-size)")
      ->capture_default_str();
  training
      ->add_option_function<std::string>(
          "--memory-budget", [config](const std::string& v) { config->memory_budget = retriever::parse_bytes(v, "--memory-budget"); },
          "With --chunk-size auto: what one chunk's forward and backward may use (e.g. 512M, 2G)")
      ->check(bytes);
  training->add_option("--chunk-tokens", c.chunk_tokens, "Bound chunks by tokens (rows x longest) instead of rows (0: off)")
      ->capture_default_str();
  training->add_option("--sort-by-length", c.sort_by_length, "Order each batch by query length so chunks pad less")
      ->capture_default_str();
  training->add_option("--retain-chunks", c.retain_chunks,
                       "Chunks per model that keep their graph instead of being recomputed (-1: 1, or what "
                       "--retain-memory allows)")
      ->capture_default_str();
  training
      ->add_option_function<std::string>(
          "--retain-memory", [config](const std::string& v) { config->retain_memory = retriever::parse_bytes(v, "--retain-memory"); },
          "Bytes of activations retained chunks may hold, measured (e.g. 1G)")
      ->check(bytes);
  training->add_option("--negatives", c.negatives, "Hard negatives per query (from the training file)")
      ->capture_default_str();
  training->add_option("--epochs", c.epochs, "Epochs (unless --steps)")->capture_default_str();
  training->add_option("--steps", c.max_steps, "Optimizer steps (0: --epochs decides)")->capture_default_str();
  training->add_option("--lr", c.lr, "Peak learning rate (AdamW)")->capture_default_str();
  training->add_option("--weight-decay", c.weight_decay, "AdamW weight decay")->capture_default_str();
  training->add_option("--warmup", c.warmup, "Fraction of steps with linear warm-up (then linear decay)")
      ->capture_default_str();
  training->add_option("--max-grad-norm", c.max_grad_norm, "Gradient clipping (0: off)")->capture_default_str();
  training->add_option("--temperature", c.temperature, "Softmax temperature")->capture_default_str();
  training->add_option("--seed", c.seed, "Seed of initialisation, data order and dropout")->capture_default_str();
  training->add_flag("--keep-last", c.keep_last, "Keep the incomplete last batch of each epoch (default: drop it)");
  training->add_option("--threads", c.threads, "LibTorch intra-op threads (0: 1)")->capture_default_str();
  training->add_option("--blas-threads", c.blas_threads, "OpenBLAS threads (0: 1; see the README's Threads)")
      ->capture_default_str();
  training->add_option("--device", c.device, "cpu, cuda, cuda:1, ...")->capture_default_str();
  training
      ->add_option("--precision", c.precision,
                   "fp32, bf16 (autocast; CPU or CUDA) or fp16 (autocast with loss scaling; CUDA). The loss and "
                   "the gradient cache stay fp32")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}))
      ->capture_default_str();
  training->add_flag("--quick", c.quick, "A tiny run (seconds): small model, data subset, 30 steps");

  auto* output = group("Output");
  output->add_option("--output", c.output, "Directory for everything the run writes")->capture_default_str();
  output->add_option("--save-every", c.save_every, "Steps between checkpoints (0: at the end)")->capture_default_str();
  output->add_option("--log-every", c.log_every, "Steps between progress lines and metrics")->capture_default_str();
  output->add_option("--metrics-out", c.metrics_out, "Metrics as JSON lines (default: OUTPUT/metrics.jsonl)");
  output->add_option("--eval", c.eval, "Evaluate before and after training when there is evaluation data")
      ->capture_default_str();
  output->add_option("--eval-baseline", c.eval_baseline,
                     "With --eval: also evaluate the untrained model before training (false: only after)")
      ->capture_default_str();
  output->add_option("--eval-batch-size", c.eval_batch_size, "Encoding batch of the evaluation")->capture_default_str();
  output->add_flag("--resume", flags->resume, "Continue the run in --output from its checkpoint");
  output->add_flag("--overwrite", flags->overwrite, "Start afresh even if --output holds a run");
  auto* dist = group("Several processes (torchrun --nproc_per_node=N --no-python gradcache train ...)");
  dist->add_option("--dist-timeout", flags->dist_timeout,
                   "Seconds a process waits for the others before it gives up with an error")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);

  return [cmd, config, from_file, flags]() {
    TrainConfig c = *config;
    if (c.quick) {
      apply_quick(c, [&](const std::string& key) {
        return from_file->contains(key) || cmd->count(flag_of(key)) > 0;
      });
    }
    retriever::TrainOptions options;
    options.resume = flags->resume;
    options.overwrite = flags->overwrite;
    options.stop = &stop_signal;
    options.terminal = isatty(STDERR_FILENO);
    if (distributed::ProcessGroup::in_environment()) {  // started by torchrun
      options.group = std::make_shared<distributed::ProcessGroup>(distributed::ProcessGroup::from_environment(
          distributed::ProcessGroupOptions()
              .timeout(std::chrono::milliseconds(static_cast<int64_t>(flags->dist_timeout * 1000)))
              .device(c10::Device(c.device))));
    }
    auto result = retriever::train(c, options);
    if (result.interrupted) return 128 + (result.stop_signal ? result.stop_signal : 2);
    if (options.group && options.group->rank() != 0) return 0;  // rank 0 reports
    if (result.trained) {
      std::vector<std::pair<std::string, retriever::RetrievalMetrics>> rows;
      if (result.untrained) rows.emplace_back("untrained", *result.untrained);
      rows.emplace_back("trained", *result.trained);
      std::cout << "\n" << result.eval_name << " (" << result.trained->queries << " queries)\n"
                << retriever::format_metrics_table(rows);
    }
    const auto& used = result.config;
    std::printf("\n%lld steps of %lld pairs (mode %s, chunks of %lld) in %.0f s; peak memory %.0f MiB\n"
                "checkpoint: %s\n",
                static_cast<long long>(result.progress.step), static_cast<long long>(used.batch_size),
                used.mode.c_str(), static_cast<long long>(used.chunk_size), result.wall_seconds, result.peak_rss_mb,
                result.checkpoint.c_str());
    return 0;
  };
}

}  // namespace cli
}  // namespace gradcache
