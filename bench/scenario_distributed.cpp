// Scenario `distributed`: one cache step of the same global batch in 1 process and in 2
// processes (DistributedGradCache over Gloo on loopback), each configuration in fresh child
// processes (`gradcache-bench child-distributed ...`). Reports step time, peak memory per
// process and the gradient bytes each rank all-reduces per step, next to what an all-reduce
// after every chunk's backward (DDP without no_sync) would send.
#include "measure.h"
#include "options.h"
#include "ranks.h"
#include "scenarios.h"
#include "system.h"

#include <algorithm>

namespace gcbench {

void DistributedSettings::add_options(OptionTable& t) {
  BatchSettings::add_options(t, "global contrastive batch (pairs), split evenly over the processes");
  Repetitions::add_options(t, "timed steps per configuration", "untimed steps first");
  t.add("--processes", &processes, "process counts to compare");
}

void DistributedPointSettings::add_options(OptionTable& t) {
  BatchSettings::add_options(t, "global pairs");
  Repetitions::add_options(t, "timed steps", "untimed steps");
  ChildRank::add_options(t);
}

Json measure_distributed_point(const DistributedPointSettings& s) {
  s.apply();
  Workload w(s.model);  // in training mode
  w.allocate_grads();
  const Batch global = w.batch(s.batch, 5);  // the same on every rank (seeded); each takes its slice
  TORCH_CHECK(s.batch % s.world == 0, "--batch must be a multiple of the number of processes");
  const int64_t local = s.batch / s.world;
  const gradcache::ModelInput queries = gradcache::split_input(global.queries, local).at(s.rank);
  const gradcache::ModelInput passages = gradcache::split_input(global.passages, local).at(s.rank);

  std::function<void()> step;
  std::function<int64_t()> bytes_reduced = [] { return int64_t{0}; };
  std::unique_ptr<gradcache::GradCache> cache;
#ifdef GRADCACHE_WITH_DISTRIBUTED
  std::unique_ptr<gradcache::distributed::ProcessGroup> group;
  if (s.world > 1) {
    namespace gd = gradcache::distributed;
    group = join_loopback_group(s.rank, s.world, s.port);
    auto dist = std::make_unique<gd::DistributedGradCache>(*group, w.models(), s.chunk, w.loss(), w.cache_options());
    bytes_reduced = [d = dist.get()] { return d->bytes_reduced(); };
    cache = std::move(dist);
  }
#else
  TORCH_CHECK(s.world == 1, "this build has no distributed support (GRADCACHE_WITH_DISTRIBUTED=OFF)");
#endif
  if (!cache) cache = std::make_unique<gradcache::GradCache>(w.models(), s.chunk, w.loss(), w.cache_options());
  step = [&] {
    w.zero_grads();
    (*cache)({queries, passages});
  };

  for (int64_t i = 0; i < s.warmup; ++i) step();
#ifdef GRADCACHE_WITH_DISTRIBUTED
  if (group) group->barrier();
#endif
  const int64_t bytes_before = bytes_reduced();
  const PeakTimings timed = time_with_peak(step, s.reps);
  const int64_t chunks = static_cast<int64_t>(w.split(queries, s.chunk).size() + w.split(passages, s.chunk).size());
  const int64_t grad_bytes = w.parameter_count() * static_cast<int64_t>(sizeof(float));
  Json j{{"rank", s.rank},
         {"world", s.world},
         {"global_batch", s.batch},
         {"local_batch", local},
         {"chunk", s.chunk},
         {"peak_bytes", timed.peak_bytes},
         {"rss_peak_bytes", peak_rss_bytes()},
         {"allreduce_bytes_per_step", s.reps > 0 ? (bytes_reduced() - bytes_before) / s.reps : 0},
         {"gradient_bytes", grad_bytes},
         {"backward_chunks_per_step", chunks},
         {"per_chunk_allreduce_bytes_per_step", s.world > 1 ? chunks * grad_bytes : 0}};
  j.update(timed.times.to_json());
  return j;
}

namespace {

// One configuration: `world` ranks, each a child process; their JSON.
Json run_configuration(const DistributedSettings& s, const CommonSettings& common, int64_t world) {
  DistributedPointSettings p(s);
  p.threads = common.threads;
  p.blas_threads = common.blas_threads;
  return run_ranks(common.program, "child-distributed", p, world);
}

// A configuration's row: a step ends when its slowest rank ends (the largest median);
// memory: the largest rank's. `one_process`: the 1-process step time (0: not measured).
// Returns the step time.
double add_row(Report& report, const DistributedSettings& s, int64_t world, const Json& ranks, double one_process) {
  double step = 0;
  int64_t peak = 0, rss = 0;
  for (const auto& r : ranks) {
    step = std::max(step, r["wall_median_s"].get<double>());
    peak = std::max(peak, r["peak_bytes"].get<int64_t>());
    rss = std::max(rss, r["rss_peak_bytes"].get<int64_t>());
  }
  if (world == 1) one_process = step;
  const Json& r0 = ranks[0];
  report.add_row({{"processes", world},
                  {"step_s", step},
                  {"pairs_per_s", s.batch / step},
                  {"speedup", one_process > 0 ? one_process / step : NAN},
                  {"peak_bytes_per_process", peak},
                  {"rss_peak_bytes_per_process", rss},
                  {"allreduce_bytes_per_step", r0["allreduce_bytes_per_step"]},
                  {"per_chunk_allreduce_bytes_per_step", r0["per_chunk_allreduce_bytes_per_step"]},
                  {"ranks", ranks}},
                 {std::to_string(world), std::to_string(r0["local_batch"].get<int64_t>()), fmt(step * 1e3, 1),
                  fmt(s.batch / step, 0), one_process > 0 ? fmt(one_process / step, 2) : "-", mib(peak), mib(rss),
                  fmt(r0["allreduce_bytes_per_step"].get<double>() / 1024, 1),
                  fmt(r0["per_chunk_allreduce_bytes_per_step"].get<double>() / 1024, 1)});
  return step;
}

}  // namespace

ScenarioResult run_distributed(const DistributedSettings& s, const CommonSettings& common) {
  Report report("distributed", {"processes", "local pairs", "step ms (median)", "pairs/s", "speed-up",
                                "peak MiB / process", "RSS MiB / process", "all-reduce KiB / step",
                                "per-chunk all-reduce KiB"});
  report.json = s.to_json();
  report.json["model"] = describe_models(s.model, report);
  double one_process = 0;
  for (int64_t world : s.processes) {
    report.progress(std::to_string(world) + " process(es)");
    const double step = add_row(report, s, world, run_configuration(s, common, world), one_process);
    if (world == 1) one_process = step;
  }
  return report.finish("distributed: one cache step of " + std::to_string(s.batch) + " pairs in chunks of " +
                           std::to_string(s.chunk) + ", Gloo on loopback, " + std::to_string(s.reps) +
                           " timed steps; all-reduce bytes are each rank's payload",
                       "(this machine has 2 cores: 2 processes with 1 thread each use both; the per-chunk column is "
                       "what an all-reduce after every chunk's backward would send: chunks x gradient bytes)\n");
}

}  // namespace gcbench
