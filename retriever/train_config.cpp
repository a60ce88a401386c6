#include "retriever/train_config.h"

#include <gradcache/precision.h>

#include <cctype>
#include <cmath>
#include <set>
#include <stdexcept>

namespace gradcache {
namespace retriever {

// Every field once: JSON names are the field names (flags are the same with '-' for '_').
#define GRADCACHE_TRAIN_CONFIG_FIELDS(X)                                                                     \
  X(train_file) X(wordnet_dir) X(eval_corpus) X(eval_queries) X(eval_qrels) X(on_bad_line) X(tokenizer)       \
  X(vocab_size) X(query_max_len) X(passage_max_len) X(model) X(dim) X(layers) X(heads) X(ffn_dim)             \
  X(projection_dim) X(dropout) X(normalize) X(untie) X(mode) X(loss) X(batch_size) X(chunk_size) X(negatives) \
  X(passage_chunk_size) X(chunk_size_auto) X(memory_budget) X(chunk_tokens) X(sort_by_length) X(retain_chunks)  \
  X(retain_memory) X(blas_threads)                                                                             \
  X(epochs) X(max_steps) X(lr) X(weight_decay) X(warmup) X(max_grad_norm) X(temperature) X(seed)              \
  X(keep_last) X(threads) X(device) X(precision) X(output) X(save_every) X(log_every) X(metrics_out) X(eval)  \
  X(eval_baseline) X(eval_batch_size) X(quick)

void to_json(nlohmann::json& j, const TrainConfig& c) {
  j = nlohmann::json::object();
#define X(field) j[#field] = c.field;
  GRADCACHE_TRAIN_CONFIG_FIELDS(X)
#undef X
}

void from_json(const nlohmann::json& j, TrainConfig& c) {
  if (!j.is_object()) throw std::invalid_argument("config: expected a JSON object of settings");
  static const std::set<std::string> known = {
#define X(field) #field,
      GRADCACHE_TRAIN_CONFIG_FIELDS(X)
#undef X
  };
  for (const auto& item : j.items()) {
    if (!known.count(item.key())) {
      throw std::invalid_argument("config: unknown setting \"" + item.key() + "\" (see `gradcache train --help`)");
    }
  }
#define X(field)                                                                                              \
  if (j.contains(#field)) {                                                                                   \
    try {                                                                                                     \
      j.at(#field).get_to(c.field);                                                                           \
    } catch (const nlohmann::json::exception& e) {                                                            \
      throw std::invalid_argument(std::string("config: setting \"" #field "\" has the wrong type: ") + e.what()); \
    }                                                                                                         \
  }
  GRADCACHE_TRAIN_CONFIG_FIELDS(X)
#undef X
}

namespace {
void require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument(message);
}
}  // namespace

void validate(const TrainConfig& c) {
  require(c.mode == "cache" || c.mode == "full" || c.mode == "accumulate",
          "--mode must be cache, full or accumulate, got '" + c.mode + "'");
  require(c.loss == "infonce" || c.loss == "symmetric", "--loss must be infonce or symmetric, got '" + c.loss + "'");
  require(c.on_bad_line == "error" || c.on_bad_line == "skip",
          "--on-bad-line must be error or skip, got '" + c.on_bad_line + "'");
  require(c.batch_size > 0, "--batch-size must be positive, got " + std::to_string(c.batch_size));
  require(c.chunk_size > 0, "--chunk-size must be positive, got " + std::to_string(c.chunk_size) +
                                " (a chunk size larger than the batch is allowed: the batch is one chunk)");
  require(c.passage_chunk_size >= 0, "--passage-chunk-size must be >= 0 (0: --chunk-size)");
  require(!c.chunk_size_auto || c.memory_budget > 0,
          "--chunk-size auto needs --memory-budget (the bytes one chunk's forward and backward may use)");
  require(c.memory_budget >= 0 && c.retain_memory >= 0, "--memory-budget and --retain-memory must be >= 0");
  require(c.chunk_tokens >= 0, "--chunk-tokens must be >= 0 (0: chunks bounded by rows only)");
  require(c.retain_chunks >= -1, "--retain-chunks must be >= 0, or -1 for automatic");
  require(c.blas_threads >= 0, "--blas-threads must be >= 0");
  require(c.negatives >= 0, "--negatives must be >= 0, got " + std::to_string(c.negatives));
  require(c.epochs > 0 || c.max_steps > 0, "--epochs or --steps must be positive");
  require(c.max_steps >= 0, "--steps must be >= 0");
  require(c.lr > 0, "--lr must be positive");
  require(c.weight_decay >= 0, "--weight-decay must be >= 0");
  require(c.warmup >= 0 && c.warmup < 1, "--warmup is a fraction of the steps in [0, 1)");
  require(c.max_grad_norm >= 0, "--max-grad-norm must be >= 0 (0 disables clipping)");
  require(c.temperature > 0, "--temperature must be positive");
  require(c.vocab_size >= 16, "--vocab-size must be at least 16");
  require(c.query_max_len > 0 && c.passage_max_len > 0, "--query-max-len and --passage-max-len must be positive");
  require(c.dim > 0 && c.heads > 0 && c.dim % c.heads == 0,
          "--dim must be a positive multiple of --heads (" + std::to_string(c.dim) + " and " + std::to_string(c.heads) + ")");
  require(c.layers >= 0 && c.ffn_dim > 0 && c.projection_dim >= 0, "--layers, --ffn-dim and --projection must be >= 0");
  require(c.dropout >= 0 && c.dropout < 1, "--dropout must be in [0, 1)");
  require(c.save_every >= 0 && c.log_every > 0, "--save-every must be >= 0 and --log-every positive");
  require(c.threads >= 0, "--threads must be >= 0");
  require(c.eval_batch_size > 0, "--eval-batch-size must be positive");
  require(c.precision == "fp32" || c.precision == "bf16" || c.precision == "fp16",
          "--precision must be fp32, bf16 or fp16, got '" + c.precision + "'");
  const auto device_type = c.device.rfind("cuda", 0) == 0 ? c10::kCUDA : c10::kCPU;
  require(c.precision != "fp16" || gradcache::autocast_supported(gradcache::Precision::fp16, device_type),
          "--precision fp16 on " + c.device + " needs LibTorch 2.4 or later (CPU autocast supports only bf16 "
          "before); use --precision bf16 on CPU, or fp16 with --device cuda");
  require(!c.output.empty(), "--output must name a directory");
  const int eval_files = !c.eval_corpus.empty() + !c.eval_queries.empty() + !c.eval_qrels.empty();
  require(eval_files == 0 || eval_files == 3, "--eval-corpus, --eval-queries and --eval-qrels go together");
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
    throw std::invalid_argument(flag + " takes a size in bytes such as 536870912, 512M or 2G, got '" + text + "'");
  }
  return static_cast<int64_t>(value * scale);
}

namespace {
// Settings a resumed run may change: where it writes and logs, and how it uses the machine.
const char* const kFreeOnResume[] = {"output", "save_every", "log_every", "metrics_out", "eval", "eval_baseline",
                                     "eval_batch_size", "threads", "blas_threads"};
}  // namespace

nlohmann::json resume_invariant(const TrainConfig& c) {
  nlohmann::json j = c;
  for (const char* free : kFreeOnResume) j.erase(free);
  return j;
}

nlohmann::json distributed_invariant(const TrainConfig& c) {
  nlohmann::json j = c;
  for (const char* local : {"chunk_size", "passage_chunk_size", "chunk_size_auto", "memory_budget", "chunk_tokens",
                            "retain_chunks", "retain_memory", "threads", "blas_threads", "eval_batch_size"}) {
    j.erase(local);
  }
  return j;
}

TrainConfig resumed_config(const TrainConfig& saved, const TrainConfig& requested) {
  nlohmann::json j = saved;
  const nlohmann::json r = requested;
  for (const char* free : kFreeOnResume) j[free] = r.at(free);
  return j.get<TrainConfig>();
}

}  // namespace retriever
}  // namespace gradcache
