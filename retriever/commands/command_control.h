// How a command of commands/ (eval, encode, mine, export) reports as it goes, and how it is stopped.
#pragma once

#include <atomic>
#include <functional>
#include <string>

namespace gradcache::retriever {

struct CommandControl {
  /// Notices (skipped lines, judgements of unknown ids) and progress, one line each; null: none.
  std::function<void(const std::string&)> log;
  /// Once it holds a signal number, the command stops at its next check (between batches or
  /// phases) with StoppedBySignal (launch/stop_signal.h), leaving nothing half-written.
  const std::atomic<int>* stop = nullptr;
};

}  // namespace gradcache::retriever
