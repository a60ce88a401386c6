// gradcache-streaming-bench: peak memory and time of the contrastive loss (forward + backward on
// the representations) for the dense loss (contrastive_loss: the N x M scores and softmax) and
// the streaming loss (streaming_contrastive_loss: tiles), as N grows.
//
//   gradcache-streaming-bench                       # N = 1,024 ... 65,536, d = 256: a table
//   gradcache-streaming-bench --json --plot s.png   # JSON on stdout, s.png (+ s.dat, s.gp)
//   gradcache-streaming-bench --tile-sweep 8192     # time per tile size at one N
//
// Memory: tensor bytes counted by gradcache::CpuMemoryTracker, peak during the step minus what
// was live before it (the representations). Time: wall clock, median of --repeats after one
// warm-up run (one run without warm-up from --single-run-from up: those take minutes).
#include <gradcache/contrastive_loss.h>
#include <gradcache/memory.h>
#include <gradcache/streaming_loss.h>
#include <gradcache/version.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using Json = nlohmann::ordered_json;
namespace gc = gradcache;

struct Settings {
  std::vector<int64_t> sizes{1024, 2048, 4096, 8192, 16384, 32768, 65536};
  int64_t dim = 256;
  int64_t tile = gc::kDefaultTileSize;
  double temperature = 0.05;
  bool symmetric = false;
  int64_t repeats = 3;
  int64_t single_run_from = 16384;  ///< from this N on: one run, no warm-up
  double dense_limit_gib = 8;       ///< skip the dense loss where its estimated peak exceeds this
  int64_t threads = 1;              ///< ATen intra-op threads (OpenBLAS runs its own)
  int64_t seed = 0;
  int64_t tile_sweep = 0;           ///< > 0: only time the streaming loss at this N per tile size
  std::vector<int64_t> sweep_tiles{256, 512, 1024, 2048, 4096};
  bool json = false;
  std::string plot;
};

std::vector<int64_t> parse_ints(const std::string& s) {
  std::vector<int64_t> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::stoll(item));
  if (out.empty()) throw std::invalid_argument("expected a comma-separated list of integers, got '" + s + "'");
  return out;
}

const char* kHelp =
    "gradcache-streaming-bench: dense vs streaming contrastive loss, peak memory and time vs N\n"
    "  --sizes LIST          N values (M = N), default 1024,2048,4096,8192,16384,32768,65536\n"
    "  --dim D               representation size, default 256\n"
    "  --tile T              tile size of the streaming loss, default gradcache::kDefaultTileSize (1024)\n"
    "  --temperature T       default 0.05 (representations are L2-normalised)\n"
    "  --symmetric           both directions\n"
    "  --repeats R           timed runs per point (median), default 3, after one warm-up\n"
    "  --single-run-from N   from this N on, one run and no warm-up (default 16384)\n"
    "  --dense-limit-gib G   skip the dense loss where its peak, extrapolated from N = sizes[0], exceeds G (8)\n"
    "  --threads K           ATen intra-op threads, default 1 (OpenBLAS uses its own)\n"
    "  --tile-sweep N        instead: streaming time at N for each of --sweep-tiles\n"
    "  --sweep-tiles LIST    default 256,512,1024,2048,4096\n"
    "  --seed S              default 0\n"
    "  --json                JSON on stdout instead of the table\n"
    "  --plot FILE.png       memory and time vs N with gnuplot (also FILE.dat, FILE.gp)\n";

