// The parts of a step as interleavable steps (see cost_parts.h).
#include "cost_parts.h"

#include <c10/core/InferenceMode.h>
#include <torch/torch.h>

#include <algorithm>

namespace gcbench {
namespace {

// Both clocks at once; a difference of two is a sample of a part.
struct Stamp {
  double wall = 0, cpu = 0;
  static Stamp now() { return {now_seconds(), process_cpu_seconds()}; }
  Stamp operator-(const Stamp& o) const { return {wall - o.wall, cpu - o.cpu}; }
  Stamp& operator+=(const Stamp& o) {
    wall += o.wall, cpu += o.cpu;
    return *this;
  }
};

double median_of(const std::vector<Stamp>& samples, Clock clock) {
  std::vector<double> v;
  for (const auto& s : samples) v.push_back(clock == Clock::wall ? s.wall : s.cpu);
  return median(v);
}

}  // namespace

struct StepParts::State {
  std::vector<std::pair<gradcache::Model, std::vector<gradcache::ModelInput>>> calls;  ///< per model: its chunks
  gradcache::Loss loss;
  bool inference_mode = false;
  std::vector<torch::Tensor> reps;            ///< the last F0 pass's representations, for L
  std::vector<Stamp> f0, f0i, f, b, l;        ///< one sample per call
  std::vector<std::vector<double>> f0_chunk;  ///< per call: each chunk's F0 (CPU), model after model
};

StepParts::StepParts(const Workload& w, const Batch& batch, int64_t chunk, bool inference_mode)
    : state_(std::make_shared<State>()) {
  state_->calls = {{w.query_model(), w.split(batch.queries, chunk)}, {w.passage_model(), w.split(batch.passages, chunk)}};
  state_->loss = w.loss();
  state_->inference_mode = inference_mode;
}

std::vector<NamedStep> StepParts::steps() {
  auto st = state_;
  std::vector<NamedStep> out;
  out.push_back({"part F0 (no-grad forward)", [st] {
                   Stamp total;
                   std::vector<double> per_chunk;
                   st->reps.clear();
                   torch::NoGradGuard no_grad;
                   for (const auto& [model, chunks] : st->calls) {
                     std::vector<torch::Tensor> reps;
                     for (const auto& c : chunks) {
                       const Stamp t0 = Stamp::now();
                       reps.push_back(model(c).toTensor());
                       const Stamp d = Stamp::now() - t0;
                       total += d;
                       per_chunk.push_back(d.cpu);
                     }
                     st->reps.push_back(torch::cat(reps, 0));
                   }
                   st->f0.push_back(total);
                   st->f0_chunk.push_back(per_chunk);
                 }});
  out.push_back({"part L (loss)", [st] {
                   const Stamp t0 = Stamp::now();
                   std::vector<torch::Tensor> leaves;
                   for (const auto& x : st->reps) leaves.push_back(x.detach().requires_grad_(true));
                   st->loss(leaves).backward();
                   st->l.push_back(Stamp::now() - t0);
                 }});
  out.push_back({"part F + B (forward with grad, backward)", [st] {
                   Stamp f, b;
                   for (const auto& [model, chunks] : st->calls) {
                     for (const auto& c : chunks) {
                       const Stamp t0 = Stamp::now();
                       auto rep = model(c).toTensor();
                       const Stamp t1 = Stamp::now();
                       torch::autograd::backward({rep}, {torch::full_like(rep, 1e-3)});
                       f += t1 - t0;
                       b += Stamp::now() - t1;
                     }
                   }
                   st->f.push_back(f);
                   st->b.push_back(b);
                 }});
  if (st->inference_mode) {
    out.push_back({"part F0 in InferenceMode", [st] {
                     const Stamp t0 = Stamp::now();
                     c10::InferenceMode inference;
                     for (const auto& [model, chunks] : st->calls) {
                       for (const auto& c : chunks) model(c);
                     }
                     st->f0i.push_back(Stamp::now() - t0);
                   }});
  }
  return out;
}

void StepParts::discard_first(int64_t calls) {
  auto drop = [calls](auto& v) { v.erase(v.begin(), v.begin() + std::min<int64_t>(calls, v.size())); };
  drop(state_->f0), drop(state_->f0i), drop(state_->f), drop(state_->b), drop(state_->l), drop(state_->f0_chunk);
}

gradcache::StepCosts StepParts::costs(Clock clock) const {
  return gradcache::StepCosts{median_of(state_->f0, clock), median_of(state_->f, clock), median_of(state_->b, clock),
                              median_of(state_->l, clock)};
}

double StepParts::retained_share(const std::vector<int64_t>& retained) const {
  if (state_->f0_chunk.empty()) return NAN;
  double kept = 0, all = 0;
  size_t i = 0;
  for (size_t m = 0; m < state_->calls.size(); ++m) {
    for (size_t c = 0; c < state_->calls[m].second.size(); ++c, ++i) {
      std::vector<double> v;
      for (const auto& call : state_->f0_chunk) v.push_back(call.at(i));
      const double t = median(v);
      all += t;
      if (m < retained.size() && static_cast<int64_t>(c) < retained[m]) kept += t;
    }
  }
  return all > 0 ? kept / all : 0;
}

double StepParts::predicted(Clock clock, const std::vector<int64_t>& retained) const {
  return gradcache::predicted_cache_over_accumulate(costs(clock), retained_share(retained));
}

Json StepParts::to_json() const {
  const auto cpu = costs(Clock::cpu), wall = costs(Clock::wall);
  Json j{{"clock", "process CPU time, medians of the interleaved calls (wall time: *_wall_s)"},
         {"calls", state_->f0.size()},
         {"forward_no_grad_s", cpu.forward_no_grad},
         {"forward_s", cpu.forward},
         {"backward_s", cpu.backward},
         {"loss_full_batch_s", cpu.loss},
         {"forward_no_grad_wall_s", wall.forward_no_grad},
         {"forward_wall_s", wall.forward},
         {"backward_wall_s", wall.backward},
         {"loss_full_batch_wall_s", wall.loss},
         {"predicted_cache_over_accumulate", gradcache::predicted_cache_over_accumulate(cpu)},
         {"predicted_cache_over_accumulate_wall", gradcache::predicted_cache_over_accumulate(wall)}};
  if (state_->inference_mode) {
    auto with_f0i = cpu;
    with_f0i.forward_no_grad = median_of(state_->f0i, Clock::cpu);
    j["forward_inference_mode_s"] = with_f0i.forward_no_grad;
    j["predicted_cache_over_accumulate_inference_mode"] = gradcache::predicted_cache_over_accumulate(with_f0i);
  }
  return j;
}

}  // namespace gcbench
