// The data of a training run: the task, the tokenizer, every text once, and the batches of
// each step, drawn so that a resumed run (and each rank of a distributed one) sees exactly the
// batches of the original. Texts are tokenized per batch (prepare_batch), which
// train/batch_prefetch.h runs ahead of the step in a background thread.
#pragma once

#include "retriever/data/dataset_mix.h"
#include "retriever/data/epoch_order.h"
#include "retriever/config/train_config.h"
#include "retriever/model/encoders.h"
#include "retriever/model/pretrained.h"
#include "retriever/model/tokenizer.h"
#include "retriever/run/load_task.h"
#include "retriever/search/evaluate.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gradcache {
namespace distributed {
class ProcessGroup;
}  // namespace distributed

namespace retriever {

/// Which share of each batch this process takes (rank r of W: rows [n r / W, n (r+1) / W) of
/// the batch, after sorting by length).
struct BatchShare {
  int rank = 0, world = 1;
};

/// One step's share of a batch, tokenized and padded, on the CPU.
struct PreparedBatch {
  std::vector<int64_t> examples;  ///< this process's examples, in the order of the rows
  TokenBatch queries;             ///< one row per example
  TokenBatch passages;            ///< each example's positive then its hard negatives (1 + k rows)
  std::string dataset;            ///< the data set the batch is drawn from, with several (--mix); else ""
};

class TrainingData {
 public:
  /// Where the tokenizer comes from: a pretrained model's (--model-dir, also when resumed),
  /// `saved` (a resumed run's), config.tokenizer.file, or trained on the training texts and
  /// written to `trained_path`. In a group, rank 0 trains it and the others load it after
  /// `group`'s barrier. The run's prompts (resolve_prompts) are put before the texts.
  struct TokenizerSource {
    const PretrainedModel* pretrained = nullptr;
    const std::string* saved = nullptr;
    std::string trained_path;
    const distributed::ProcessGroup* group = nullptr;
    /// A signal number here stops the loading between its phases, and the tokenizer's
    /// training at once (StoppedBySignal).
    const std::atomic<int>* stop = nullptr;
  };
  /// Loads the task and the tokenizer; throws std::invalid_argument naming the flag or file.
  TrainingData(const TrainConfig& config, const TokenizerSource& tokenizer, BatchShare share,
               const std::function<void(const std::string&)>& log);

  size_t size() const { return examples_->size(); }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const std::optional<TokenizedEvalSet>& eval_set() const { return eval_set_; }
  /// The dev data of model selection (--eval-every), tokenized on rank 0 only (it evaluates).
  const std::optional<TokenizedEvalSet>& dev_set() const { return dev_set_; }
  /// The evaluation set's texts (for the BM25 baseline), when there is one.
  const std::optional<EvalData>& eval_texts() const { return eval_texts_; }

  /// The order of `epoch`'s examples: EpochOrder::shuffled, rearranged by --no-duplicates
  /// (without_duplicate_texts over each example's query and the passages drawn for
  /// it in that epoch). With several data sets, each is so ordered (its own seed) and they are
  /// visited a batch at a time as --mix's schedule says (dataset_mix.h), each data set's last
  /// examples short of a full batch left out of that epoch. The same for every rank and on
  /// resume. `log` hears what was moved.
  EpochOrder order_of_epoch(int64_t epoch, const std::function<void(const std::string&)>& log) const;

  /// Batches an epoch has: the examples' (the last one short unless `keep_last` is false), or
  /// the --mix schedule's with several data sets.
  int64_t batches_per_epoch(bool keep_last) const;
  /// With several data sets, how many of the first `steps` batches each gives (summary.json);
  /// else empty.
  std::vector<std::pair<std::string, int64_t>> batches_per_dataset(int64_t steps) const;

  /// This process's share of batch `batch_in_epoch` of an epoch in `order`, read and
  /// tokenized: the batch's examples ordered by query length (less padding per chunk) unless in
  /// accumulate mode, where the order decides which examples share a sub-batch, then
  /// BatchShare's rows of them; the passages drawn for `epoch`. Changes nothing the constructor
  /// built: safe on any thread, concurrently.
  PreparedBatch prepare_batch(const EpochOrder& order, int64_t batch_in_epoch, int64_t epoch) const;

 private:
  void load_tokenizer(const TokenizerSource& source,
                      const std::function<void(const std::string&)>& log);
  void read_or_train_tokenizer(const TokenizerSource& source,
                               const std::function<void(const std::string&)>& log);
  /// With --negatives: every example has hard negatives (else std::invalid_argument naming one).
  void check_negatives() const;
  /// The passages example e draws in `epoch`: a positive, then --negatives hard negatives.
  std::vector<const std::string*> drawn_passages(const TrainExample& example, int64_t e, int64_t epoch) const;
  // One data set's order of `epoch` (its examples numbered from 0), rearranged by --no-duplicates.
  EpochOrder dataset_order(size_t size, size_t offset, uint64_t seed, int64_t epoch, const std::string& name,
                           const std::function<void(const std::string&)>& log) const;
  std::vector<size_t> full_batches_per_dataset() const;

  const TrainConfig& config_;
  BatchShare share_;
  std::optional<Tokenizer> tokenizer_;
  std::optional<TokenizedEvalSet> eval_set_, dev_set_;
  std::optional<EvalData> eval_texts_;
  std::shared_ptr<const TrainingExamples> examples_;
  std::vector<ExamplesPart> datasets_;  // examples_->parts()
  MixRule mix_;
};

}  // namespace retriever
}  // namespace gradcache