Settings parse(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::cout << kHelp;
      std::exit(0);
    } else if (a == "--sizes") s.sizes = parse_ints(value());
    else if (a == "--dim") s.dim = std::stoll(value());
    else if (a == "--tile") s.tile = std::stoll(value());
    else if (a == "--temperature") s.temperature = std::stod(value());
    else if (a == "--symmetric") s.symmetric = true;
    else if (a == "--repeats") s.repeats = std::stoll(value());
    else if (a == "--single-run-from") s.single_run_from = std::stoll(value());
    else if (a == "--dense-limit-gib") s.dense_limit_gib = std::stod(value());
    else if (a == "--threads") s.threads = std::stoll(value());
    else if (a == "--tile-sweep") s.tile_sweep = std::stoll(value());
    else if (a == "--sweep-tiles") s.sweep_tiles = parse_ints(value());
    else if (a == "--seed") s.seed = std::stoll(value());
    else if (a == "--json") s.json = true;
    else if (a == "--plot") s.plot = value();
    else throw std::invalid_argument("unknown option " + a + " (see --help)");
  }
  if (s.dim <= 0 || s.tile <= 0 || s.repeats <= 0 || s.threads <= 0)
    throw std::invalid_argument("--dim, --tile, --repeats and --threads must be positive");
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double gib(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024 * 1024); }
double mib(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024); }

struct Point {
  double loss = 0;
  int64_t peak_bytes = 0;  ///< above the representations
  std::vector<double> times;
};

using LossFn = std::function<at::Tensor(const at::Tensor&, const at::Tensor&)>;

// One forward + backward on fresh leaves: the loss, the peak beyond what was live before, seconds.
void run_once(const LossFn& loss_fn, const at::Tensor& q0, const at::Tensor& p0, Point& point, bool record) {
  auto q = q0.detach().requires_grad_(true), p = p0.detach().requires_grad_(true);
  const int64_t before = gc::CpuMemoryTracker::stats().current;
  gc::CpuMemoryTracker::reset_peak();
  const auto start = std::chrono::steady_clock::now();
  auto loss = loss_fn(q, p);
  loss.backward();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  point.peak_bytes = std::max(point.peak_bytes, gc::CpuMemoryTracker::stats().peak - before);
  point.loss = loss.item<double>();
  if (record) point.times.push_back(seconds);
}

