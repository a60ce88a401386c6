// The training steps the benchmarks compare, taken as the trainer takes them (the shared step
// layer, retriever/train/training_step.h): the full batch in one pass, gradient accumulation (the
// paper's baseline) and the gradient cache. The steps that need instrumentation
// (RecordingGradCache, InferenceModeGradCache, DistributedGradCache with its byte count) are
// built by their scenarios instead.
#pragma once

#include "workload.h"

#include <cstdint>
#include <functional>
#include <string>

namespace gcbench {

/// How a step goes through the batch. Each mode reads the fields that concern it.
struct StepSpec {
  std::string mode = "cache";  ///< full | accumulate | cache
  int64_t chunk = 64;          ///< accumulate: pairs per sub-batch; cache: rows per forward pass
  int64_t retain_chunks = 0;   ///< cache: chunks per model that keep their graph (0: none, the default)
  gradcache::Precision precision = gradcache::Precision::fp32;  ///< cache: autocast per model call
};

/// One step of the workload's models on a batch: accumulates the gradients of its
/// contrastive loss and returns the loss. The workload must outlive it.
using Step = std::function<double(const Batch&)>;

/// Throws std::invalid_argument for an unknown mode or bad options.
Step make_step(const Workload& workload, const StepSpec& spec);

}  // namespace gcbench
