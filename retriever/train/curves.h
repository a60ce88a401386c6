// Training curves: loss, learning rate and the dev metric over the steps of one run or
// several, drawn from their metrics.jsonl by gnuplot into a PNG (OUTPUT/curves.png,
// `gradcache plot`).
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

namespace gradcache {
namespace retriever {

/// One run's curves: its name in the legend and its metrics.jsonl.
struct CurveSource {
  std::string name;
  std::string metrics_path;
};

/// How the legend names a run directory: its last component ("runs/a/" -> "a").
std::string run_name(const std::string& directory);

/// A run directory (or its metrics.jsonl) as a CurveSource named after the directory.
/// Throws std::invalid_argument when it holds no metrics.jsonl.
CurveSource curve_source(const std::string& run);

/// The dev metric a run directory selects by (its config.json's select_metric; recall@10
/// when it has none).
std::string run_select_metric(const std::string& run);

/// How plot_training_curves reports as it goes, and how it is stopped.
struct PlotControl {
  /// A line as each phase begins (reading a run's metrics, drawing); null: none.
  std::function<void(const std::string&)> log;
  /// Once it holds a signal number, the plot stops (while reading, or by killing gnuplot) with
  /// StoppedBySignal, and `png` is left as it was.
  const std::atomic<int>* stop = nullptr;
};

/// Draws the curves of `runs` into `png`, written atomically (a temporary file renamed):
/// loss (log scale) and learning rate over steps, and `dev_metric` of the dev evaluations
/// when any run has some. Throws std::runtime_error saying why when there is nothing to plot,
/// gnuplot is missing or fails; `png` is then left as it was; or StoppedBySignal (`control`).
void plot_training_curves(const std::vector<CurveSource>& runs, const std::string& png,
                          const std::string& dev_metric = "recall@10", const PlotControl& control = {});

}  // namespace retriever
}  // namespace gradcache
