// Stopping work on a signal: the program's handler stores the signal's number in a flag, and
// every long loop (encoding, index building, search, tokenizer training) looks at it between
// its blocks and throws StoppedBySignal; the program then exits with 128 + the signal.
// LibTorch-free (the tokenizer's library uses it).
#pragma once

#include <atomic>
#include <functional>
#include <stdexcept>
#include <string>

namespace gradcache {
namespace retriever {

/// A command stopped by a signal before it finished: nothing was computed or written. The
/// program exits with 128 + signal().
class StoppedBySignal : public std::runtime_error {
 public:
  explicit StoppedBySignal(int signal);
  int signal() const { return signal_; }

 private:
  int signal_;
};

/// "SIGINT", "SIGTERM" (the signals the program stops on), else "signal N": for messages.
std::string signal_name(int signal);

/// Throws StoppedBySignal once `stop` (when given) holds a signal number: what every long loop
/// of train, eval, encode and mine calls between its blocks, so that a signal stops each phase
/// promptly.
void stop_if_signalled(const std::atomic<int>* stop);

// Work that cannot look at the flag itself (sentencepiece's trainer runs for up to ~15 s with
// no way to interrupt it) is done in a child process, so that a signal ends it at once.

/// Runs `work` in a forked child and returns the string it returned. Every 50 ms the parent
/// looks at `stop`: once it holds a signal number the child is killed and StoppedBySignal
/// is thrown. An exception in `work` comes back as std::runtime_error
/// with its what(); a child that dies (killed, out of memory) is a std::runtime_error that
/// names `what` and how it ended. Without `stop`, `work` runs here, in this process.
///
/// The child is a fork of this process: `work` must not need other threads of the parent
/// (they are not in the child), and its result must fit in memory twice.
std::string run_stoppable(const std::function<std::string()>& work, const std::atomic<int>* stop,
                          const std::string& what);

}  // namespace retriever
}  // namespace gradcache
