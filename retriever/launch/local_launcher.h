// Several ranks on this machine without torchrun: the program starts N copies of itself, each
// with the environment torchrun would give it (RANK, WORLD_SIZE, MASTER_ADDR=127.0.0.1, ...),
// and watches them. On this project's CPUs, processes of one thread each train faster than one
// process of several intra-op threads (docs/distributed.md), hence `--nproc auto`.
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

namespace gradcache {
namespace retriever {

/// The cores this process may run on (its CPU affinity; hardware_concurrency as a fallback).
int available_cores();

/// Whether `value` is a valid --nproc: "auto" or a positive integer. "" when valid, else why not
/// (e.g. "must be a positive integer or auto, got 'abc'").
std::string check_process_count(const std::string& value);

/// --nproc as a number: "auto" is the available cores divided by the threads per rank (at
/// least 1). Throws std::invalid_argument for a value check_process_count refuses.
int resolve_process_count(const std::string& value, int threads_per_rank);

/// This process's command line (/proc/self/cmdline), argv[0] included.
std::vector<std::string> own_command_line();

/// `arguments` without `flag` and its value ("--nproc 2" or "--nproc=2"): the ranks' command line.
std::vector<std::string> without_flag(const std::vector<std::string>& arguments, const std::string& flag);

/// What to start and how to watch it.
struct LocalLaunch {
  std::string program = "/proc/self/exe";  ///< executed by every rank
  std::vector<std::string> arguments;      ///< argv, argv[0] included
  int processes = 2;
  int threads_per_rank = 1;  ///< OMP_NUM_THREADS of each rank, as torchrun sets it
  /// After one rank failed, how long the others may take to stop (SIGTERM) before SIGKILL.
  std::chrono::milliseconds grace{30000};
  /// Set (to the signal's number) by the program's SIGINT/SIGTERM handler: forwarded to every rank.
  const std::atomic<int>* stop = nullptr;
  std::string name = "gradcache";  ///< prefix of the launcher's messages
};

/// Starts the ranks (each dies with SIGTERM if this process dies) and waits for all of them.
/// Returns 0 when every rank returned 0; 128 + the signal when a forwarded signal stopped them;
/// otherwise 1, after a message naming the first rank that failed and stopping the others.
int run_local_ranks(const LocalLaunch& launch);

}  // namespace retriever
}  // namespace gradcache
