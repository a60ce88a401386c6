// Scenario `streaming`: peak memory and time of the contrastive loss (forward + backward on
// the representations) for the dense loss (contrastive_loss: the N x M scores and softmax) and
// the streaming loss (streaming_contrastive_loss: tiles), as N grows; or, with --tile-sweep N,
// the streaming loss's time per tile size at one N.
//
// Memory: tensor bytes counted by gradcache::CpuMemoryTracker, peak during the step minus what
// was live before it (the representations). Time: wall clock, median of --repeats after one
// warm-up run (one run without warm-up from --single-run-from up: those take minutes).
#include "measure.h"
#include "options.h"
#include "scenarios.h"

#include <gradcache/contrastive_loss.h>
#include <gradcache/streaming_loss.h>
#include <gradcache/version.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <stdexcept>

namespace gcbench {

void StreamingSettings::add_options(OptionTable& t) {
  t.add("--sizes", &sizes, "N values (M = N)");
  t.add("--dim", &dim, "representation size");
  t.add("--tile", &tile, "tile size of the streaming loss");
  t.add("--temperature", &temperature, "softmax temperature (representations are L2-normalised)");
  t.add_switch("--symmetric", &symmetric, "both directions");
  t.add("--repeats", &repeats, "timed runs per point (median), after one warm-up");
  t.add("--single-run-from", &single_run_from, "from this N on, one run and no warm-up");
  t.add("--dense-limit-gib", &dense_limit_gib,
        "skip the dense loss where its peak, extrapolated from N = sizes[0], exceeds this (GiB)");
  t.add("--tile-sweep", &tile_sweep, "instead: streaming time at this N for each of --sweep-tiles");
  t.add("--sweep-tiles", &sweep_tiles, "tile sizes of --tile-sweep");
  t.add("--seed", &seed, "seed of the representations");
}

namespace gc = gradcache;

namespace {

double gib(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024 * 1024); }

struct Point {
  double loss = 0;
  int64_t peak_bytes = 0;  ///< above the representations
  std::vector<double> times;
};

using LossFn = std::function<at::Tensor(const at::Tensor&, const at::Tensor&)>;

// One forward + backward on fresh leaves: the loss, and the peak beyond what was live before.
void run_once(const LossFn& loss_fn, const at::Tensor& q0, const at::Tensor& p0, Point& point) {
  auto q = q0.detach().requires_grad_(true), p = p0.detach().requires_grad_(true);
  point.peak_bytes = std::max(point.peak_bytes, peak_bytes_of([&] {
                                auto loss = loss_fn(q, p);
                                loss.backward();
                                point.loss = loss.item<double>();
                              }));
}

// The losses of one N, run alternately (time_interleaved; a warm-up round first unless
// `runs` is 1): on a shared machine both then see the same background load, which keeps
// their ratio meaningful.
std::vector<Point> measure(const std::vector<LossFn>& losses, const at::Tensor& q, const at::Tensor& p,
                           int64_t runs, bool warm_up) {
  std::vector<Point> points(losses.size());
  std::vector<std::function<void()>> steps;
  for (size_t i = 0; i < losses.size(); ++i) steps.push_back([&, i] { run_once(losses[i], q, p, points[i]); });
  const auto times = time_interleaved(steps, warm_up ? 1 : 0, runs);
  for (size_t i = 0; i < losses.size(); ++i) points[i].times = times[i].wall;
  return points;
}

// The representations: unit rows, as the encoders of the retriever give.
std::pair<at::Tensor, at::Tensor> representations(int64_t n, int64_t d, int64_t seed) {
  at::manual_seed(seed);
  auto q = at::randn({n, d}), p = at::randn({n, d});
  q = q / q.norm(2, 1, true);
  p = p / p.norm(2, 1, true);
  return {q, p};
}

LossFn dense_loss(const StreamingSettings& s) {
  const auto o = gc::ContrastiveLossOptions().temperature(s.temperature);
  const bool symmetric = s.symmetric;
  return [o, symmetric](const at::Tensor& q, const at::Tensor& p) {
    return symmetric ? gc::symmetric_contrastive_loss(q, p, o) : gc::contrastive_loss(q, p, o);
  };
}

LossFn streaming_loss(const StreamingSettings& s, int64_t tile) {
  const auto o = gc::StreamingLossOptions().temperature(s.temperature).symmetric(s.symmetric).tile_size(tile);
  return [o](const at::Tensor& q, const at::Tensor& p) { return gc::streaming_contrastive_loss(q, p, o); };
}

std::string printf_text(const char* format, double a, double b = 0) {
  char buf[128];
  std::snprintf(buf, sizeof buf, format, a, b);
  return buf;
}

// --tile-sweep: the streaming loss's time and peak at one N for each tile size.
ScenarioResult tile_sweep(const StreamingSettings& s, const Json& config) {
  const auto [q, p] = representations(s.tile_sweep, s.dim, s.seed);
  Report report("streaming", {}, "tile_sweep");
  report.json = Json{{"config", config}, {"n", s.tile_sweep}};
  std::string lines;
  for (int64_t tile : s.sweep_tiles) {
    const auto pt = measure({streaming_loss(s, tile)}, q, p, s.repeats, true)[0];
    report.add_row({{"tile", tile}, {"time_s", median(pt.times)}, {"peak_bytes", pt.peak_bytes}});
    const std::string line = "N " + std::to_string(s.tile_sweep) + " tile " + printf_text("%5.0f", tile) + "  " +
                             printf_text("%.3f s  %.1f MiB", median(pt.times), to_mib(pt.peak_bytes));
    report.progress(line);
    lines += line + "\n";
  }
  return report.finish("streaming: the streaming loss's time (median wall seconds) and peak tensor memory per tile "
                       "size, d = " + std::to_string(s.dim),
                       lines);
}

// What the run over the sizes gathers for the summary (its rows go to the report).
struct SizeRun {
  double dense_bytes_per_score = 0;  ///< measured at the first N, to extrapolate
  double dense_8192 = 0, streaming_8192 = 0;
  int64_t streaming_largest_peak = -1, largest_n = 0;
};

std::string table_line(int64_t n, bool dense_runs, const Point& d, const Point& st, double estimate) {
  std::string line = printf_text("%7.0f | ", n);
  if (dense_runs) {
    line += printf_text("%14.1f | ", to_mib(d.peak_bytes)) + printf_text("%7.3f | ", median(d.times));
  } else {
    char cell[64];
    std::snprintf(cell, sizeof cell, "%14s | %7s | ",
                  ("skip (~" + std::to_string(static_cast<int>(gib(static_cast<int64_t>(estimate)))) + " GiB)").c_str(),
                  "-");
    line += cell;
  }
  line += printf_text("%18.1f | ", to_mib(st.peak_bytes)) + printf_text("%11.3f | ", median(st.times));
  if (dense_runs) {
    line += printf_text("%10.2f | ", median(st.times) / median(d.times)) +
            printf_text("%.1e", std::abs(st.loss - d.loss) / std::abs(d.loss));
  } else {
    line += "         - | -";
  }
  return line;
}

// One N: the streaming loss, and the dense one unless its peak, extrapolated from the first
// N's bytes per score, would exceed --dense-limit-gib. Adds both rows; returns the table line.
std::string measure_size(const StreamingSettings& s, int64_t n, SizeRun& run, Report& report) {
  const auto [q, p] = representations(n, s.dim, s.seed);
  const bool single = n >= s.single_run_from;
  Json dense_row = {{"n", n}, {"loss", "dense"}};
  const double estimate = run.dense_bytes_per_score * static_cast<double>(n) * n;
  const bool dense_runs = run.dense_bytes_per_score == 0 || estimate <= s.dense_limit_gib * (1 << 30);
  std::vector<LossFn> losses{streaming_loss(s, s.tile)};
  if (dense_runs) losses.push_back(dense_loss(s));
  const auto points = measure(losses, q, p, single ? 1 : s.repeats, !single);
  const Point& st = points[0];
  const Point d = dense_runs ? points[1] : Point();
  if (dense_runs) {
    if (run.dense_bytes_per_score == 0) run.dense_bytes_per_score = static_cast<double>(d.peak_bytes) / n / n;
    dense_row.update({{"peak_bytes", d.peak_bytes}, {"time_s", median(d.times)}, {"times_s", d.times},
                      {"loss_value", d.loss}});
  } else {
    dense_row.update({{"skipped", true},
                      {"estimated_peak_bytes", static_cast<int64_t>(estimate)},
                      {"note", "estimated peak above --dense-limit-gib " + std::to_string(s.dense_limit_gib)}});
  }
  report.add_row(dense_row);
  report.add_row({{"n", n},
                  {"loss", "streaming"},
                  {"peak_bytes", st.peak_bytes},
                  {"time_s", median(st.times)},
                  {"times_s", st.times},
                  {"loss_value", st.loss}});
  if (n == 8192 && dense_runs) run.dense_8192 = median(d.times), run.streaming_8192 = median(st.times);
  if (n >= run.largest_n) run.largest_n = n, run.streaming_largest_peak = st.peak_bytes;
  return table_line(n, dense_runs, d, st, estimate);
}

}  // namespace

