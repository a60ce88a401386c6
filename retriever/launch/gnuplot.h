// Running gnuplot, the one way the program (training curves) and the benchmarks (their figures)
// draw PNGs: a script file, gnuplot started without a shell, its messages in the error.
#pragma once

#include <atomic>
#include <string>

namespace gradcache {
namespace retriever {

/// `s` as a gnuplot single-quoted string ('it''s').
std::string gnuplot_quoted(const std::string& s);

/// The script line that selects a PNG terminal of `width` x `height` pixels: pngcairo
/// (anti-aliased, font sans 10) where gnuplot has it, else png; `options` are appended to both
/// (e.g. "noenhanced").
std::string png_terminal(int width, int height, const std::string& options = "");

/// Runs `gnuplot SCRIPT`, its stdout and stderr into `log` (a temporary file when empty).
/// Throws with gnuplot's messages when it fails, and says so when gnuplot is not installed.
/// Once `stop` (when given) holds a signal number, gnuplot is killed and StoppedBySignal thrown.
void run_gnuplot(const std::string& script, const std::string& log = "", const std::atomic<int>* stop = nullptr);

}  // namespace retriever
}  // namespace gradcache
