#include <gradcache/grad_scaler.h>

#include <gradcache/grad_cache.h>  // scale_loss

#include <torch/optim/optimizer.h>
#include <torch/serialize/archive.h>

#include <ATen/ATen.h>

#include <cmath>
#include <unordered_map>

namespace gradcache {

GradScaler::GradScaler(GradScalerOptions options) : options_(std::move(options)), scale_(options_.init_scale()) {
  TORCH_CHECK(std::isfinite(options_.init_scale()) && options_.init_scale() > 0,
              "GradScaler: init_scale must be positive and finite, got ", options_.init_scale());
  TORCH_CHECK(options_.growth_factor() > 1.0, "GradScaler: growth_factor must be > 1, got ", options_.growth_factor());
  TORCH_CHECK(options_.backoff_factor() > 0.0 && options_.backoff_factor() < 1.0,
              "GradScaler: backoff_factor must be in (0, 1), got ", options_.backoff_factor());
  TORCH_CHECK(options_.growth_interval() > 0, "GradScaler: growth_interval must be positive, got ",
              options_.growth_interval());
}

at::Tensor GradScaler::scale(const at::Tensor& loss) const {
  if (!options_.enabled()) return loss;
  TORCH_CHECK(loss.defined() && loss.is_floating_point(), "GradScaler::scale: expected a floating-point loss, got ",
              loss.defined() ? loss.toString() : std::string("an undefined tensor"));
  return loss * scale_;
}

at::Tensor scale_loss(const GradScaler& scaler, const at::Tensor& loss) { return scaler.scale(loss); }

void GradScaler::unscale_(torch::optim::Optimizer& optimizer) {
  if (!options_.enabled()) return;
  auto& state = per_optimizer_[&optimizer];
  TORCH_CHECK(state.stage != Stage::unscaled,
              "GradScaler::unscale_: already called for this optimizer since the last update(); call it once per "
              "step, before step()");
  TORCH_CHECK(state.stage != Stage::stepped,
              "GradScaler::unscale_: called after step(); unscale before stepping, and call update() after");
  // Like PyTorch: the reciprocal in double, applied in float (exact for the power-of-2 scales
  // that growth and backoff by 2 produce).
  const float inv_scale = static_cast<float>(1.0 / scale_);
  std::unordered_map<std::string, at::Tensor> non_finite;  // per device: one sync each at the end
  c10::NoGradGuard no_grad;
  for (auto& group : optimizer.param_groups()) {
    for (auto& p : group.params()) {
      auto& g = p.mutable_grad();
      if (!g.defined()) continue;
      TORCH_CHECK(g.scalar_type() != at::kHalf,
                  "GradScaler::unscale_: a parameter has fp16 gradients; keep the parameters in fp32 and let "
                  "autocast (Precision::fp16) compute in fp16");
      if (g.is_sparse()) g = g.coalesce();
      g.mul_(inv_scale);
      auto values = g.is_sparse() ? g._values() : g;
      auto bad = at::isfinite(values).all().logical_not();
      auto& flag = non_finite[g.device().str()];
      flag = flag.defined() ? flag.logical_or(bad) : bad;
    }
  }
  bool found = false;
  for (const auto& [device, flag] : non_finite) found = found || flag.item<bool>();
  if (options_.agree_found_inf()) found = options_.agree_found_inf()(found);
  state.found_inf = found;
  state.stage = Stage::unscaled;
}

bool GradScaler::step(torch::optim::Optimizer& optimizer) {
  if (!options_.enabled()) {
    optimizer.step();
    return true;
  }
  auto& state = per_optimizer_[&optimizer];
  TORCH_CHECK(state.stage != Stage::stepped,
              "GradScaler::step: already called for this optimizer since the last update(); call update() after "
              "each step");
  if (state.stage == Stage::ready) unscale_(optimizer);
  auto& after = per_optimizer_[&optimizer];
  after.stage = Stage::stepped;
  if (after.found_inf) return false;  // inf/NaN gradients: the parameters stay as they are
  optimizer.step();
  return true;
}

void GradScaler::update() {
  if (!options_.enabled()) return;
  TORCH_CHECK(!per_optimizer_.empty(),
              "GradScaler::update: no gradients were checked since the last update(); call unscale_() or step() "
              "first");
  bool found = false;
  for (const auto& [optimizer, state] : per_optimizer_) found = found || state.found_inf;
  if (found) {
    scale_ *= options_.backoff_factor();
    growth_tracker_ = 0;
  } else if (++growth_tracker_ == options_.growth_interval()) {
    // Like PyTorch, the scale does not grow into inf.
    if (std::isfinite(scale_ * options_.growth_factor())) scale_ *= options_.growth_factor();
    growth_tracker_ = 0;
  }
  per_optimizer_.clear();
}

void GradScaler::update(double new_scale) {
  if (!options_.enabled()) return;
  TORCH_CHECK(std::isfinite(new_scale) && new_scale > 0, "GradScaler::update: the new scale must be positive and "
              "finite, got ", new_scale);
  scale_ = new_scale;
  growth_tracker_ = 0;
  per_optimizer_.clear();
}

bool GradScaler::found_inf(const torch::optim::Optimizer& optimizer) const {
  auto it = per_optimizer_.find(&optimizer);
  return it != per_optimizer_.end() && it->second.found_inf;
}

GradScaler::State GradScaler::state() const {
  State s;
  s.scale = scale_;
  s.growth_tracker = growth_tracker_;
  s.growth_factor = options_.growth_factor();
  s.backoff_factor = options_.backoff_factor();
  s.growth_interval = options_.growth_interval();
  return s;
}

void GradScaler::load_state(const State& s) {
  TORCH_CHECK(std::isfinite(s.scale) && s.scale > 0, "GradScaler::load_state: the scale must be positive and finite, "
              "got ", s.scale);
  TORCH_CHECK(s.growth_tracker >= 0 && s.growth_interval > 0 && s.growth_factor > 1 && s.backoff_factor > 0 &&
                  s.backoff_factor < 1,
              "GradScaler::load_state: malformed state (growth tracker ", s.growth_tracker, ", interval ",
              s.growth_interval, ", factors ", s.growth_factor, " and ", s.backoff_factor, ")");
  scale_ = s.scale;
  growth_tracker_ = s.growth_tracker;
  options_.growth_factor(s.growth_factor).backoff_factor(s.backoff_factor).growth_interval(s.growth_interval);
  per_optimizer_.clear();
}

void GradScaler::save(torch::serialize::OutputArchive& archive) const {
  const auto s = state();
  archive.write("scale", c10::IValue(s.scale));
  archive.write("growth_tracker", c10::IValue(s.growth_tracker));
  archive.write("growth_factor", c10::IValue(s.growth_factor));
  archive.write("backoff_factor", c10::IValue(s.backoff_factor));
  archive.write("growth_interval", c10::IValue(s.growth_interval));
}

void GradScaler::load(torch::serialize::InputArchive& archive) {
  c10::IValue scale, tracker, growth, backoff, interval;
  TORCH_CHECK(archive.try_read("scale", scale) && archive.try_read("growth_tracker", tracker) &&
                  archive.try_read("growth_factor", growth) && archive.try_read("backoff_factor", backoff) &&
                  archive.try_read("growth_interval", interval) && scale.isDouble() && tracker.isInt() &&
                  growth.isDouble() && backoff.isDouble() && interval.isInt(),
              "GradScaler::load: the archive does not hold a GradScaler state (scale, growth_tracker, growth_factor, "
              "backoff_factor, growth_interval)");
  State s;
  s.scale = scale.toDouble();
  s.growth_tracker = tracker.toInt();
  s.growth_factor = growth.toDouble();
  s.backoff_factor = backoff.toDouble();
  s.growth_interval = interval.toInt();
  load_state(s);
}

}  // namespace gradcache
