// Scenario `sharded-loss`: the contrastive loss alone (forward + backward on representations)
// across W processes on loopback, each configuration in fresh child processes
// (`gradcache-bench child-sharded-loss ...`). "gathered": every rank gathers all
// representations and computes the whole (streaming) loss, as DistributedGradCache does by
// default; "sharded": each rank computes its share, the passage blocks going round a ring
// (ShardedContrastiveLoss). Per rank: loss time and peak tensor memory; the goal is that both
// fall as 1/W.
#include "measure.h"
#include "options.h"
#include "ranks.h"
#include "scenarios.h"
#include "system.h"

#ifdef GRADCACHE_WITH_DISTRIBUTED
#include <gradcache/sharded_loss.h>
#endif
#include <gradcache/streaming_loss.h>

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

namespace gcbench {

void ShardedLossShape::add_options(OptionTable& t) {
  t.add("--dim", &dim, "representation dimension");
  t.add("--tile", &tile, "score tile size");
  t.add("--reps", &reps, "timed loss steps per point (after one untimed)");
}

void ShardedLossSettings::add_options(OptionTable& t) {
  t.add("--sizes", &sizes, "global batch sizes N (queries = passages)");
  t.add("--processes", &processes, "process counts W");
  ShardedLossShape::add_options(t);
  t.add("--gathered-up-to", &gathered_up_to, "run the gathered baseline only up to this N");
}

void ShardedLossPointSettings::add_options(OptionTable& t) {
  t.add("--mode", &mode, "sharded or gathered");
  t.add("--size", &size, "global N");
  ShardedLossShape::add_options(t);
  ChildRank::add_options(t);
}

Json measure_sharded_loss_point(const ShardedLossPointSettings& s) {
#ifdef GRADCACHE_WITH_DISTRIBUTED
  namespace gd = gradcache::distributed;
  s.apply();
  TORCH_CHECK(s.size % s.world == 0, "--size must be a multiple of --world");
  const auto group = join_loopback_group(s.rank, s.world, s.port);
  const int64_t local = s.size / s.world;
  torch::manual_seed(100 + s.rank);
  // Scores of about unit scale, as trained unit vectors over a temperature give.
  auto q = (torch::randn({local, s.dim}) / std::sqrt(static_cast<double>(s.dim))).requires_grad_(true);
  auto p = (torch::randn({local, s.dim}) / std::sqrt(static_cast<double>(s.dim))).requires_grad_(true);
  const auto options = gradcache::StreamingLossOptions().tile_size(s.tile).temperature(0.1);
  const gradcache::Loss loss = s.mode == "sharded"
                                   ? gradcache::Loss(gd::ShardedContrastiveLoss(*group, options))
                                   : gd::gather_input_tensor(*group, gradcache::StreamingContrastiveLoss(options));
  const auto step = [&] {
    q.mutable_grad().reset();
    p.mutable_grad().reset();
    loss({q, p}).backward();
  };
  step();  // untimed: first-touch allocations, connections
  const PeakTimings timed = time_with_peak(step, s.reps, [&] { group->barrier(); });
  Json j{{"mode", s.mode}, {"rank", s.rank}, {"world", s.world}, {"size", s.size}, {"local", local},
         {"peak_bytes", timed.peak_bytes}, {"input_bytes", 4 * local * s.dim * static_cast<int64_t>(sizeof(float))}};
  j.update(timed.times.to_json());
  return j;
#else
  TORCH_CHECK(false, "this build has no distributed support (GRADCACHE_WITH_DISTRIBUTED=OFF)");
#endif
}

namespace {

// One point: `world` ranks of `mode` at global `size`; the slowest rank's time, the largest peak.
Json run_point(const ShardedLossSettings& s, const CommonSettings& common, const std::string& mode, int64_t size,
               int64_t world) {
  ShardedLossPointSettings p(s);
  p.mode = mode;
  p.size = size;
  p.threads = 1;  // one thread per rank: W ranks use W cores, as --nproc does
  p.blas_threads = 1;
  const Json ranks = run_ranks(common.program, "child-sharded-loss", p, world);
  Json row{{"mode", mode}, {"size", size}, {"processes", world}, {"wall_s", 0.0}, {"cpu_s", 0.0}, {"peak_bytes", 0}};
  for (const auto& r : ranks) {
    row["total_bytes"] = std::max(row.value("total_bytes", int64_t{0}),
                                  r["peak_bytes"].get<int64_t>() + r["input_bytes"].get<int64_t>());
    row["wall_s"] = std::max(row["wall_s"].get<double>(), r["wall_median_s"].get<double>());
    row["cpu_s"] = std::max(row["cpu_s"].get<double>(), r["cpu_median_s"].get<double>());
    row["peak_bytes"] = std::max(row["peak_bytes"].get<int64_t>(), r["peak_bytes"].get<int64_t>());
  }
  row["input_bytes"] = ranks[0]["input_bytes"];
  row["ranks"] = ranks;
  return row;
}

}  // namespace

ScenarioResult run_sharded_loss(const ShardedLossSettings& s, const CommonSettings& common) {
  for (int64_t size : s.sizes) {
    for (int64_t world : s.processes) {
      TORCH_CHECK(world >= 1 && size % world == 0, "sharded-loss: N = ", size, " does not split evenly over ", world,
                  " processes; choose --sizes that are multiples of every --processes value");
    }
  }
  Report report("sharded-loss", {"N", "W", "loss", "wall s / rank", "CPU s / rank", "x ideal CPU", "reps+grads MiB",
                                 "loss peak MiB", "total MiB / rank", "x ideal memory"});
  report.json = Json{{"dim", s.dim}, {"tile", s.tile}, {"reps", s.reps}};
  for (int64_t size : s.sizes) {
    Json one;  // the sharded loss at W = 1: the yardstick of 1/W
    for (int64_t world : s.processes) {
      for (const std::string mode : {"sharded", "gathered"}) {
        if (mode == "gathered" && size > s.gathered_up_to) continue;
        report.progress("N " + std::to_string(size) + ", " + std::to_string(world) + " process(es), " + mode);
        Json row = run_point(s, common, mode, size, world);
        if (mode == "sharded" && world == 1) one = row;
        const double ideal_cpu = one.is_null() ? NAN : one["cpu_s"].get<double>() / static_cast<double>(world);
        const double ideal_memory =
            one.is_null() ? NAN : static_cast<double>(one["total_bytes"].get<int64_t>()) / static_cast<double>(world);
        row["cpu_over_ideal"] = row["cpu_s"].get<double>() / ideal_cpu;
        row["memory_over_ideal"] = static_cast<double>(row["total_bytes"].get<int64_t>()) / ideal_memory;
        report.add_row(row, {std::to_string(size), std::to_string(world), mode, fmt(row["wall_s"].get<double>(), 2),
                             fmt(row["cpu_s"].get<double>(), 2), fmt(row["cpu_over_ideal"].get<double>(), 2),
                             mib(row["input_bytes"].get<int64_t>()), mib(row["peak_bytes"].get<int64_t>()),
                             mib(row["total_bytes"].get<int64_t>()), fmt(row["memory_over_ideal"].get<double>(), 2)});
      }
    }
  }
  return report.finish(
      "sharded-loss: the contrastive loss alone (forward + backward), d = " + std::to_string(s.dim) + ", tiles of " +
          std::to_string(s.tile) + ", one thread per rank, Gloo on loopback",
      "(x ideal: the per-rank figure over (the 1-process sharded figure / W); 1.00 is a perfect 1/W. Memory: this "
      "rank's representations and their gradients, plus the loss's peak tensor memory above them, the largest rank. "
      "This machine has 2 cores: with W = 4 the ranks share them, so wall time is about twice CPU time)\n");
}

}  // namespace gcbench
