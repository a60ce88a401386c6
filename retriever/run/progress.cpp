#include "retriever/run/progress.h"

#include "retriever/launch/process_memory.h"

#include <cmath>
#include <cstdio>
#include <ostream>

namespace gradcache {
namespace retriever {
namespace {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s / 60) % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  }
  return buf;
}

std::string status(const StepRecord& r, bool with_bar) {
  const int64_t steps_here = r.step - r.first_step;  // elapsed_s counts this process's steps only
  const double eta = steps_here > 0 ? r.elapsed_s / steps_here * (r.total_steps - r.step) : NAN;
  char text[256];
  std::snprintf(text, sizeof text, "step %lld/%lld  epoch %lld  loss %.4f  lr %.2e  %.0f pairs/s  peak %.0f MiB  ETA %s",
                static_cast<long long>(r.step), static_cast<long long>(r.total_steps),
                static_cast<long long>(r.epoch), r.loss, r.lr, r.pairs_per_s, r.peak_rss_mb,
                format_duration(eta).c_str());
  if (!with_bar) return text;
  constexpr int kWidth = 24;
  const int filled = r.total_steps > 0 ? static_cast<int>(kWidth * r.step / r.total_steps) : 0;
  std::string bar = "[";  // appended piece by piece: "[" + std::string(...) sends GCC 12's -Wstringop-overflow astray
  bar.append(filled, '#').append(kWidth - filled, '.').append("] ").append(text);
  return bar;
}

}  // namespace

double peak_rss_mb() { return static_cast<double>(peak_rss_bytes()) / (1 << 20); }

ProgressReporter::ProgressReporter(std::ostream& out, bool terminal, int64_t log_every)
    : out_(out), terminal_(terminal), log_every_(log_every > 0 ? log_every : 1) {}

void ProgressReporter::update(const StepRecord& record) {
  if (terminal_) {
    last_bar_ = status(record, true);
    out_ << "\r\033[K" << last_bar_ << std::flush;
    bar_drawn_ = true;
  } else if (record.step % log_every_ == 0 || record.step == record.total_steps) {
    out_ << status(record, false) << std::endl;
  }
}

void ProgressReporter::message(const std::string& text) {
  if (terminal_ && bar_drawn_) {
    out_ << "\r\033[K" << text << "\n" << last_bar_ << std::flush;
  } else {
    out_ << text << std::endl;
  }
}

void ProgressReporter::finish() {
  if (terminal_ && bar_drawn_) out_ << "\n" << std::flush;
  bar_drawn_ = false;
}

}  // namespace retriever
}  // namespace gradcache