// The losses of one N, run alternately (warm-up round first unless `runs` is 1): on a shared
// machine both then see the same background load, which keeps their ratio meaningful.
std::vector<Point> measure(const std::vector<LossFn>& losses, const at::Tensor& q, const at::Tensor& p,
                           int64_t runs, bool warm_up) {
  std::vector<Point> points(losses.size());
  for (int64_t r = warm_up ? -1 : 0; r < runs; ++r) {
    for (size_t i = 0; i < losses.size(); ++i) run_once(losses[i], q, p, points[i], r >= 0);
  }
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

std::string png_terminal() {
  FILE* pipe = popen("gnuplot -e 'set terminal' 2>&1", "r");
  if (!pipe) return "png";
  std::string text;
  char buf[512];
  while (fgets(buf, sizeof buf, pipe)) text += buf;
  pclose(pipe);
  return text.find("pngcairo") != std::string::npos ? "pngcairo" : "png";
}

void write_plot(const std::string& png, const Json& rows) {
  const std::string stem = png.size() > 4 && png.substr(png.size() - 4) == ".png" ? png.substr(0, png.size() - 4) : png;
  const std::string dat = stem + ".dat", gp = stem + ".gp";
  {
    std::ofstream out(dat);
    for (const char* loss : {"dense", "streaming"}) {
      out << "# " << loss << ": N peak_MiB time_s\n";
      for (const auto& r : rows) {
        if (r["loss"] != loss || r.contains("skipped")) continue;
        out << r["n"].get<int64_t>() << " " << mib(r["peak_bytes"].get<int64_t>()) << " "
            << r["time_s"].get<double>() << "\n";
      }
      out << "\n\n";
    }
  }
  const std::string terminal = png_terminal();
  {
    std::ofstream out(gp);
    out << "# gradcache-streaming-bench figure; run: gnuplot " << gp << "\n"
        << "set terminal " << terminal << " size 1400,560" << (terminal == "pngcairo" ? " font 'sans,10'" : "")
        << "\nset output '" << png << "'\nset grid\nset key top left\nset logscale xy 2\nset format y '%g'\n"
        << "set xlabel 'N = M (d = 256)'\nset multiplot layout 1,2\n"
        << "set title 'Peak tensor memory of loss forward + backward'\nset ylabel 'MiB beyond the representations'\n"
        << "plot '" << dat << "' index 0 using 1:2 with linespoints lw 2 pt 7 title 'dense', '" << dat
        << "' index 1 using 1:2 with linespoints lw 2 pt 5 title 'streaming'\n"
        << "set title 'Time of loss forward + backward'\nset ylabel 'seconds'\n"
        << "plot '" << dat << "' index 0 using 1:3 with linespoints lw 2 pt 7 title 'dense', '" << dat
        << "' index 1 using 1:3 with linespoints lw 2 pt 5 title 'streaming'\nunset multiplot\n";
  }
  const std::string cmd = "gnuplot '" + gp + "' 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) throw std::runtime_error("--plot: cannot run gnuplot");
  std::string messages;
  char buf[512];
  while (fgets(buf, sizeof buf, pipe)) messages += buf;
  if (pclose(pipe) != 0) throw std::runtime_error("--plot: gnuplot failed: " + messages);
}

int run(const Settings& s) {
  at::set_num_threads(static_cast<int>(s.threads));
  gc::CpuMemoryTracker::install();
  const auto t0 = std::chrono::steady_clock::now();
  const auto dense_opts = gc::ContrastiveLossOptions().temperature(s.temperature);
  auto dense = [&](const at::Tensor& q, const at::Tensor& p) {
    return s.symmetric ? gc::symmetric_contrastive_loss(q, p, dense_opts) : gc::contrastive_loss(q, p, dense_opts);
  };
  auto streaming_with = [&](int64_t tile) {
    const auto o = gc::StreamingLossOptions().temperature(s.temperature).symmetric(s.symmetric).tile_size(tile);
    return [o](const at::Tensor& q, const at::Tensor& p) { return gc::streaming_contrastive_loss(q, p, o); };
  };
  Json config = {{"dim", s.dim}, {"tile", s.tile}, {"temperature", s.temperature}, {"symmetric", s.symmetric},
                 {"repeats", s.repeats}, {"single_run_from", s.single_run_from}, {"threads", s.threads},
                 {"blas_threads", "OpenBLAS default"}, {"dtype", "float32"}, {"gradcache", GRADCACHE_VERSION}};

  if (s.tile_sweep > 0) {
    const auto [q, p] = representations(s.tile_sweep, s.dim, s.seed);
    Json rows = Json::array();
    for (int64_t tile : s.sweep_tiles) {
      const auto pt = measure({streaming_with(tile)}, q, p, s.repeats, true)[0];
      rows.push_back({{"tile", tile}, {"time_s", median(pt.times)}, {"peak_bytes", pt.peak_bytes}});
      if (!s.json) {
        std::cout << "N " << s.tile_sweep << " tile " << std::setw(5) << tile << "  " << std::fixed
                  << std::setprecision(3) << median(pt.times) << " s  " << std::setprecision(1)
                  << mib(pt.peak_bytes) << " MiB" << std::endl;
      }
    }
    if (s.json) std::cout << Json{{"config", config}, {"n", s.tile_sweep}, {"tile_sweep", rows}}.dump(2) << std::endl;
    return 0;
  }

  Json rows = Json::array();
  double dense_bytes_per_score = 0;  // measured at the first N, to extrapolate
  double dense_8192 = 0, streaming_8192 = 0;
  int64_t streaming_largest_peak = -1, largest_n = 0;
  if (!s.json) {
    std::cout << "contrastive loss forward + backward, d = " << s.dim << ", float32, temperature " << s.temperature
              << (s.symmetric ? ", symmetric" : "") << ", tile " << s.tile << "\n"
              << "peak: tensor memory beyond the representations (CpuMemoryTracker); time: median wall seconds\n\n"
              << "      N | dense peak MiB | dense s | streaming peak MiB | streaming s | time ratio | loss diff\n"
              << "--------+----------------+---------+--------------------+-------------+------------+----------"
              << std::endl;
  }
  for (int64_t n : s.sizes) {
    const auto [q, p] = representations(n, s.dim, s.seed);
    const bool single = n >= s.single_run_from;
    const int64_t runs = single ? 1 : s.repeats;
    Json dense_row = {{"n", n}, {"loss", "dense"}};
    const double estimate = dense_bytes_per_score * static_cast<double>(n) * n;
    const bool dense_runs = dense_bytes_per_score == 0 || estimate <= s.dense_limit_gib * (1 << 30);
    std::vector<LossFn> losses{streaming_with(s.tile)};
    if (dense_runs) losses.push_back(dense);
    const auto points = measure(losses, q, p, runs, !single);
    const Point& st = points[0];
    const Point d = dense_runs ? points[1] : Point();
    if (dense_runs) {
      if (dense_bytes_per_score == 0) dense_bytes_per_score = static_cast<double>(d.peak_bytes) / n / n;
      dense_row["peak_bytes"] = d.peak_bytes;
      dense_row["time_s"] = median(d.times);
      dense_row["times_s"] = d.times;
      dense_row["loss_value"] = d.loss;
    } else {
      dense_row["skipped"] = true;
      dense_row["estimated_peak_bytes"] = static_cast<int64_t>(estimate);
      dense_row["note"] = "estimated peak above --dense-limit-gib " + std::to_string(s.dense_limit_gib);
    }
    rows.push_back(dense_row);

    Json stream_row = {{"n", n},
                       {"loss", "streaming"},
                       {"peak_bytes", st.peak_bytes},
                       {"time_s", median(st.times)},
                       {"times_s", st.times},
                       {"loss_value", st.loss}};
    rows.push_back(stream_row);
    if (n == 8192 && dense_runs) dense_8192 = median(d.times), streaming_8192 = median(st.times);
    if (n >= largest_n) largest_n = n, streaming_largest_peak = st.peak_bytes;

    if (!s.json) {
      std::ostringstream line;
      line << std::setw(7) << n << " | ";
      if (dense_runs) {
        line << std::setw(14) << std::fixed << std::setprecision(1) << mib(d.peak_bytes) << " | " << std::setw(7)
             << std::setprecision(3) << median(d.times) << " | ";
      } else {
        line << std::setw(14) << ("skip (~" + std::to_string(static_cast<int>(gib(static_cast<int64_t>(estimate)))) +
                                  " GiB)")
             << " | " << std::setw(7) << "-" << " | ";
      }
      line << std::setw(18) << std::setprecision(1) << mib(st.peak_bytes) << " | " << std::setw(11)
           << std::setprecision(3) << median(st.times) << " | ";
      if (dense_runs) {
        line << std::setw(10) << std::setprecision(2) << median(st.times) / median(d.times) << " | "
             << std::scientific << std::setprecision(1) << std::abs(st.loss - d.loss) / std::abs(d.loss);
      } else {
        line << std::setw(10) << "-" << " | -";
      }
      std::cout << line.str() << std::endl;
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Json summary = {{"largest_n", largest_n},
                  {"streaming_peak_bytes_at_largest_n", streaming_largest_peak},
                  {"streaming_under_2gib_at_largest_n", streaming_largest_peak < (int64_t{2} << 30)},
                  {"total_seconds", seconds}};
  if (dense_8192 > 0) summary["time_ratio_8192"] = streaming_8192 / dense_8192;
  if (s.json) {
    std::cout << Json{{"config", config}, {"results", rows}, {"summary", summary}}.dump(2) << std::endl;
  } else {
    std::cout << "\nstreaming at N = " << largest_n << ": " << std::fixed << std::setprecision(1)
              << mib(streaming_largest_peak) << " MiB beyond the representations ("
              << (streaming_largest_peak < (int64_t{2} << 30) ? "under" : "NOT under") << " 2 GiB)";
    if (dense_8192 > 0) {
      std::cout << "; at N = 8192 streaming / dense time = " << std::setprecision(2) << streaming_8192 / dense_8192;
    }
    std::cout << "\ntotal " << std::setprecision(0) << seconds << " s" << std::endl;
  }
  if (!s.plot.empty()) write_plot(s.plot, rows);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::cerr << "gradcache-streaming-bench: " << e.what() << std::endl;
    return 2;
  }
}
