// The gnuplot figures of gradcache-bench.
#include "plot.h"

#include "retriever/launch/gnuplot.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gcbench {

namespace {

std::string strip_png(const std::string& png) {
  return png.size() > 4 && png.substr(png.size() - 4) == ".png" ? png.substr(0, png.size() - 4) : png;
}

std::string terminal_line(int width) { return gradcache::retriever::png_terminal(width, 560); }

// The memory data: one block per mode (gnuplot "index": batch, peak MiB, RSS MiB), then the
// cache's own size and the loss step's peak per batch. Returns the modes in order.
std::vector<std::string> write_memory_data(const std::string& dat, const Json& memory) {
  std::ofstream out(dat);
  std::vector<std::string> modes;
  for (const auto& p : memory["points"]) {
    const auto mode = p["mode"].get<std::string>();
    if (std::find(modes.begin(), modes.end(), mode) == modes.end()) modes.push_back(mode);
  }
  for (const auto& mode : modes) {
    out << "# " << mode << ": pairs peak_tensor_MiB peak_rss_MiB\n";
    for (const auto& p : memory["points"]) {
      if (p["mode"] != mode) continue;
      out << p["batch"].get<int64_t>() << " " << to_mib(p["peak_bytes"].get<int64_t>()) << " "
          << (p.contains("rss_peak_bytes") ? std::to_string(to_mib(p["rss_peak_bytes"].get<int64_t>())) : "NaN")
          << "\n";
    }
    out << "\n\n";
  }
  // For reference: the cache's own size (representations + gradients) and the peak of the
  // loss step alone (the N x M score matrix), once per batch.
  out << "# pairs cache_MiB loss_step_MiB\n";
  std::vector<int64_t> seen;
  for (const auto& p : memory["points"]) {
    const auto n = p["batch"].get<int64_t>();
    if (std::find(seen.begin(), seen.end(), n) != seen.end()) continue;
    seen.push_back(n);
    out << n << " " << to_mib(p["cache_bytes"].get<int64_t>()) << " "
        << to_mib(p["loss_step_peak_bytes"].get<int64_t>()) << "\n";
  }
  out << "\n\n";
  return modes;
}

// Panel: peak tensor memory vs batch, log-log, one line per mode.
void memory_panel(std::ostream& script, const std::string& dat, const Json& memory) {
  const auto modes = write_memory_data(dat, memory);
  script << "set title 'Peak tensor memory of one step (chunk " << memory["chunk"].get<int64_t>() << ")'\n"
         << "set logscale xy 2\nset format y '%g'\n"
         << "set xlabel 'contrastive batch (pairs)'\nset ylabel 'MiB above the step start'\n"
         << "plot ";
  for (size_t i = 0; i < modes.size(); ++i) {
    script << gradcache::retriever::gnuplot_quoted(dat) << " index " << i << " using 1:2 with linespoints lw 2 pt 7 title " << gradcache::retriever::gnuplot_quoted(modes[i])
           << ", ";
  }
  script << gradcache::retriever::gnuplot_quoted(dat) << " index " << modes.size()
         << " using 1:2 with lines dt 2 lc rgb 'gray40' title 'cache itself: 2(N+M)d floats', " << gradcache::retriever::gnuplot_quoted(dat)
         << " index " << modes.size() << " using 1:3 with lines dt 3 lw 2 lc rgb 'gray20' title 'loss step alone (N x M)'\n"
         << "unset logscale\nunset title\n";
}

// Trade-off data of the retain scenario: the retain_chunks curve (block 0: peak MiB, time
// over accumulate, label, the same from the best repetitions), then the other steps (block 1).
std::string write_retain_data(std::ostream& out, const Json& r) {
  out << "# retain_chunks curve: peak_MiB over_accumulate(medians) label over_accumulate(best of reps)\n";
  for (const auto& row : r["rows"]) {
    if (!row.contains("retain_chunks") || row.contains("retain_memory_bytes")) continue;
    out << to_mib(row["peak_bytes"].get<int64_t>()) << " " << row["over_accumulate"].get<double>() << " \"r="
        << row["retain_chunks"].get<int64_t>() << "\" " << row["over_accumulate_min"].get<double>() << "\n";
  }
  out << "\n\n# other steps\n";
  for (const auto& row : r["rows"]) {
    if (row.contains("retain_chunks") && !row.contains("retain_memory_bytes")) continue;
    std::string label = row["step"].get<std::string>();
    if (row.contains("retain_memory_bytes")) label = "budget";
    out << to_mib(row["peak_bytes"].get<int64_t>()) << " " << row["over_accumulate"].get<double>() << " \""
        << label << "\"\n";
  }
  return "Time vs memory (" + std::to_string(r["batch"].get<int64_t>()) + " pairs, chunks of " +
         std::to_string(r["chunk"].get<int64_t>()) + ")";
}

// Overhead alone: times only (no memory), so the ratio per step as points at x = index.
std::string write_overhead_data(std::ostream& out, const Json& o) {
  out << "# (no retain curve)\n0 NaN \"\"\n\n\n# steps: index over_accumulate label\n";
  int i = 1;
  for (const auto& row : o["rows"]) {
    out << i++ << " " << row["over_accumulate"].get<double>() << " \"" << row["step"].get<std::string>() << "\"\n";
  }
  return "Step time over accumulate (" + std::to_string(o["batch"].get<int64_t>()) + " pairs)";
}

// Panel: step time over accumulate vs peak memory, one point per retain_chunks.
void tradeoff_panel(std::ostream& script, const std::string& dat, const Json& scenarios) {
  const bool retain = scenarios.contains("retain");
  std::string title;
  {
    std::ofstream out(dat);
    title = retain ? write_retain_data(out, scenarios["retain"]) : write_overhead_data(out, scenarios["overhead"]);
    out << "\n\n";
  }
  script << "set title " << gradcache::retriever::gnuplot_quoted(title) << "\n"
         << "set xlabel " << gradcache::retriever::gnuplot_quoted(retain ? "peak tensor memory of the step (MiB)" : "step") << "\n"
         << "set ylabel 'step time / accumulate'\nset offsets graph 0.08, graph 0.15, graph 0.1, graph 0.1\n"
         << "set key top right\n"
         << "plot " << gradcache::retriever::gnuplot_quoted(dat) << " index 0 using 1:2 with linespoints lw 2 pt 7 title 'cache, retain_chunks r (medians)', "
         << (retain ? gradcache::retriever::gnuplot_quoted(dat) + " index 0 using 1:4 with linespoints lw 1 dt 2 pt 6 lc rgb 'gray50' title 'the same, best of the repetitions', " : std::string())
         << gradcache::retriever::gnuplot_quoted(dat) << " index 0 using 1:2:3 with labels offset char 1.2,-0.8 notitle, " << gradcache::retriever::gnuplot_quoted(dat)
         << " index 1 using 1:2 with points pt 5 ps 1.5 title 'other steps', " << gradcache::retriever::gnuplot_quoted(dat)
         << " index 1 using 1:2:3 with labels offset char 0,1.2 notitle\n";
}

// The streaming scenario's figure: memory and time vs N, dense and streaming loss.
std::vector<std::string> write_streaming_plot(const std::string& png, const Json& streaming) {
  const std::string stem = strip_png(png), dat = stem + ".dat", gp = stem + ".gp";
  {
    std::ofstream out(dat);
    for (const char* loss : {"dense", "streaming"}) {
      out << "# " << loss << ": N peak_MiB time_s\n";
      for (const auto& r : streaming["results"]) {
        if (r["loss"] != loss || r.contains("skipped")) continue;
        out << r["n"].get<int64_t>() << " " << to_mib(r["peak_bytes"].get<int64_t>()) << " "
            << r["time_s"].get<double>() << "\n";
      }
      out << "\n\n";
    }
  }
  {
    std::ofstream out(gp);
    out << "# gradcache-bench streaming figure; run: gnuplot " << gp << "\n"
        << terminal_line(1400) << "set output '" << png
        << "'\nset grid\nset key top left\nset logscale xy 2\nset format y '%g'\n"
        << "set xlabel 'N = M (d = 256)'\nset multiplot layout 1,2\n"
        << "set title 'Peak tensor memory of loss forward + backward'\nset ylabel 'MiB beyond the representations'\n"
        << "plot '" << dat << "' index 0 using 1:2 with linespoints lw 2 pt 7 title 'dense', '" << dat
        << "' index 1 using 1:2 with linespoints lw 2 pt 5 title 'streaming'\n"
        << "set title 'Time of loss forward + backward'\nset ylabel 'seconds'\n"
        << "plot '" << dat << "' index 0 using 1:3 with linespoints lw 2 pt 7 title 'dense', '" << dat
        << "' index 1 using 1:3 with linespoints lw 2 pt 5 title 'streaming'\nunset multiplot\n";
  }
  gradcache::retriever::run_gnuplot(gp);
  return {png, dat, gp};
}

}  // namespace

