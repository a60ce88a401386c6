// Loss scaling for fp16 training: PyTorch's torch.cuda.amp.GradScaler, in C++.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/arg.h>

#include <cstdint>
#include <functional>
#include <map>

namespace torch {
namespace optim {
class Optimizer;
}  // namespace optim
namespace serialize {
class OutputArchive;
class InputArchive;
}  // namespace serialize
}  // namespace torch

namespace gradcache {

struct GradScalerOptions {
  /// The first loss scale.
  TORCH_ARG(double, init_scale) = 65536.0;
  /// The scale is multiplied by this after growth_interval steps in a row without inf/NaN.
  TORCH_ARG(double, growth_factor) = 2.0;
  /// ... and by this after a step whose gradients had an inf or NaN (the step is skipped).
  TORCH_ARG(double, backoff_factor) = 0.5;
  TORCH_ARG(int64_t, growth_interval) = 2000;
  /// Disabled, every method passes through: scale() returns the loss, step() steps.
  TORCH_ARG(bool, enabled) = true;
  /// Data-parallel training: gets whether this process found an inf/NaN gradient, returns
  /// whether any process did, so that all skip (or take) the step together and keep the same
  /// scale. gradcache::distributed::any_rank(group) gives one.
  TORCH_ARG(std::function<bool(bool)>, agree_found_inf) = nullptr;
};

/// Dynamic loss scaling (docs/design.md §2, "Loss scaling"), with the semantics of PyTorch's
/// GradScaler:
///
///   auto loss = model_loss(...);
///   scaler.scale(loss).backward();  // or GradCacheOptions().scaler(scaler): the cache step
///   scaler.unscale_(optimizer);     // optional: to clip the true gradients
///   scaler.step(optimizer);         // skipped when a gradient is inf or NaN
///   scaler.update();                // backs off after a skip, grows after a run of good steps
///
/// With GradCache, only the loss of the build-cache step is scaled; the cached gradients
/// carry the scale into the replay, and the parameter gradients come out scaled.
class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {});

  /// `loss` times the current scale (`loss` itself when disabled).
  at::Tensor scale(const at::Tensor& loss) const;
  /// Divides the gradients of `optimizer`'s parameters by the scale, in place, and records
  /// whether any is inf or NaN. At most once per optimizer between update()s, before step().
  void unscale_(torch::optim::Optimizer& optimizer);
  /// unscale_ (unless done), then optimizer.step() unless a gradient was inf or NaN.
  /// Returns whether the optimizer stepped. At most once per optimizer between update()s.
  bool step(torch::optim::Optimizer& optimizer);
  /// Adjusts the scale after a step: backoff if any optimizer found inf/NaN, else growth
  /// every growth_interval steps in a row. Needs unscale_ or step first.
  void update();
  /// Sets the scale (and restarts the growth count).
  void update(double new_scale);

  /// The current scale (1 when disabled).
  double get_scale() const { return options_.enabled() ? scale_ : 1.0; }
  /// Steps without inf/NaN since the last growth or backoff.
  int64_t growth_tracker() const { return growth_tracker_; }
  bool is_enabled() const { return options_.enabled(); }
  const GradScalerOptions& options() const { return options_; }
  /// Whether unscale_ found an inf or NaN gradient of `optimizer` since the last update().
  bool found_inf(const torch::optim::Optimizer& optimizer) const;

  /// What a checkpoint keeps: the scale, the growth count and the factors (PyTorch's state_dict).
  struct State {
    double scale = 65536.0;
    int64_t growth_tracker = 0;
    double growth_factor = 2.0;
    double backoff_factor = 0.5;
    int64_t growth_interval = 2000;
  };
  State state() const;
  void load_state(const State& state);
  void save(torch::serialize::OutputArchive& archive) const;
  /// Throws if the archive does not hold a GradScaler's state.
  void load(torch::serialize::InputArchive& archive);

 private:
  enum class Stage { ready, unscaled, stepped };
  struct PerOptimizer {
    Stage stage = Stage::ready;
    bool found_inf = false;
  };

  GradScalerOptions options_;
  double scale_;
  int64_t growth_tracker_ = 0;
  std::map<const torch::optim::Optimizer*, PerOptimizer> per_optimizer_;
};

}  // namespace gradcache
