// GradCache subclasses for measuring: they override GradCache's step methods and read its
// ForwardResult (visible only to a subclass). Kept together so that a change of
// ForwardResult or of the step methods is adapted here alone.
#pragma once

#include <gradcache/grad_cache.h>

#include <cstdint>
#include <vector>

namespace gcbench {

/// A GradCache that records what step 1 did: how many chunks of each model kept their graph
/// and the bytes they held; and the CPU time of each step, summed over all calls.
class RecordingGradCache : public gradcache::GradCache {
 public:
  using gradcache::GradCache::GradCache;
  std::vector<int64_t> retained_chunks;  ///< per model, of the last step
  std::vector<int64_t> total_chunks;
  std::vector<int64_t> retained_bytes;
  double step1_cpu_s = 0, step2_cpu_s = 0, step3_cpu_s = 0;  ///< forward_no_grad, build_cache, the backwards
  int64_t steps = 0;                                         ///< calls so far (build_cache runs once per call)

 protected:
  ForwardResult forward_no_grad(size_t model_index, const std::vector<gradcache::ModelInput>& chunks) override;
  std::vector<at::Tensor> build_cache(const std::vector<at::Tensor>& reps, const gradcache::LossArgs& loss_args,
                                      at::Tensor& loss_out) override;
  void forward_backward(size_t model_index, const std::vector<gradcache::ModelInput>& chunks,
                        const ForwardResult& forward, const at::Tensor& cached_grads) override;
  void backward_retained(size_t model_index, ForwardResult& forward, const at::Tensor& cached_grads) override;
};

/// The idea "run step 1 under c10::InferenceMode instead of NoGradGuard": a GradCache whose
/// step 1 (nothing retained) runs in inference mode. The representations are copied out as
/// ordinary tensors, since inference tensors cannot enter the loss's graph.
class InferenceModeGradCache : public gradcache::GradCache {
 public:
  using gradcache::GradCache::GradCache;

 protected:
  ForwardResult forward_no_grad(size_t model_index, const std::vector<gradcache::ModelInput>& chunks) override;
};

}  // namespace gcbench
