// Scenario `memory`: peak memory against the contrastive batch size for full-batch training,
// gradient accumulation and the gradient cache. Each configuration runs in a fresh child
// process (`gradcache-bench child-memory ...`): the tracker's peak is exact in any
// process, but the peak resident set size only grows within one.
#include "instrumented_cache.h"
#include "measure.h"
#include "options.h"
#include "scenarios.h"
#include "steps.h"
#include "system.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace gcbench {

namespace {

constexpr const char* kStreamingSuffix = "-streaming";

bool is_streaming_mode(const std::string& mode) {
  const std::string suffix = kStreamingSuffix;
  return mode.size() > suffix.size() && mode.compare(mode.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

MemorySettings::MemorySettings() {
  // Powers of 4 up to 4096, and full / accumulate only up to 1024 (see the options), keep the
  // default run under a minute on 2 cores: a step of 4096 pairs takes 10-15 s in each mode.
  // The whole curve: --batches 64,128,256,512,1024,2048,4096,8192 --full-max 8192
  // --accumulate-max 8192.
  for (int64_t n = 64; n <= 4096; n *= 4) batches.push_back(n);
}

void MemorySettings::add_options(OptionTable& t) {
  model.add_options(t);
  t.add("--batches", &batches, "contrastive batch sizes (pairs)");
  t.add("--modes", &modes,
                "full, accumulate, cache (nothing retained, the default), cache-r1 (each model's first chunk "
                "retained); a cache mode ending in -streaming uses the streaming loss (cache-streaming, "
                "cache-r1-streaming)");
  t.add("--chunk", &chunk, "chunk size of accumulate and cache");
  t.add("--check-batch", &check_batch, "batch at which the cache target is checked");
  t.add("--full-max", &full_max, "largest batch measured for mode full");
  t.add("--accumulate-max", &accumulate_max, "largest batch measured for mode accumulate");
  t.add_switch("--no-spawn", &no_spawn, "measure in this process (no peak RSS)");
  t.add("--memory-limit", &limit, "target: cache peak at check batch within this fraction of the prediction");
}

void MemoryPointSettings::add_options(OptionTable& t) {
  BatchSettings::add_options(t, "pairs");
  t.add("--mode", &mode, "full | accumulate | cache | cache-r1 | cache-streaming | cache-r1-streaming");
  ChildThreads::add_options(t);
}

Json measure_memory_point(const MemoryPointSettings& s) {
  s.apply();
  ModelSettings model = s.model;
  std::string mode = s.mode;
  if (is_streaming_mode(mode)) {
    model.loss = "streaming";
    mode.resize(mode.size() - std::string(kStreamingSuffix).size());
  }
  Workload w(model);   // in training mode
  w.allocate_grads();  // the gradients exist before a training step (after the first)
  const Batch b = w.batch(s.batch, 1);
  const int64_t rss_before = current_rss_bytes();
  const int64_t hwm_before = peak_rss_bytes();
  const double t0 = now_seconds();
  int64_t peak = 0;
  Json extra = Json::object();
  if (s.mode == "full" || s.mode == "accumulate") {
    const Step step = make_step(w, {s.mode, s.chunk});
    peak = peak_bytes_of([&] { step(b); });
  } else if (mode == "cache" || mode == "cache-r1") {
    const int64_t retain = mode == "cache-r1" ? 1 : -1;
    RecordingGradCache cache(w.models(), s.chunk, w.loss(), w.cache_options().retain_chunks(retain));
    peak = peak_bytes_of([&] { cache({b.queries, b.passages}); });
    extra["retain_chunks"] = retain;
    extra["retained_chunks"] = cache.retained_chunks;
  } else {
    throw std::invalid_argument("--mode: expected full, accumulate, cache, cache-r1, cache-streaming or "
                                "cache-r1-streaming, got '" + s.mode + "'");
  }
  const int64_t rss_peak = peak_rss_bytes();
  // The loss step alone (step 2 of the cache): leaf representations, the loss (N x M scores
  // for the dense one, tiles for the streaming one) and its backward. Measured after the RSS was read, since it allocates on its own.
  const int64_t loss_peak = peak_bytes_of([&] {
    auto q = torch::randn({s.batch, s.model.dim}).requires_grad_(true);
    auto p = torch::randn({s.batch, s.model.dim}).requires_grad_(true);
    w.loss()({q, p}).backward();
  });
  Json j{{"mode", s.mode},
         {"batch", s.batch},
         {"chunk", s.chunk},
         {"peak_bytes", peak},
         {"cache_bytes", cache_bytes(s.batch, s.batch, s.model.dim)},
         {"score_matrix_bytes", s.batch * s.batch * 4},
         {"loss_step_peak_bytes", loss_peak},
         {"seconds", now_seconds() - t0},
         {"rss_before_bytes", rss_before},
         {"rss_peak_bytes", rss_peak},
         {"rss_peak_before_step_bytes", hwm_before}};
  j.update(extra);
  return j;
}

namespace {

// The points of the memory curves, by mode and batch: each measured in a child process (or,
// with --no-spawn, in this one).
using PointsByMode = std::map<std::string, std::map<int64_t, Json>>;

Json measure_point(const MemorySettings& s, const CommonSettings& common, const std::string& mode, int64_t n) {
  MemoryPointSettings p;
  p.model = s.model;
  p.mode = mode;
  p.batch = n;
  p.chunk = s.chunk;
  p.threads = common.threads;
  p.blas_threads = common.blas_threads;
  if (s.no_spawn) {
    Json j = measure_memory_point(p);
    j.erase("rss_peak_bytes");  // meaningless in a shared process
    j.erase("rss_before_bytes");
    j.erase("rss_peak_before_step_bytes");
    return j;
  }
  return Json::parse(run_child(common.program, child_command_line("child-memory", p)));
}

// The table's columns: peak tensor memory (and RSS) per mode, the cache, the loss step.
std::vector<std::string> columns(const MemorySettings& s) {
  std::vector<std::string> header{"pairs"};
  for (const auto& m : s.modes) header.push_back(m + " MiB");
  if (!s.no_spawn) {
    for (const auto& m : s.modes) header.push_back(m + " RSS");
  }
  header.push_back("cache MiB");
  header.push_back("loss step MiB");
  if (std::any_of(s.modes.begin(), s.modes.end(), is_streaming_mode)) header.push_back("streaming loss step MiB");
  return header;
}

// The table: one row per batch (the points, by mode and batch, pivoted).
void add_table_rows(const MemorySettings& s, const PointsByMode& by_mode, Table& table) {
  auto cell = [&](const std::string& mode, int64_t n, const char* key) -> std::string {
    const auto pts = by_mode.find(mode);
    if (pts == by_mode.end() || !pts->second.count(n)) return "-";
    return mib(pts->second.at(n)[key].get<int64_t>());
  };
  const bool has_streaming = std::any_of(s.modes.begin(), s.modes.end(), is_streaming_mode);
  for (int64_t n : s.batches) {
    std::vector<std::string> row{std::to_string(n)};
    for (const auto& m : s.modes) row.push_back(cell(m, n, "peak_bytes"));
    if (!s.no_spawn) {
      for (const auto& m : s.modes) row.push_back(cell(m, n, "rss_peak_bytes"));
    }
    row.push_back(mib(cache_bytes(n, n, s.model.dim)));
    std::string loss_peak = "-", streaming_loss_peak = "-";
    for (const auto& m : s.modes) {
      const std::string peak = cell(m, n, "loss_step_peak_bytes");
      if (peak != "-") (is_streaming_mode(m) ? streaming_loss_peak : loss_peak) = peak;
    }
    row.push_back(loss_peak);
    if (has_streaming) row.push_back(streaming_loss_peak);
    table.add(row);
  }
}

// The target of one cache mode: peak(N_check) <= (1 + limit) * (peak(N_min) + cache
// bytes(N_check)). Adds its check to the JSON, its line to `notes`; returns the target
// (null when the check batch was not measured).
Json cache_mode_target(const MemorySettings& s, const std::string& mode, const std::map<int64_t, Json>& pts,
                       Json& json, std::string& notes) {
  if (!pts.count(s.check_batch)) {
    notes += mode + ": target not checked (batch " + std::to_string(s.check_batch) + " not measured)\n";
    return Json();
  }
  const int64_t n0 = pts.begin()->first;
  const double base = pts.begin()->second["peak_bytes"].get<double>();
  const double at = pts.at(s.check_batch)["peak_bytes"].get<double>();
  const double cache_b = static_cast<double>(cache_bytes(s.check_batch, s.check_batch, s.model.dim));
  const double predicted = base + cache_b;
  const double excess = std::abs(at / predicted - 1);  // "within 10%"
  const double loss_peak = pts.at(s.check_batch)["loss_step_peak_bytes"].get<double>();
  // The model with the loss step: with retained chunks (cache-r1 keeps each model's first
  // chunk) their graphs are alive during the loss step, so the peaks add up; with nothing
  // retained (the default) the step's peak is the larger of a chunk's and the loss step's.
  const bool retained = mode.rfind("cache-r1", 0) == 0;
  const double with_loss = retained ? predicted + loss_peak : std::max(predicted, loss_peak + cache_b);
  json[mode + "_check"] = {{"batch", s.check_batch},
                               {"loss_step_peak_bytes", loss_peak},
                               {"predicted_with_loss_bytes", with_loss},
                               {"difference_with_loss", at / with_loss - 1},
                               {"peak_bytes", at},
                               {"base_batch", n0},
                               {"base_peak_bytes", base},
                               {"predicted_bytes", predicted},
                               {"excess", excess}};
  const std::string check = std::to_string(s.check_batch);
  notes += mode + ": peak(" + check + ") = " + mib(static_cast<int64_t>(at)) + " MiB, peak(" + std::to_string(n0) +
              ") + cache bytes = " + mib(static_cast<int64_t>(predicted)) + " MiB; the loss step alone at " + check +
              ": " + mib(static_cast<int64_t>(loss_peak)) + " MiB" + "; with the loss step (" +
              (retained ? std::string("peak + cache + loss") : std::string("max(peak + cache, loss + cache)")) +
              "): " + mib(static_cast<int64_t>(with_loss)) + " MiB, measured " +
              fmt(100.0 * (at / with_loss - 1), 1) + "%\n";
  return target(mode + " peak(" + check + ") over peak(" + std::to_string(n0) + ") + cache bytes, relative difference",
                excess, s.limit);
}

// Full: growth exponent between consecutive sizes (1 = linear, 2 = quadratic).
void full_growth(const std::map<int64_t, Json>& pts, Json& json, std::string& notes) {
  Json growth = Json::array();
  std::string line = "full: growth exponent d log(peak) / d log(N):";
  for (auto it = std::next(pts.begin()); it != pts.end(); ++it) {
    const auto prev = std::prev(it);
    const double e = std::log(it->second["peak_bytes"].get<double>() / prev->second["peak_bytes"].get<double>()) /
                     std::log(static_cast<double>(it->first) / static_cast<double>(prev->first));
    growth.push_back({{"from", prev->first}, {"to", it->first}, {"exponent", e}});
    line += ' ';
    line += fmt(e, 2);
  }
  json["full_growth"] = growth;
  notes += line + "\n";
}

}  // namespace

ScenarioResult run_memory(const MemorySettings& s, const CommonSettings& common) {
  Report report("memory", columns(s), "points");
  report.json["model"] = describe_models(s.model, report);
  report.json["chunk"] = s.chunk;
  report.json["measured_in"] = s.no_spawn ? "this process" : "one child process per configuration";
  PointsByMode by_mode;
  for (int64_t n : s.batches) {
    for (const auto& mode : s.modes) {
      if ((mode == "full" && n > s.full_max) || (mode == "accumulate" && n > s.accumulate_max)) continue;
      const Json j = measure_point(s, common, mode, n);
      report.progress(mode + " N=" + std::to_string(n) + ": peak " + mib(j["peak_bytes"].get<int64_t>()) + " MiB, " +
                      fmt(j["seconds"].get<double>(), 2) + " s");
      by_mode[mode][n] = j;
      report.add_row(j);
    }
  }
  add_table_rows(s, by_mode, report.table);
  std::string notes =
      "(cache = representations + their gradients, 2(N+M)d floats; loss step = peak of the loss forward + "
      "backward on leaf representations, step 2 alone, dense loss unless the mode says streaming)\n";
  Json targets = Json::array();
  for (const std::string& mode : s.modes) {
    if (mode.rfind("cache", 0) != 0 || by_mode[mode].empty()) continue;
    Json t = cache_mode_target(s, mode, by_mode[mode], report.json, notes);
    if (!t.is_null()) targets.push_back(t);
  }
  if (by_mode.count("full") && by_mode["full"].size() >= 2) full_growth(by_mode["full"], report.json, notes);
  report.json["targets"] = Json::array();  // here, and written even when no target could be checked
  for (const auto& t : targets) report.add_target(t);
  return report.finish("memory: peak tensor memory above the step's start (CpuMemoryTracker), MiB; RSS = process "
                       "peak RSS, MiB; chunk " + std::to_string(s.chunk),
                       notes);
}

}  // namespace gcbench
