#include "retriever/train/training_step.h"

#include <gradcache/contrastive_loss.h>
#include <gradcache/distributed.h>
#include <gradcache/grad_cache.h>
#include <gradcache/model_call.h>
#include <gradcache/similarity.h>

#include <ATen/ATen.h>

#include <chrono>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <unordered_set>

namespace gradcache {
namespace retriever {
namespace {

// A model call as the cache makes it (under autocast for `precision`, the representation in
// fp32), so that full and accumulate compute what the cache computes.
at::Tensor encode(const Model& model, const ModelInput& input, Precision precision) {
  return chunk_representation(model, input, precision, /*get_rep=*/nullptr);
}

// The parameters of both models, each once (a tied encoder is the same module twice).
std::vector<at::Tensor> unique_parameters(const Model& a, const Model& b) {
  std::vector<at::Tensor> out;
  std::unordered_set<const void*> seen;
  for (const auto* model : {&a, &b}) {
    for (const auto& p : model->parameters()) {
      if (seen.insert(p.unsafeGetTensorImpl()).second) out.push_back(p);
    }
  }
  return out;
}

int64_t rows_of(const ModelInput& input, const char* what) {
  const auto rows = input.batch_size();
  if (!rows || *rows == 0) throw std::invalid_argument(std::string("training step: the ") + what + " are empty");
  return *rows;
}

// Passages per query (1 + k); throws unless the passages are whole groups of the queries.
int64_t group_size(const ModelInput& queries, const ModelInput& passages) {
  const int64_t n = rows_of(queries, "queries"), m = rows_of(passages, "passages");
  if (m % n != 0) {
    throw std::invalid_argument("training step: " + std::to_string(m) + " passages for " + std::to_string(n) +
                                " queries; expected 1 + k passages per query");
  }
  return m / n;
}

// Runs `fn`, adding its wall seconds to `total`.
template <class Fn>
auto timed(double& total, Fn&& fn) {
  struct Add {
    double& total;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    ~Add() { total += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); }
  } add{total};
  return fn();
}

// Shared by full and accumulate: the models, the loss, the backward with or without a
// scaler, and the sum of the gradients over the ranks.
class DirectStep : public TrainingStep {
 public:
  DirectStep(Model query_model, Model passage_model, Loss loss, StepOptions options)
      : TrainingStep(std::move(options)),
        query_model_(std::move(query_model)),
        passage_model_(std::move(passage_model)),
        loss_(std::move(loss)),
        parameters_(unique_parameters(query_model_, passage_model_)) {
    for (const auto& p : options_.similarity().parameters()) parameters_.push_back(p);
    if (options_.group()) synchronizer_.emplace(*options_.group());
  }

 protected:
  void backward(const at::Tensor& loss) {
    if (options_.scaler()) {
      options_.scaler()->scale(loss).backward();
    } else {
      loss.backward();
    }
  }
  void sum_gradients_over_ranks() {
    if (!synchronizer_) return;
    synchronizer_->start(parameters_);
    synchronizer_->finish();
  }

  Model query_model_, passage_model_;
  Loss loss_;
  std::vector<at::Tensor> parameters_;
  c10::optional<distributed::GradientSynchronizer> synchronizer_;
};

// The loss of the batch of every rank: sharded when given, else over the gathered
// representations. Either way every rank gets the same (global) loss value, and skips a
// non-finite one alike.
Loss whole_batch_loss(Loss loss, const StepOptions& options) {
  if (!options.group()) return loss;
  if (options.sharded_loss().defined()) return options.sharded_loss();
  return distributed::gather_input_tensor(*options.group(), std::move(loss));
}

// The whole batch in one pass per model; with a group, the loss of every rank's batch.
class FullStep : public DirectStep {
 public:
  FullStep(Model query_model, Model passage_model, Loss loss, StepOptions options)
      : DirectStep(std::move(query_model), std::move(passage_model), whole_batch_loss(std::move(loss), options),
                   options) {}

