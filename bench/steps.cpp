// The benchmarks' steps are the trainer's: retriever::make_training_step, with the
// workload's models, loss and split.
#include "steps.h"

#include "retriever/train/training_step.h"

#include <memory>

namespace gcbench {

Step make_step(const Workload& workload, const StepSpec& spec) {
  namespace rt = gradcache::retriever;
  // Accumulate: sub-batches of `chunk` queries with their passages (M = N here: one each),
  // each its own contrastive batch. Cache: chunks of `chunk` rows for both models.
  const auto options = rt::StepOptions()
                           .mode(rt::parse_choice(rt::train_mode_names(), spec.mode, "mode"))
                           .chunk_size(spec.chunk)
                           .sub_batch_size(spec.chunk)
                           .split_input_fn(workload.split_fn())
                           .cache(gradcache::GradCacheOptions().retain_chunks(spec.retain_chunks))
                           .precision(spec.precision);
  std::shared_ptr<rt::TrainingStep> step =
      rt::make_training_step(workload.query_model(), workload.passage_model(), workload.loss(), options);
  return [step](const Batch& b) { return step->run(b.queries, b.passages); };
}

}  // namespace gcbench
