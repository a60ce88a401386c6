#include "retriever/train/curves.h"

#include "files/atomic_file.h"
#include "retriever/files/output_not_input.h"
#include "retriever/files/scratch.h"
#include "retriever/launch/gnuplot.h"
#include "retriever/launch/stop_signal.h"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gradcache {
namespace retriever {
namespace fs = std::filesystem;
namespace {

// A number for gnuplot; NaN (skipped) for null, non-finite and, for a log axis, non-positive.
std::string number(const nlohmann::json& v, bool positive_only = false) {
  if (!v.is_number()) return "NaN";
  const double x = v.get<double>();
  if (!std::isfinite(x) || (positive_only && x <= 0)) return "NaN";
  std::ostringstream out;
  out.precision(9);
  out << x;
  return out.str();
}

struct CurveCounts {
  size_t train = 0, dev = 0;
  double min_loss = INFINITY, max_loss = 0;  // of the positive, finite losses
};

// Tics for a log axis over [low, high]: 1, 2, 5 (or every digit in a narrow range) times the
// powers of ten between, as gnuplot's own log tics show only the powers of ten.
std::string log_tics(double low, double high) {
  if (!(low <= high) || !(low > 0)) return "";
  std::vector<double> tics;
  for (const auto& mantissas : {std::vector<int>{1, 2, 5}, std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9}}) {
    tics.clear();
    for (int e = static_cast<int>(std::floor(std::log10(low))); e <= static_cast<int>(std::ceil(std::log10(high))); ++e) {
      for (int m : mantissas) {
        const double v = m * std::pow(10.0, e);
        if (v >= low / 1.05 && v <= high * 1.05) tics.push_back(v);
      }
    }
    if (tics.size() >= 3) break;
  }
  if (tics.size() < 2 && high > low) {  // a narrow range: five values across it, 3 digits
    tics.clear();
    for (int i = 0; i <= 4; ++i) {
      const double v = low + (high - low) * i / 4;
      const double scale = std::pow(10.0, std::floor(std::log10(v)) - 2);
      tics.push_back(std::round(v / scale) * scale);
    }
  }
  std::ostringstream out;
  out << "set ytics (";
  for (size_t i = 0; i < tics.size(); ++i) out << (i ? ", " : "") << tics[i];
  out << ")\n";
  return tics.size() >= 2 ? out.str() : "";
}

// The data file of one run: block 0 "step loss lr", block 1 "step dev_metric". Torn or
// foreign lines are skipped.
CurveCounts write_run_data(const CurveSource& run, const std::string& dat, const std::string& dev_metric,
                           const std::atomic<int>* stop) {
  std::ifstream in(run.metrics_path);
  if (!in) throw std::runtime_error("cannot read " + run.metrics_path);
  std::ostringstream train, dev;
  CurveCounts counts;
  std::string line;
  size_t line_number = 0;
  // A line that is not a record means the file is not a run's metrics (or was damaged): say
  // which and where, rather than drawing what is left of it.
  auto not_metrics = [&](const std::string& why) {
    return std::runtime_error(run.metrics_path + " line " + std::to_string(line_number) + ": " + why +
                              "; is it the metrics.jsonl a gradcache train run wrote?");
  };
  while (std::getline(in, line)) {
    if (++line_number % 4096 == 0) stop_if_signalled(stop);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const std::exception&) {
      throw not_metrics("not JSON");
    }
    if (!j.is_object() || !j.contains("step")) throw not_metrics("not a metrics record (an object with a \"step\")");
    if (j.contains("dev") && j["dev"].is_object() && j["dev"].contains(dev_metric)) {
      dev << number(j["step"]) << " " << number(j["dev"][dev_metric]) << "\n";
      ++counts.dev;
    } else if (j.contains("loss")) {
      if (j["loss"].is_number() && std::isfinite(j["loss"].get<double>()) && j["loss"].get<double>() > 0) {
        counts.min_loss = std::min(counts.min_loss, j["loss"].get<double>());
        counts.max_loss = std::max(counts.max_loss, j["loss"].get<double>());
      }
      train << number(j["step"]) << " " << number(j["loss"], true) << " " << number(j.value("lr", nlohmann::json()))
            << "\n";
      ++counts.train;
    }
  }
  std::ofstream out(dat);
  out << "# " << run.name << ": step loss lr\n" << train.str() << "\n\n# step " << dev_metric << "\n"
      << (counts.dev ? dev.str() : "0 NaN\n") << "\n\n";
  if (!out) throw std::runtime_error("cannot write " + dat);
  return counts;
}

// A string in gnuplot's single quotes.

// One panel: a curve per run that has points (`has`), `columns` of the block `index`.
void panel(std::ostream& gp, const std::vector<CurveSource>& runs, const std::vector<std::string>& dats,
           const std::vector<CurveCounts>& counts, bool dev, const std::string& columns, const std::string& style) {
  std::string sep = "plot ";
  for (size_t i = 0; i < runs.size(); ++i) {
    if ((dev ? counts[i].dev : counts[i].train) == 0) continue;
    gp << sep << gnuplot_quoted(dats[i]) << " index " << (dev ? 1 : 0) << " using " << columns << " with " << style
       << " lw 2 lc " << i + 1 << " title " << gnuplot_quoted(runs[i].name);
    sep = ", ";
  }
  gp << "\n";
}

