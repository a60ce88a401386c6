// Scenario `threads`: the cache step's time for LibTorch intra-op x OpenBLAS threads.
#include "measure.h"
#include "options.h"
#include "scenarios.h"
#include "steps.h"
#include "system.h"

#include <algorithm>

namespace gcbench {

void ThreadsSettings::add_options(OptionTable& t) {
  BatchSettings::add_options(t);
  t.add("--reps", &reps, "timed repetitions of each setting");
  t.add("--max-seconds", &max_seconds, "per setting: fewer repetitions when slower");
}

ScenarioResult run_threads(const ThreadsSettings& s, const CommonSettings& common) {
  Report report("threads", {"intra-op", "OpenBLAS", "median ms", "CPU user s", "CPU sys s", "CPU / wall"});
  Workload w = prepare_workload(s.model, report);
  const Batch b = w.batch(s.batch, 3);
  const Step cache = make_step(w, {"cache", s.chunk, /*retain_chunks=*/0});
  const bool blas = openblas_found();
  report.json = s.to_json();
  report.json["step"] = "cache (nothing retained)";
  std::string best;
  double best_t = 1e300;
  for (auto [intra, openblas] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {1, 2}, {2, 1}, {2, 2}}) {
    if (!blas && openblas != 1) continue;  // cannot set it
    set_threads(intra, openblas);
    const auto used = current_threads();
    auto step = [&] {
      w.zero_grads();
      cache(b);
    };
    const double w0 = now_seconds();
    step();  // warm-up: thread pools start
    // A setting that is much slower (oversubscribed cores) gets fewer repetitions.
    const double warm = now_seconds() - w0;
    const int64_t reps = std::clamp<int64_t>(static_cast<int64_t>(s.max_seconds / std::max(warm, 1e-3)), 1, s.reps);
    std::vector<double> wall, user, sys;
    for (int64_t r = 0; r < reps; ++r) {
      const auto c0 = cpu_seconds();
      const double t0 = now_seconds();
      step();
      wall.push_back(now_seconds() - t0);
      const auto c1 = cpu_seconds();
      user.push_back(c1.first - c0.first);
      sys.push_back(c1.second - c0.second);
    }
    const double m = median(wall), u = median(user), y = median(sys);
    report.add_row({{"intra_op", used.intra_op},
                    {"openblas", used.openblas},
                    {"median_s", m},
                    {"cpu_user_s", u},
                    {"cpu_sys_s", y},
                    {"reps", reps},
                    {"times_s", wall}},
                   {std::to_string(used.intra_op), std::to_string(used.openblas), fmt(m * 1e3, 1), fmt(u, 2),
                    fmt(y, 2), fmt((u + y) / m, 2)});
    if (m < best_t) {
      best_t = m;
      best = std::to_string(used.intra_op) + "," + std::to_string(used.openblas);
    }
  }
  set_threads(common.threads, common.blas_threads);  // back to the program's setting
  report.json["fastest"] = best;
  return report.finish("threads: cache step (nothing retained), " + std::to_string(s.batch) + " pairs in chunks of " +
                           std::to_string(s.chunk) + ", medians of up to " + std::to_string(s.reps),
                       "fastest (intra-op, OpenBLAS): " + best + "\n");
}

}  // namespace gcbench
