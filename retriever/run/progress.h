// Training progress on stderr: a live bar on a terminal, plain periodic lines otherwise.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

namespace gradcache {
namespace retriever {

struct StepRecord {
  int64_t step = 0, total_steps = 0, epoch = 0;  ///< the run's: a resumed run goes on counting
  int64_t first_step = 0;  ///< steps done before this process began (a resumed run's): the ETA's rate leaves them out
  double loss = 0, lr = 0, pairs_per_s = 0, peak_rss_mb = 0, elapsed_s = 0;
  /// Where the step's time went, wall seconds: making the batch's tensors, the training step's
  /// phases (TrainingStep::last_times), and clipping + the optimizer's update.
  double collate_s = 0, forward_s = 0, loss_s = 0, backward_s = 0, update_s = 0;
  std::string dataset;  ///< the data set of the step's batch, with several (--mix); else ""
};

/// Peak resident memory of this process so far, in MiB.
double peak_rss_mb();

class ProgressReporter {
 public:
  /// `terminal`: redraw one status line per step (stderr is a TTY); otherwise print a line
  /// every `log_every` steps and at the last step.
  ProgressReporter(std::ostream& out, bool terminal, int64_t log_every);
  void update(const StepRecord& record);
  /// Prints a line of its own (the bar, if any, is redrawn below it).
  void message(const std::string& text);
  void finish();

 private:
  std::ostream& out_;
  bool terminal_;
  int64_t log_every_;
  bool bar_drawn_ = false;
  std::string last_bar_;
};

}  // namespace retriever
}  // namespace gradcache