std::string write_script(const std::vector<CurveSource>& runs, const std::vector<std::string>& dats,
                         const std::vector<CurveCounts>& counts, const std::string& dev_metric,
                         const std::string& output) {
  bool any_dev = false;
  double min_loss = INFINITY, max_loss = 0;
  for (const auto& c : counts) {
    any_dev = any_dev || c.dev > 0;
    min_loss = std::min(min_loss, c.min_loss);
    max_loss = std::max(max_loss, c.max_loss);
  }
  const int panels = any_dev ? 3 : 2;
  std::ostringstream gp;
  gp << png_terminal(900, panels * 300, "noenhanced") << "set output " << gnuplot_quoted(output) << "\n"
     << "set multiplot layout " << panels << ",1 title "
     << gnuplot_quoted(runs.size() == 1 ? "Training curves: " + runs[0].name : "Training curves") << "\n"
     << "set grid\nset key top right\nset xlabel 'step'\nset xrange [0:*]\n"
     << "set lmargin 12\nset autoscale yfix\nset offsets 0, 0, graph 0.08, graph 0.08\n"  // room above and below the curves
     << "set title 'training loss (log scale)'\nset ylabel 'loss'\nset logscale y\nset format y '%g'\n"
     << log_tics(min_loss, max_loss);
  panel(gp, runs, dats, counts, false, "1:2", "linespoints pt 7 ps 0.4");  // points: a run of one line shows
  gp << "unset logscale y\nset ytics autofreq\nset title 'learning rate'\nset ylabel 'learning rate'\nset format y '%.1e'\n";
  panel(gp, runs, dats, counts, false, "1:3", "linespoints pt 7 ps 0.4");
  if (any_dev) {
    gp << "set title " << gnuplot_quoted("dev " + dev_metric) << "\nset ylabel " << gnuplot_quoted(dev_metric)
       << "\nset format y '%.3f'\nset key bottom right\n";
    panel(gp, runs, dats, counts, true, "1:2", "linespoints pt 7 ps 0.8");
  }
  gp << "unset multiplot\nset output\n";
  return gp.str();
}

bool is_png(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  in.read(magic, 8);
  return in && std::memcmp(magic, "\x89PNG\r\n\x1a\n", 8) == 0;
}

// A temporary directory, removed with everything in it when this goes.
struct ScratchDirectory {
  fs::path path;
  ScratchDirectory() {
    path = make_scratch_directory("plot");
  }
  ~ScratchDirectory() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

}  // namespace

std::string run_name(const std::string& directory) {
  const std::string name = fs::absolute(fs::path(directory)).lexically_normal().filename().string();
  if (!name.empty()) return name;
  return fs::absolute(fs::path(directory)).lexically_normal().parent_path().filename().string();  // "a/" -> "a/."?
}

CurveSource curve_source(const std::string& run) {
  fs::path path(run);
  const bool file = fs::is_regular_file(path);
  const fs::path metrics = file ? path : path / "metrics.jsonl";
  if (!fs::is_regular_file(metrics)) {
    throw std::invalid_argument(run + ": no metrics.jsonl (give a training run's --output directory or its "
                                "metrics file)");
  }
  const std::string name = run_name(file ? (path.has_parent_path() ? path.parent_path().string() : ".") : run);
  return {name.empty() ? run : name, metrics.string()};
}

std::string run_select_metric(const std::string& run) {
  const fs::path config = (fs::is_regular_file(run) ? fs::path(run).parent_path() : fs::path(run)) / "config.json";
  try {
    std::ifstream in(config);
    if (in) return nlohmann::json::parse(in).value("select_metric", std::string("recall@10"));
  } catch (const std::exception&) {
  }
  return "recall@10";
}

void plot_training_curves(const std::vector<CurveSource>& runs, const std::string& png, const std::string& dev_metric,
                          const PlotControl& control) {
  std::vector<std::pair<std::string, std::string>> inputs;
  for (const auto& run : runs) inputs.emplace_back("input", run.metrics_path);
  refuse_output_that_is_an_input("--output", png, inputs);
  ScratchDirectory scratch;
  std::vector<std::string> dats;
  std::vector<CurveCounts> counts;
  size_t points = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    dats.push_back((scratch.path / ("run" + std::to_string(i) + ".dat")).string());
    if (control.log) control.log("reading " + runs[i].metrics_path);
    counts.push_back(write_run_data(runs[i], dats.back(), dev_metric, control.stop));
    points += counts.back().train;
  }
  if (points == 0) {
    std::string files;
    for (const auto& run : runs) files += (files.empty() ? "" : ", ") + run.metrics_path;
    throw std::runtime_error("no training steps to plot in " + files);
  }
  const std::string temporary = files::temporary_path(png);
  const std::string script = (scratch.path / "curves.gp").string();
  std::ofstream(script) << write_script(runs, dats, counts, dev_metric, temporary);
  try {
    if (control.log) control.log("drawing " + std::to_string(points) + " steps with gnuplot");
    run_gnuplot(script, (scratch.path / "gnuplot.log").string(), control.stop);
    if (!is_png(temporary)) throw std::runtime_error("gnuplot wrote no PNG image to " + temporary);
    stop_if_signalled(control.stop);
    fs::rename(temporary, png);
  } catch (...) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    throw;
  }
}

}  // namespace retriever
}  // namespace gradcache