  double run(const ModelInput& queries, const ModelInput& passages) override {
    group_size(queries, passages);
    times_ = {};
    auto q = timed(times_.forward_s, [&] { return encode(query_model_, queries, options_.precision()); });
    auto p = timed(times_.forward_s, [&] { return encode(passage_model_, passages, options_.precision()); });
    auto loss = timed(times_.loss_s, [&] { return loss_({q, p}); });
    const double value = timed(times_.loss_s, [&] { return loss.item<double>(); });
    if (!std::isfinite(value)) return value;
    timed(times_.backward_s, [&] {
      backward(loss);
      sum_gradients_over_ranks();
    });
    return value;
  }
};

// Gradients as they were before a step, to put back when a later sub-batch's loss is not
// finite. Zero or absent gradients (the usual case: the caller zeroes them) cost no copy.
class GradientSnapshot {
 public:
  explicit GradientSnapshot(const std::vector<at::Tensor>& params) : params_(params) {
    for (const auto& p : params_) {
      const auto& g = p.grad();
      saved_.push_back(g.defined() && g.count_nonzero().item<int64_t>() > 0 ? g.clone() : at::Tensor());
      was_defined_.push_back(g.defined());
    }
  }
  void restore() {
    for (size_t i = 0; i < params_.size(); ++i) {
      auto& g = params_[i].mutable_grad();
      if (!was_defined_[i]) {
        g = at::Tensor();
      } else if (saved_[i].defined()) {
        g.copy_(saved_[i]);
      } else if (g.defined()) {
        g.zero_();
      }
    }
  }

 private:
  std::vector<at::Tensor> params_, saved_;
  std::vector<bool> was_defined_;
};

// Gradient accumulation, the paper's baseline: each sub-batch of sub_batch_size queries
// with their own 1 + k passages is its own contrastive batch (its queries see only its
// passages). Each sub-batch's loss is scaled by its rows over the global batch, so the sum is
// a mean over the batch, and backpropagated at once (one sub-batch's activations at a time).
class AccumulateStep : public DirectStep {
 public:
  using DirectStep::DirectStep;

  double run(const ModelInput& queries, const ModelInput& passages) override {
    const int64_t group = group_size(queries, passages);
    const int64_t n = rows_of(queries, "queries");
    const int64_t world = options_.group() ? options_.group()->world_size() : 1;
    const auto& split = options_.split_input_fn() ? options_.split_input_fn() : SplitInputFn(split_input);
    const auto q_parts = split(queries, options_.sub_batch_size());
    const auto p_parts = split(passages, options_.sub_batch_size() * group);
    if (q_parts.size() != p_parts.size()) {
      throw std::invalid_argument("accumulate: the split function cut the queries into " +
                                  std::to_string(q_parts.size()) + " sub-batches and their passages into " +
                                  std::to_string(p_parts.size()) + "; it must cut by rows");
    }
    // One sub-batch alone is checked before its backward: only more need the snapshot.
    std::optional<GradientSnapshot> before;
    if (q_parts.size() > 1 || options_.group()) before.emplace(parameters_);
    double total = 0;
    times_ = {};
    for (size_t i = 0; i < q_parts.size() && std::isfinite(total); ++i) {
      const int64_t rows = rows_of(q_parts[i], "queries of a sub-batch");
      auto q = timed(times_.forward_s, [&] { return encode(query_model_, q_parts[i], options_.precision()); });
      auto p = timed(times_.forward_s, [&] { return encode(passage_model_, p_parts[i], options_.precision()); });
      auto loss = timed(times_.loss_s, [&] {
        return loss_({q, p}) * (static_cast<double>(rows) / static_cast<double>(n * world));
      });
      const double value = timed(times_.loss_s, [&] { return loss.item<double>(); });
      total += value;
      if (std::isfinite(value)) timed(times_.backward_s, [&] { backward(loss); });
    }
    // The ranks skip together: a rank's sub-batch loss is its own, unlike the gathered losses.
    const bool skip = options_.group() ? distributed::any_rank(*options_.group())(!std::isfinite(total))
                                       : !std::isfinite(total);
    if (skip) {
      if (before) before->restore();
      return std::isfinite(total) ? NAN : total;
    }
    sum_gradients_over_ranks();
    return total;
  }
};

// InfoNCE over Phi's [N, M] scores with one graph: what the dual cache computes in tiles.
Loss similarity_loss(PairScorer phi, DualCacheOptions o) {
  return [phi, o](const at::Tensor& q, const at::Tensor& p) {
    return score_matrix_loss(phi(q, p) / o.temperature(), o.reduction(), o.symmetric());
  };
}

// The rows of a token batch's tensors in `order`.
ModelInput rows_in_order(const ModelInput& batch, const at::Tensor& order) {
  std::map<std::string, at::Tensor> rows;
  for (const auto& [name, value] : batch.kwargs()) rows.emplace(name, value.toTensor().index_select(0, order));
  return rows;
}

// Gradient Cache: the library's GradCache, its data-parallel form with a group, or the dual
// cache with a learned similarity.
class CacheStep : public TrainingStep {
 public:
  CacheStep(Model query_model, Model passage_model, Loss loss, StepOptions options) : TrainingStep(std::move(options)) {
    auto cache_options = GradCacheOptions(options_.cache())
                             .split_input_fn(options_.split_input_fn())
                             .precision(options_.precision())
                             .scaler(options_.scaler());
    std::vector<Model> models{std::move(query_model), std::move(passage_model)};
    const int64_t passage_chunk =
        options_.passage_chunk_size() > 0 ? options_.passage_chunk_size() : options_.chunk_size();
    std::vector<int64_t> chunk_sizes{options_.chunk_size(), passage_chunk};
    if (options_.similarity().defined()) {
      cache_ = std::make_unique<DualGradCache>(models, chunk_sizes, options_.similarity(),
                                               options_.similarity_options(), cache_options);
    } else if (options_.group()) {
      cache_ = std::make_unique<distributed::DistributedGradCache>(
          *options_.group(), models, chunk_sizes, in_batch_order(whole_batch_loss(std::move(loss), options_)),
          cache_options,
          distributed::DistributedOptions().gather_inputs(false));  // whole_batch_loss gathers when it must
    } else {
      cache_ = std::make_unique<GradCache>(models, chunk_sizes, in_batch_order(std::move(loss)), cache_options);
    }
  }

