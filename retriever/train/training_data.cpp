#include "retriever/train/training_data.h"

#include "retriever/model/batching.h"
#include "retriever/train/no_duplicates.h"

#include <gradcache/distributed.h>

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <unordered_map>

namespace gradcache {
namespace retriever {

uint64_t mix_seed(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Fisher-Yates with mt19937_64 (std::shuffle's algorithm is implementation-defined).
std::vector<int64_t> epoch_order(size_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(mix_seed(seed ^ mix_seed(static_cast<uint64_t>(epoch) + 1)));
  for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
  return order;
}

TrainingData::TrainingData(const TrainConfig& config, const TokenizerSource& tokenizer, BatchShare share,
                           const std::function<void(const std::string&)>& log)
    : config_(config), share_(share) {
  const auto task = load_task(config_);
  for (const auto& notice : task.notices) log(notice);
  if (task.train.empty()) throw std::invalid_argument("no training examples");
  stop_if_signalled(tokenizer.stop);
  load_tokenizer(task, tokenizer, log);
  stop_if_signalled(tokenizer.stop);
  const auto tokenize_start = std::chrono::steady_clock::now();
  tokenize_training(task);
  stop_if_signalled(tokenizer.stop);
  // Printed because it is part of the cost of training that metrics.jsonl's steps do not carry
  // (texts are tokenized once here, not per batch); bench/side_by_side.py reads it.
  char took[64];
  std::snprintf(took, sizeof took, "%.3f", std::chrono::duration<double>(std::chrono::steady_clock::now() - tokenize_start).count());
  log("tokenized " + std::to_string(query_tokens_.size()) + " queries and " + std::to_string(passage_tokens_.size()) +
      " passages in " + took + " s");
  auto tokenize = [&](const EvalData& data) {
    return tokenize_eval_set(data.name, data.corpus, data.queries, data.qrels, *tokenizer_,
                             static_cast<size_t>(config_.tokenizer.query_max_len),
                             static_cast<size_t>(config_.tokenizer.passage_max_len));
  };
  if (task.eval) {
    eval_set_ = tokenize(*task.eval);
    if (config_.eval.bm25 && share_.rank == 0) eval_texts_ = task.eval;
  }
  if (task.dev && share_.rank == 0) dev_set_ = tokenize(*task.dev);
}

namespace {

// Rank 0's `bytes` on every rank (the others pass ""): sent over the group, so that ranks on
// other machines need no shared file system.
std::string bytes_of_rank_zero(const distributed::ProcessGroup& group, const std::string& bytes) {
  auto local = torch::empty({static_cast<int64_t>(bytes.size())}, torch::kUInt8);
  if (!bytes.empty()) std::memcpy(local.data_ptr(), bytes.data(), bytes.size());
  const auto all = group.all_gather_rows(local).contiguous();  // only rank 0 has rows
  return std::string(static_cast<const char*>(all.data_ptr()), static_cast<size_t>(all.numel()));
}

}  // namespace

void TrainingData::load_tokenizer(const TaskData& task, const TokenizerSource& source,
                                  const std::function<void(const std::string&)>& log) {
  read_or_train_tokenizer(task, source, log);
  tokenizer_ = tokenizer_->with_prompts(resolve_prompts(config_.encoder.prompts(), source.pretrained));
}

void TrainingData::read_or_train_tokenizer(const TaskData& task, const TokenizerSource& source,
                                           const std::function<void(const std::string&)>& log) {
  if (source.pretrained) {  // a --model-dir model's own (also when resumed: the checkpoint holds it)
    tokenizer_ = pretrained_tokenizer(*source.pretrained);
    return;
  }
  if (source.saved) {
    tokenizer_ = Tokenizer::from_serialized(*source.saved);
    return;
  }
  if (!config_.tokenizer.file.empty()) {
    tokenizer_ = Tokenizer::load(config_.tokenizer.file);
    return;
  }
  if (share_.rank != 0) {  // rank 0 trains it (deterministic, but once is enough) and sends it
    tokenizer_ = Tokenizer::from_serialized(bytes_of_rank_zero(*source.group, ""));
    return;
  }
  std::vector<std::string> texts;
  for (const auto& ex : task.train) {
    texts.push_back(ex.query);
    texts.insert(texts.end(), ex.positives.begin(), ex.positives.end());
    texts.insert(texts.end(), ex.negatives.begin(), ex.negatives.end());
  }
  TokenizerTrainOptions options;
  options.vocab_size = static_cast<int>(config_.tokenizer.vocab_size);
  options.fit_vocab_size = true;
  options.stop = source.stop;
  log("training a tokenizer of up to " + std::to_string(options.vocab_size) + " pieces on " +
      std::to_string(std::min(texts.size(), options.max_sentences)) + " texts");
  const auto start = std::chrono::steady_clock::now();
  tokenizer_ = Tokenizer::train(texts, options, source.trained_path);
  if (tokenizer_->vocab_size() < config_.tokenizer.vocab_size) {
    const std::string pieces = std::to_string(tokenizer_->vocab_size());
    log("note: --vocab-size " + std::to_string(config_.tokenizer.vocab_size) +
        " is more than the training texts support; the tokenizer has the most they do, " + pieces +
        " pieces (pass --vocab-size " + pieces + " or less to silence this, or train on more text)");
  }
  log("trained a " + std::to_string(tokenizer_->vocab_size()) + "-piece tokenizer in " +
      std::to_string(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()).substr(0, 4) +
      " s");
  if (source.group) bytes_of_rank_zero(*source.group, tokenizer_->serialized());
}

// Token ids of every query, and of every distinct passage once.
void TrainingData::tokenize_training(const TaskData& task) {
  std::unordered_map<std::string, int64_t> passage_row;
  auto passage = [&](const std::string& text) {
    auto [it, inserted] = passage_row.emplace(text, static_cast<int64_t>(passage_tokens_.size()));
    if (inserted)
      passage_tokens_.push_back(
          tokenizer_->encode_passage(text, static_cast<size_t>(config_.tokenizer.passage_max_len)));
    return it->second;
  };
  for (size_t i = 0; i < task.train.size(); ++i) {
    const auto& ex = task.train[i];
    if (config_.batching.negatives > 0 && ex.negatives.empty()) {
      throw std::invalid_argument("--negatives " + std::to_string(config_.batching.negatives) + ": training example " +
                                  std::to_string(i + 1) + " (query \"" + ex.query.substr(0, 60) +
                                  "\") has no negatives; drop --negatives or give every example negatives");
    }
    query_tokens_.push_back(tokenizer_->encode_query(ex.query, static_cast<size_t>(config_.tokenizer.query_max_len)));
    positives_.emplace_back();
    for (const auto& p : ex.positives) positives_.back().push_back(passage(p));
    negatives_.emplace_back();
    if (config_.batching.negatives > 0) {
      for (const auto& n : ex.negatives) negatives_.back().push_back(passage(n));
    }
  }
  if (!config_.training.no_duplicates) return;
  // A query's text id: the row of the passage with the same text, else one past the passages'.
  std::unordered_map<std::string, int64_t> query_only;
  for (const auto& ex : task.train) {
    auto same = passage_row.find(ex.query);
    query_texts_.push_back(same != passage_row.end()
                               ? same->second
                               : query_only.emplace(ex.query, static_cast<int64_t>(passage_row.size() + query_only.size()))
                                     .first->second);
  }
}

std::vector<int64_t> TrainingData::batch_examples(const std::vector<int64_t>& order, int64_t batch_in_epoch) const {
  if (batch_in_epoch < 0 || static_cast<uint64_t>(batch_in_epoch) * config_.batching.batch_size >= order.size()) {
    throw std::out_of_range("batch " + std::to_string(batch_in_epoch + 1) +
                            " of an epoch does not exist: " + std::to_string(order.size()) +
                            " examples make fewer batches of " + std::to_string(config_.batching.batch_size));
  }
  const auto begin = static_cast<size_t>(batch_in_epoch * config_.batching.batch_size);
  std::vector<int64_t> examples(
      order.begin() + begin,
      order.begin() + std::min(order.size(), begin + static_cast<size_t>(config_.batching.batch_size)));
  if (config_.batching.sort_by_length && config_.batching.mode != TrainMode::Accumulate)
    examples = sorted_by_length(query_tokens_, examples);
  if (share_.world == 1) return examples;
  const size_t n = examples.size();
  return std::vector<int64_t>(examples.begin() + n * share_.rank / share_.world,
                              examples.begin() + n * (share_.rank + 1) / share_.world);
}

TokenBatch TrainingData::queries_of(const std::vector<int64_t>& examples, const c10::Device& device) const {
  auto batch = pad_batch(query_tokens_, examples);
  for (auto& [name, t] : batch) t = t.to(device);
  return batch;
}

// The passages are drawn from a generator that depends only on (seed, epoch, example): a
// resumed run draws the same ones.
std::vector<int64_t> TrainingData::drawn_passages(int64_t e, int64_t epoch) const {
  std::vector<int64_t> rows;
  std::mt19937_64 rng(
      mix_seed(config_.training.seed ^ mix_seed((static_cast<uint64_t>(epoch) << 32) ^ static_cast<uint64_t>(e))));
  const auto& pos = positives_[e];
  rows.push_back(pos[rng() % pos.size()]);
  auto negs = negatives_[e];
  for (int64_t k = 0; k < config_.batching.negatives; ++k) {
    if (static_cast<int64_t>(negs.size()) >= config_.batching.negatives) {  // without replacement
      std::swap(negs[k], negs[k + rng() % (negs.size() - k)]);
      rows.push_back(negs[k]);
    } else {  // too few: with replacement, as Tevatron does
      rows.push_back(negs[rng() % negs.size()]);
    }
  }
  return rows;
}

std::vector<int64_t> TrainingData::order_of_epoch(int64_t epoch, const std::function<void(const std::string&)>& log) const {
  std::vector<int64_t> order = epoch_order(size(), config_.training.seed, epoch);
  if (!config_.training.no_duplicates) return order;
  OrderWithoutDuplicates rearranged =
      without_duplicate_texts(order, config_.batching.batch_size, [&](int64_t e) {
        std::vector<int64_t> texts = drawn_passages(e, epoch);
        texts.push_back(query_texts_[static_cast<size_t>(e)]);
        return texts;
      });
  std::string told = "epoch " + std::to_string(epoch + 1) + ": --no-duplicates put " +
                     std::to_string(rearranged.moved) + " examples in a later batch";
  if (rearranged.batches_with_duplicates > 0)
    told += "; its last " + std::to_string(rearranged.batches_with_duplicates) +
            " batches are what was left and may hold a text twice";
  log(told);
  return std::move(rearranged.order);
}

TokenBatch TrainingData::passages_of(const std::vector<int64_t>& examples, int64_t epoch,
                                     const c10::Device& device) const {
  std::vector<int64_t> rows;
  for (auto e : examples) {
    const std::vector<int64_t> drawn = drawn_passages(e, epoch);
    rows.insert(rows.end(), drawn.begin(), drawn.end());
  }
  auto batch = pad_batch(passage_tokens_, rows);
  for (auto& [name, t] : batch) t = t.to(device);
  return batch;
}

}  // namespace retriever
}  // namespace gradcache
