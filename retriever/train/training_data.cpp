#include "retriever/train/training_data.h"

#include "retriever/files/fnv1a.h"
#include "retriever/model/batching.h"
#include "retriever/train/no_duplicates.h"

#include <gradcache/distributed.h>

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>

namespace gradcache {
namespace retriever {

TrainingData::TrainingData(const TrainConfig& config, const TokenizerSource& tokenizer, BatchShare share,
                           const std::function<void(const std::string&)>& log)
    : config_(config), share_(share) {
  const auto task = load_task(config_);
  for (const auto& notice : task.notices) log(notice);
  examples_ = task.train;
  if (!examples_ || examples_->size() == 0) throw std::invalid_argument("no training examples");
  datasets_ = examples_->parts();
  if (datasets_.size() > 1) {
    mix_ = parse_mix(config_.data.mix, datasets_.size());
    for (const auto& dataset : datasets_) {
      if (dataset.size < static_cast<size_t>(config_.batching.batch_size))
        throw std::invalid_argument("the data set " + dataset.name + " has " + std::to_string(dataset.size) +
                                    " examples, fewer than a batch (--batch-size " +
                                    std::to_string(config_.batching.batch_size) +
                                    "): each batch is drawn from one data set; lower --batch-size or leave it out");
    }
  }
  check_negatives();
  stop_if_signalled(tokenizer.stop);
  load_tokenizer(tokenizer, log);
  stop_if_signalled(tokenizer.stop);
  log("training data: " + std::to_string(examples_->size()) + " examples " + examples_->source() +
      "; texts are tokenized per batch");
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

void TrainingData::load_tokenizer(const TokenizerSource& source,
                                  const std::function<void(const std::string&)>& log) {
  read_or_train_tokenizer(source, log);
  tokenizer_ = tokenizer_->with_prompts(resolve_prompts(config_.encoder.prompts(), source.pretrained));
}

void TrainingData::read_or_train_tokenizer(const TokenizerSource& source,
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
  TokenizerTrainOptions options;
  // Every example's texts up to kTokenizerExamples examples, else every n-th example's:
  // sentencepiece samples options.max_sentences of them anyway, and a file larger than
  // memory is not read into it.
  constexpr size_t kTokenizerExamples = 200000;
  const size_t stride = (examples_->size() + kTokenizerExamples - 1) / kTokenizerExamples;
  std::vector<std::string> texts;
  for (size_t i = 0; i < examples_->size(); i += stride) {
    TrainExample ex = examples_->at(i);
    texts.push_back(std::move(ex.query));
    for (auto& p : ex.positives) texts.push_back(std::move(p));
    for (auto& n : ex.negatives) texts.push_back(std::move(n));
  }
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

void TrainingData::check_negatives() const {
  if (config_.batching.negatives == 0) return;
  if (const auto i = examples_->first_without_negatives()) {
    throw std::invalid_argument("--negatives " + std::to_string(config_.batching.negatives) + ": training example " +
                                std::to_string(*i + 1) + " (query \"" + examples_->at(*i).query.substr(0, 60) +
                                "\") has no negatives; drop --negatives or give every example negatives");
  }
}

PreparedBatch TrainingData::prepare_batch(const EpochOrder& order, int64_t batch_in_epoch,
                                          int64_t epoch) const {
  const auto batch_size = static_cast<uint64_t>(config_.batching.batch_size);
  if (batch_in_epoch < 0 || static_cast<uint64_t>(batch_in_epoch) * batch_size >= order.size()) {
    throw std::out_of_range("batch " + std::to_string(batch_in_epoch + 1) +
                            " of an epoch does not exist: " + std::to_string(order.size()) +
                            " examples make fewer batches of " + std::to_string(batch_size));
  }
  const auto begin = static_cast<size_t>(batch_in_epoch) * batch_size;
  std::vector<int64_t> batch;
  for (size_t i = begin; i < std::min<size_t>(order.size(), begin + batch_size); ++i) batch.push_back(order[i]);
  PreparedBatch prepared;
  if (datasets_.size() > 1) prepared.dataset = datasets_[order.dataset_of(begin)].name;
  const auto query_max_len = static_cast<size_t>(config_.tokenizer.query_max_len);
  // examples[i] and queries[i] are batch[i]'s; positions index them. Sorted by query length
  // (less padding per chunk) unless in accumulate mode, where the order decides which examples
  // share a sub-batch. Sorting needs every query's length: then each rank reads and tokenizes
  // the batch's queries and sorts them as one process does, so that the ranks' chunks are one
  // process's chunks (the same sums, in the same order); else it reads only its share.
  std::vector<std::optional<TrainExample>> examples(batch.size());
  std::vector<std::vector<int64_t>> queries(batch.size());
  auto read = [&](size_t i) {
    if (examples[i]) return;
    examples[i] = examples_->at(static_cast<size_t>(batch[i]));
    queries[i] = tokenizer_->encode_query(examples[i]->query, query_max_len);
  };
  std::vector<int64_t> positions(batch.size());
  std::iota(positions.begin(), positions.end(), 0);
  if (config_.batching.sort_by_length && config_.batching.mode != TrainMode::Accumulate) {
    for (size_t i = 0; i < batch.size(); ++i) read(i);
    positions = sorted_by_length(queries, positions);
  }
  const size_t n = positions.size();
  positions = std::vector<int64_t>(positions.begin() + n * share_.rank / share_.world,
                                   positions.begin() + n * (share_.rank + 1) / share_.world);
  for (const int64_t position : positions) read(static_cast<size_t>(position));
  std::vector<std::vector<int64_t>> passages;
  const auto passage_max_len = static_cast<size_t>(config_.tokenizer.passage_max_len);
  for (const int64_t position : positions) {
    const auto i = static_cast<size_t>(position);
    prepared.examples.push_back(batch[i]);
    for (const std::string* text : drawn_passages(*examples[i], batch[i], epoch))
      passages.push_back(tokenizer_->encode_passage(*text, passage_max_len));
  }
  prepared.queries = pad_batch(queries, positions);
  std::vector<int64_t> rows(passages.size());
  std::iota(rows.begin(), rows.end(), 0);
  prepared.passages = pad_batch(passages, rows);
  return prepared;
}

// The passages are drawn from a generator that depends only on (seed, epoch, example): a
// resumed run draws the same ones.
std::vector<const std::string*> TrainingData::drawn_passages(const TrainExample& example, int64_t e,
                                                             int64_t epoch) const {
  std::vector<const std::string*> drawn;
  std::mt19937_64 rng(
      mix_seed(config_.training.seed ^ mix_seed((static_cast<uint64_t>(epoch) << 32) ^ static_cast<uint64_t>(e))));
  const auto& pos = example.positives;
  drawn.push_back(&pos[rng() % pos.size()]);
  std::vector<const std::string*> negs;
  for (const auto& n : example.negatives) negs.push_back(&n);
  for (int64_t k = 0; k < config_.batching.negatives; ++k) {
    if (static_cast<int64_t>(negs.size()) >= config_.batching.negatives) {  // without replacement
      std::swap(negs[k], negs[k + rng() % (negs.size() - k)]);
      drawn.push_back(negs[k]);
    } else {  // too few: with replacement, as Tevatron does
      drawn.push_back(negs[rng() % negs.size()]);
    }
  }
  return drawn;
}

EpochOrder TrainingData::order_of_epoch(int64_t epoch, const std::function<void(const std::string&)>& log) const {
  const uint64_t seed = config_.training.seed;
  if (datasets_.size() == 1) return dataset_order(size(), 0, seed, epoch, "", log);
  std::vector<EpochOrder> orders;
  std::vector<size_t> offsets;
  size_t offset = 0;
  for (size_t d = 0; d < datasets_.size(); ++d) {  // each its own order: seeds apart
    orders.push_back(dataset_order(datasets_[d].size, offset, mix_seed(seed ^ mix_seed(0x64617461ULL + d)), epoch,
                                   datasets_[d].name, log));
    offsets.push_back(offset);
    offset += datasets_[d].size;
  }
  return EpochOrder::mixed(std::move(orders), std::move(offsets),
                           mix_schedule(full_batches_per_dataset(), mix_, seed, epoch),
                           static_cast<size_t>(config_.batching.batch_size));
}

EpochOrder TrainingData::dataset_order(size_t n, size_t offset, uint64_t seed, int64_t epoch, const std::string& name,
                                       const std::function<void(const std::string&)>& log) const {
  EpochOrder order = EpochOrder::shuffled(n, seed, epoch);
  if (!config_.training.no_duplicates) return order;
  OrderWithoutDuplicates rearranged =
      without_duplicate_texts(order.all(), config_.batching.batch_size, [&](int64_t local) {
        // A text's id is its hash: equal texts, query or passage, are one text.
        const int64_t e = static_cast<int64_t>(offset) + local;
        const TrainExample example = examples_->at(static_cast<size_t>(e));
        std::vector<int64_t> texts;
        for (const std::string* text : drawn_passages(example, e, epoch))
          texts.push_back(static_cast<int64_t>(fnv1a64(*text)));
        texts.push_back(static_cast<int64_t>(fnv1a64(example.query)));
        return texts;
      });
  std::string told = "epoch " + std::to_string(epoch + 1) + (name.empty() ? "" : ", data set " + name) +
                     ": --no-duplicates put " + std::to_string(rearranged.moved) + " examples in a later batch";
  if (rearranged.batches_with_duplicates > 0)
    told += "; its last " + std::to_string(rearranged.batches_with_duplicates) +
            " batches are what was left and may hold a text twice";
  log(told);
  return EpochOrder::held(rearranged.order);
}

std::vector<size_t> TrainingData::full_batches_per_dataset() const {
  std::vector<size_t> batches;
  for (const auto& dataset : datasets_) batches.push_back(dataset.size / static_cast<size_t>(config_.batching.batch_size));
  return batches;
}

int64_t TrainingData::batches_per_epoch(bool keep_last) const {
  const auto n = static_cast<int64_t>(size()), batch = config_.batching.batch_size;
  if (datasets_.size() > 1) return static_cast<int64_t>(mixed_batches_per_epoch(full_batches_per_dataset(), mix_));
  return keep_last ? (n + batch - 1) / batch : n / batch;
}

std::vector<std::pair<std::string, int64_t>> TrainingData::batches_per_dataset(int64_t steps) const {
  std::vector<std::pair<std::string, int64_t>> counts;
  if (datasets_.size() < 2) return counts;
  for (const auto& dataset : datasets_) counts.emplace_back(dataset.name, 0);
  const int64_t per_epoch = batches_per_epoch(false);
  for (int64_t epoch = 0; per_epoch > 0 && epoch * per_epoch < steps; ++epoch) {
    const auto schedule = mix_schedule(full_batches_per_dataset(), mix_, config_.training.seed, epoch);
    for (int64_t b = 0; b < per_epoch && epoch * per_epoch + b < steps; ++b) ++counts[schedule[static_cast<size_t>(b)].dataset].second;
  }
  return counts;
}

}  // namespace retriever
}  // namespace gradcache
