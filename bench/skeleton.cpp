// The option groups of the scenarios' settings and the prepared workload (see skeleton.h).
#include "skeleton.h"

#include "options.h"
#include "system.h"

namespace gcbench {

void BatchSettings::add_options(OptionTable& t, const std::string& batch_help) {
  model.add_options(t);
  t.add("--batch", &batch, batch_help);
  t.add("--chunk", &chunk, "chunk size");
}

Json BatchSettings::to_json() const { return Json{{"model", model.to_json()}, {"batch", batch}, {"chunk", chunk}}; }

void Repetitions::add_options(OptionTable& t, const std::string& reps_help, const std::string& warmup_help) {
  t.add("--reps", &reps, reps_help);
  t.add("--warmup", &warmup, warmup_help);
}

void ChildThreads::add_options(OptionTable& t) {
  t.add("--threads", &threads, "intra-op threads");
  t.add("--blas-threads", &blas_threads, "OpenBLAS threads");
}

void ChildThreads::apply() const { set_threads(threads, blas_threads); }

void ChildRank::add_options(OptionTable& t) {
  t.add("--rank", &rank, "this process's rank");
  t.add("--world", &world, "processes");
  t.add("--port", &port, "rendezvous port on 127.0.0.1 (rank 0 serves it)");
  ChildThreads::add_options(t);
}

Workload prepare_workload(const ModelSettings& model, const Report& report) {
  Workload w(model);  // in training mode
  w.allocate_grads();
  report.progress(w.describe());
  return w;
}

Json describe_models(const ModelSettings& model, const Report& report) {
  const Workload w(model);
  report.progress(w.describe());
  Json j = model.to_json();
  j["parameters"] = w.parameter_count();
  return j;
}

}  // namespace gcbench