  double run(const ModelInput& queries, const ModelInput& passages) override {
    passage_positions_ = at::Tensor();
    ModelInput sorted = passages;
    if (options_.sort_passages() && !options_.similarity().defined() && passages.kwargs().count("attention_mask")) {
      const auto lengths = passages.kwarg("attention_mask").ne(0).sum(1);
      const auto order = std::get<1>(lengths.sort(/*stable=*/true, /*dim=*/0, /*descending=*/false));
      passage_positions_ = at::argsort(order);  // where each passage of the batch went
      sorted = rows_in_order(passages, order);
    }
    try {
      const double loss = cache_->cache_step({queries, sorted}).item<double>();
      times_ = cache_->last_step_times();
      return loss;
    } catch (const NonFiniteLossError& e) {  // nothing was backpropagated
      return e.loss();
    }
  }

 private:
  // sort_passages: the sorted passages' representations put back in batch order before the
  // loss, and before any gathering over ranks (which whole_batch_loss does inside `inner`).
  Loss in_batch_order(Loss inner) {
    if (!options_.sort_passages()) return inner;
    return [this, inner = std::move(inner)](const std::vector<at::Tensor>& reps, const LossArgs& args) {
      if (!passage_positions_.defined()) return inner(reps, args);
      check_two_reps(reps, "sort_passages");
      return inner({reps[0], reps[1].index_select(0, passage_positions_)}, args);
    };
  }

  std::unique_ptr<GradCacheBase> cache_;
  at::Tensor passage_positions_;  // sort_passages: row i of the batch is row passage_positions_[i] of the sorted passages
};

void check_options(const StepOptions& o) {
  auto require = [](bool ok, const std::string& message) {
    if (!ok) throw std::invalid_argument("make_training_step: " + message);
  };
  require(o.chunk_size() > 0, "chunk_size must be positive, got " + std::to_string(o.chunk_size()));
  require(o.passage_chunk_size() >= 0, "passage_chunk_size must be >= 0 (0: chunk_size), got " +
                                           std::to_string(o.passage_chunk_size()));
  require(o.sub_batch_size() > 0, "sub_batch_size must be positive, got " + std::to_string(o.sub_batch_size()));
  if (!o.similarity().defined()) return;
  // (One process only: the trainer checks it, config/similarity_settings.h.)
  require(!o.scaler(), "a learned similarity takes no fp16 loss scaler (Phi's gradients are not scaled)");
}

}  // namespace

std::unique_ptr<TrainingStep> make_training_step(Model query_model, Model passage_model, Loss loss,
                                                 StepOptions options) {
  check_options(options);
  if (options.similarity().defined()) loss = similarity_loss(options.similarity(), options.similarity_options());
  if (options.mode() == TrainMode::Cache) {
    return std::make_unique<CacheStep>(std::move(query_model), std::move(passage_model), std::move(loss),
                                       std::move(options));
  }
  if (options.mode() == TrainMode::Full) {
    return std::make_unique<FullStep>(std::move(query_model), std::move(passage_model), std::move(loss),
                                      std::move(options));
  }
  return std::make_unique<AccumulateStep>(std::move(query_model), std::move(passage_model), std::move(loss),
                                          std::move(options));
}

}  // namespace retriever
}  // namespace gradcache
