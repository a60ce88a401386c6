// The measuring GradCache subclasses (see instrumented_cache.h).
#include "instrumented_cache.h"

#include "measure.h"

#include <gradcache/rng_state.h>

#include <c10/core/InferenceMode.h>


namespace gcbench {

gradcache::ForwardResult RecordingGradCache::forward_no_grad(size_t model_index,
                                                             const std::vector<gradcache::ModelInput>& chunks) {
  const double t0 = process_cpu_seconds();
  auto result = gradcache::GradCache::forward_no_grad(model_index, chunks);
  step1_cpu_s += process_cpu_seconds() - t0;
  if (retained_chunks.size() <= model_index) {
    retained_chunks.resize(model_index + 1, 0);
    total_chunks.resize(model_index + 1, 0);
    retained_bytes.resize(model_index + 1, 0);
  }
  retained_chunks[model_index] = result.retained_chunks();
  total_chunks[model_index] = static_cast<int64_t>(result.chunks.size());
  retained_bytes[model_index] = result.retained_bytes();
  return result;
}

std::vector<at::Tensor> RecordingGradCache::build_cache(const std::vector<at::Tensor>& reps,
                                                        const gradcache::LossArgs& loss_args, at::Tensor& loss_out) {
  const double t0 = process_cpu_seconds();
  auto grads = gradcache::GradCache::build_cache(reps, loss_args, loss_out);
  step2_cpu_s += process_cpu_seconds() - t0;
  ++steps;
  return grads;
}

void RecordingGradCache::forward_backward(size_t model_index, const std::vector<gradcache::ModelInput>& chunks,
                                          const ForwardResult& forward, const at::Tensor& cached_grads) {
  const double t0 = process_cpu_seconds();
  gradcache::GradCache::forward_backward(model_index, chunks, forward, cached_grads);
  step3_cpu_s += process_cpu_seconds() - t0;
}

void RecordingGradCache::backward_retained(size_t model_index, ForwardResult& forward,
                                           const at::Tensor& cached_grads) {
  const double t0 = process_cpu_seconds();
  gradcache::GradCache::backward_retained(model_index, forward, cached_grads);
  step3_cpu_s += process_cpu_seconds() - t0;
}

// Nothing is retained here: no retention budget to respect.
gradcache::ForwardResult InferenceModeGradCache::forward_no_grad(size_t model_index,
                                                                 const std::vector<gradcache::ModelInput>& chunks) {
  const gradcache::Model& model = models()[model_index];
  const auto devices = gradcache::devices_of(model.parameters());
  ForwardResult result;
  std::vector<at::Tensor> reps;
  for (const auto& chunk : chunks) {
    gradcache::ChunkRecord record;
    record.rng_state = gradcache::RngState::capture(devices);
    at::Tensor rep;
    {
      c10::InferenceMode inference;
      rep = get_reps(model_call(model, chunk));
    }
    record.rows = rep.size(0);
    result.chunks.push_back(std::move(record));
    reps.push_back(rep);
  }
  // Outside inference mode, so the result is an ordinary tensor the loss may differentiate.
  result.reps = reps.size() == 1 ? reps[0].clone() : at::cat(reps, 0);
  return result;
}

}  // namespace gcbench