ScenarioResult run_streaming(const StreamingSettings& s, const CommonSettings& common) {
  if (s.dim <= 0 || s.tile <= 0 || s.repeats <= 0 || common.threads <= 0) {
    throw std::invalid_argument("--dim, --tile, --repeats and --threads must be positive");
  }
  const double t0 = now_seconds();
  const Json blas_threads = common.blas_threads > 0 ? Json(common.blas_threads) : Json("OpenBLAS default");
  const Json config = {{"dim", s.dim}, {"tile", s.tile}, {"temperature", s.temperature}, {"symmetric", s.symmetric},
                       {"repeats", s.repeats}, {"single_run_from", s.single_run_from}, {"threads", common.threads},
                       {"blas_threads", blas_threads}, {"dtype", "float32"}, {"gradcache", GRADCACHE_VERSION}};
  if (s.tile_sweep > 0) return tile_sweep(s, config);

  // The table is printed here, not by Table: bench/streaming_main.sh reads its "N |" lines.
  Report report("streaming", {}, "results");
  report.json["config"] = config;
  std::string lines;
  SizeRun run;
  for (int64_t n : s.sizes) {
    const std::string line = measure_size(s, n, run, report);
    report.progress(line);
    lines += line + "\n";
  }
  const bool under_2gib = run.streaming_largest_peak < (int64_t{2} << 30);
  report.json["summary"] = {{"largest_n", run.largest_n},
                            {"streaming_peak_bytes_at_largest_n", run.streaming_largest_peak},
                            {"streaming_under_2gib_at_largest_n", under_2gib},
                            {"total_seconds", now_seconds() - t0}};
  Json& summary = report.json["summary"];
  lines += "\nstreaming at N = " + std::to_string(run.largest_n) + ": " + mib(run.streaming_largest_peak) +
           " MiB beyond the representations (" + (under_2gib ? "under" : "NOT under") + " 2 GiB)";
  if (run.dense_8192 > 0) {
    summary["time_ratio_8192"] = run.streaming_8192 / run.dense_8192;
    lines += "; at N = 8192 streaming / dense time = " + fmt(run.streaming_8192 / run.dense_8192, 2);
  }
  return report.finish(
      "streaming: contrastive loss forward + backward, d = " + std::to_string(s.dim) + ", float32, temperature " +
          option_text(s.temperature) + (s.symmetric ? ", symmetric" : "") + ", tile " + std::to_string(s.tile) +
          "\npeak: tensor memory beyond the representations (CpuMemoryTracker); time: median wall seconds\n\n"
          "      N | dense peak MiB | dense s | streaming peak MiB | streaming s | time ratio | loss diff\n"
          "--------+----------------+---------+--------------------+-------------+------------+----------",
      lines + "\n");
}

}  // namespace gcbench