std::vector<std::string> write_plot(const std::string& png, const Json& scenarios) {
  if (scenarios.contains("streaming")) return write_streaming_plot(png, scenarios["streaming"]);
  const std::string stem = strip_png(png);
  const bool has_memory = scenarios.contains("memory");
  const bool has_time = scenarios.contains("retain") || scenarios.contains("overhead");
  if (!has_memory && !has_time) {
    throw std::runtime_error("--plot: the scenarios run have nothing to plot (memory, overhead, retain or streaming)");
  }
  const int panels = (has_memory ? 1 : 0) + (has_time ? 1 : 0);
  std::vector<std::string> files{png};
  std::ostringstream script;
  script << "# gradcache-bench figure; run: gnuplot " << stem << ".gp\n"
         << terminal_line(panels == 2 ? 1400 : 760) << "set output " << gradcache::retriever::gnuplot_quoted(png) << "\n"
         << "set termoption noenhanced\n"  // underscores as they are
         << "set grid\nset key top left\n";
  if (panels == 2) script << "set multiplot layout 1,2\n";
  if (has_memory) {
    files.push_back(stem + ".memory.dat");
    memory_panel(script, files.back(), scenarios["memory"]);
  }
  if (has_time) {
    files.push_back(stem + ".tradeoff.dat");
    tradeoff_panel(script, files.back(), scenarios);
  }
  if (panels == 2) script << "unset multiplot\n";
  files.push_back(stem + ".gp");
  {
    std::ofstream out(files.back());
    out << script.str();
  }
  gradcache::retriever::run_gnuplot(files.back());
  return files;
}

}  // namespace gcbench
