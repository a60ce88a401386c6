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

#ifdef GRADCACHE_WITH_DISTRIBUTED
#include <gradcache/distributed.h>
#endif


#include <algorithm>

namespace gcbench {

void DistributedSettings::add_options(OptionTable& t) {
  model.add_options(t);
  t.add("--batch", &batch, "global contrastive batch (pairs), split evenly over the processes");
  t.add("--chunk", &chunk, "chunk size");
  t.add("--reps", &reps, "timed steps per configuration");
  t.add("--warmup", &warmup, "untimed steps first");
  t.add("--processes", &processes, "process counts to compare");
}

void DistributedPointSettings::add_options(OptionTable& t) {
  model.add_options(t);
  t.add("--batch", &batch, "global pairs");
  t.add("--chunk", &chunk, "chunk size");
  t.add("--reps", &reps, "timed steps");
  t.add("--warmup", &warmup, "untimed steps");
  t.add("--rank", &rank, "this process's rank");
  t.add("--world", &world, "processes");
  t.add("--port", &port, "rendezvous port on 127.0.0.1 (rank 0 serves it)");
  t.add("--threads", &threads, "intra-op threads");
  t.add("--blas-threads", &blas_threads, "OpenBLAS threads");
}

Json measure_distributed_point(const DistributedPointSettings& s) {
  set_threads(s.threads, s.blas_threads);
  Workload w(s.model);
  w.train(true);
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
  Timings t;
  int64_t peak = 0;
  for (int64_t i = 0; i < s.reps; ++i) {
    const double w0 = now_seconds(), c0 = process_cpu_seconds();
    peak = std::max(peak, peak_bytes_of(step));
    t.wall.push_back(now_seconds() - w0);
    t.cpu.push_back(process_cpu_seconds() - c0);
  }
  const int64_t chunks = static_cast<int64_t>(w.split(queries, s.chunk).size() + w.split(passages, s.chunk).size());
  const int64_t grad_bytes = w.parameter_count() * static_cast<int64_t>(sizeof(float));
  Json j{{"rank", s.rank},
         {"world", s.world},
         {"global_batch", s.batch},
         {"local_batch", local},
         {"chunk", s.chunk},
         {"peak_bytes", peak},
         {"rss_peak_bytes", peak_rss_bytes()},
         {"allreduce_bytes_per_step", s.reps > 0 ? (bytes_reduced() - bytes_before) / s.reps : 0},
         {"gradient_bytes", grad_bytes},
         {"backward_chunks_per_step", chunks},
         {"per_chunk_allreduce_bytes_per_step", s.world > 1 ? chunks * grad_bytes : 0}};
  j.update(t.to_json());
  return j;
}

namespace {

// One configuration: `world` child processes, one per rank, started together; their JSON.
Json run_ranks(const DistributedSettings& s, const CommonSettings& common, int64_t world) {
  DistributedPointSettings p;
  p.model = s.model;
  p.batch = s.batch;
  p.chunk = s.chunk;
  p.reps = s.reps;
  p.warmup = s.warmup;
  p.world = world;
  p.port = gradcache::distributed::free_loopback_port();
  p.threads = common.threads;
  p.blas_threads = common.blas_threads;
  std::vector<std::vector<std::string>> args_per_rank;
  for (int64_t r = 0; r < world; ++r) {
    p.rank = r;
    OptionTable t;
    p.add_options(t);
    std::vector<std::string> args{"child-distributed"};
    for (auto& a : t.to_args()) args.push_back(a);
    args_per_rank.push_back(args);
  }
  return run_ranks_together(common.program, args_per_rank);
}

}  // namespace

ScenarioResult run_distributed(const DistributedSettings& s, const CommonSettings& common) {
  ScenarioResult out;
  {
    Workload w(s.model);
    progress("distributed: " + w.describe());
    out.json["model"] = s.model.to_json();
    out.json["model"]["parameters"] = w.parameter_count();
  }
  out.json["batch"] = s.batch;
  out.json["chunk"] = s.chunk;
  Table table({"processes", "local pairs", "step ms (median)", "pairs/s", "speed-up", "peak MiB / process",
               "RSS MiB / process", "all-reduce KiB / step", "per-chunk all-reduce KiB"});
  Json rows = Json::array();
  double one_process = 0;
  for (int64_t world : s.processes) {
    progress("distributed: " + std::to_string(world) + " process(es)");
    const Json ranks = run_ranks(s, common, world);
    // A step ends when its slowest rank ends: the largest median; memory: the largest rank.
    double step = 0;
    int64_t peak = 0, rss = 0;
    for (const auto& r : ranks) {
      step = std::max(step, r["wall_median_s"].get<double>());
      peak = std::max(peak, r["peak_bytes"].get<int64_t>());
      rss = std::max(rss, r["rss_peak_bytes"].get<int64_t>());
    }
    if (world == 1) one_process = step;
    const Json& r0 = ranks[0];
    Json row{{"processes", world},
             {"step_s", step},
             {"pairs_per_s", s.batch / step},
             {"speedup", one_process > 0 ? one_process / step : NAN},
             {"peak_bytes_per_process", peak},
             {"rss_peak_bytes_per_process", rss},
             {"allreduce_bytes_per_step", r0["allreduce_bytes_per_step"]},
             {"per_chunk_allreduce_bytes_per_step", r0["per_chunk_allreduce_bytes_per_step"]},
             {"ranks", ranks}};
    rows.push_back(row);
    table.add({std::to_string(world), std::to_string(r0["local_batch"].get<int64_t>()), fmt(step * 1e3, 1),
               fmt(s.batch / step, 0), one_process > 0 ? fmt(one_process / step, 2) : "-", mib(peak), mib(rss),
               fmt(r0["allreduce_bytes_per_step"].get<double>() / 1024, 1),
               fmt(r0["per_chunk_allreduce_bytes_per_step"].get<double>() / 1024, 1)});
  }
  out.json["rows"] = rows;
  out.text = "distributed: one cache step of " + std::to_string(s.batch) + " pairs in chunks of " +
             std::to_string(s.chunk) + ", Gloo on loopback, " + std::to_string(s.reps) +
             " timed steps; all-reduce bytes are each rank's payload\n" + table.str() +
             "(this machine has 2 cores: 2 processes with 1 thread each use both; the per-chunk column is what an "
             "all-reduce after every chunk's backward would send: chunks x gradient bytes)\n";
  return out;
}

}  // namespace gcbench
