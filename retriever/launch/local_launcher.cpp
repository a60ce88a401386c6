#include "retriever/launch/local_launcher.h"

#include <gradcache/distributed.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <set>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace gradcache {
namespace retriever {
namespace {

// The variables torchrun sets for its workers: replaced in each rank's environment.
const std::set<std::string> kLaunchVariables = {
    "RANK",           "LOCAL_RANK",  "WORLD_SIZE",      "LOCAL_WORLD_SIZE",           "GROUP_RANK",
    "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE", "MASTER_ADDR",                "MASTER_PORT",
    "OMP_NUM_THREADS",  "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_RESTART_COUNT", "GLOO_SOCKET_IFNAME"};

std::vector<std::string> rank_environment(int rank, const LocalLaunch& launch, int port) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    if (kLaunchVariables.count(text.substr(0, text.find('='))) == 0) env.push_back(text);
  }
  const std::string world = std::to_string(launch.processes), r = std::to_string(rank);
  for (const char* name : {"RANK=", "LOCAL_RANK=", "ROLE_RANK="}) env.push_back(std::string(name) + r);
  for (const char* name : {"WORLD_SIZE=", "LOCAL_WORLD_SIZE=", "ROLE_WORLD_SIZE="}) env.push_back(std::string(name) + world);
  // Constructed in place: a push_back of a temporary std::string made from a literal sends
  // GCC 12's -Warray-bounds after the small-string buffer (a false positive, with pages of notes).
  env.emplace_back("GROUP_RANK=0");
  env.emplace_back("GROUP_WORLD_SIZE=1");
  env.emplace_back("MASTER_ADDR=127.0.0.1");
  env.push_back("MASTER_PORT=" + std::to_string(port));
  env.push_back("OMP_NUM_THREADS=" + std::to_string(launch.threads_per_rank));
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(&s[0]);
  out.push_back(nullptr);
  return out;
}

// Forks and executes one rank; it receives SIGTERM when this process dies, however it dies.
pid_t start_rank(const LocalLaunch& launch, std::vector<std::string> arguments, std::vector<std::string> env) {
  auto argv = pointers(arguments), envp = pointers(env);  // built before fork: the child only calls exec
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("cannot start a rank: fork: ") + std::strerror(errno));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);  // the launcher died before prctl
    execve(launch.program.c_str(), argv.data(), envp.data());
    const char message[] = "cannot execute the rank's program\n";
    (void)!write(STDERR_FILENO, message, sizeof message - 1);
    _exit(127);
  }
  return pid;
}

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) {
    const int signal = WTERMSIG(status);
    return "was killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  }
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

// The ranks and what became of them.
struct Ranks {
  std::vector<pid_t> pids;
  std::vector<int> statuses;  // waitpid's status; valid once done
  std::vector<bool> done;

  bool running() const {
    for (bool d : done)
      if (!d) return true;
    return false;
  }
  void signal_running(int signal) const {
    for (size_t r = 0; r < pids.size(); ++r)
      if (!done[r]) kill(pids[r], signal);
  }
  // Collects the ranks that ended since the last call; returns their indices.
  std::vector<int> reap() {
    std::vector<int> ended;
    for (size_t r = 0; r < pids.size(); ++r) {
      if (done[r]) continue;
      int status = 0;
      if (waitpid(pids[r], &status, WNOHANG) == pids[r]) {
        done[r] = true;
        statuses[r] = status;
        ended.push_back(static_cast<int>(r));
      }
    }
    return ended;
  }
};

// A rank's end that is neither success nor the stop that was asked of it.
bool failed(int status, int forwarded_signal) {
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return false;
  if (forwarded_signal == 0) return true;
  if (WIFEXITED(status)) return WEXITSTATUS(status) != 128 + forwarded_signal;
  return WTERMSIG(status) != forwarded_signal;
}

}  // namespace

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return std::max(1u, std::thread::hardware_concurrency());
}

std::string check_process_count(const std::string& value) {
  if (value == "auto") return "";
  const bool digits = !value.empty() && value.size() <= 6 && value.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || std::stoi(value) < 1) return "must be a positive integer or auto, got '" + value + "'";
  return "";
}

int resolve_process_count(const std::string& value, int threads_per_rank) {
  const std::string problem = check_process_count(value);
  if (!problem.empty()) throw std::invalid_argument("--nproc " + problem);
  if (value != "auto") return std::stoi(value);
  return std::max(1, available_cores() / std::max(1, threads_per_rank));
}

std::vector<std::string> own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && !in.eof()) throw std::runtime_error("cannot read /proc/self/cmdline");
  std::vector<std::string> out;
  for (size_t begin = 0; begin < text.size();) {
    const size_t end = text.find('\0', begin);
    out.push_back(text.substr(begin, end - begin));
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  return out;
}

std::vector<std::string> without_flag(const std::vector<std::string>& arguments, const std::string& flag) {
  std::vector<std::string> out;
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (arguments[i] == flag) {
      ++i;  // and its value
    } else if (arguments[i].rfind(flag + "=", 0) != 0) {
      out.push_back(arguments[i]);
    }
  }
  return out;
}

int run_local_ranks(const LocalLaunch& launch) {
  const int port = distributed::free_loopback_port();
  Ranks ranks;
  try {
    for (int r = 0; r < launch.processes; ++r) {
      ranks.pids.push_back(start_rank(launch, launch.arguments, rank_environment(r, launch, port)));
      ranks.statuses.push_back(0);
      ranks.done.push_back(false);
    }
  } catch (...) {
    ranks.signal_running(SIGKILL);
    while (ranks.running()) ranks.reap();
    throw;
  }
  int forwarded = 0, first_failure = -1;
  auto deadline = std::chrono::steady_clock::time_point::max();
  while (ranks.running()) {
    for (int r : ranks.reap()) {
      if (first_failure >= 0 || !failed(ranks.statuses[r], forwarded)) continue;
      first_failure = r;
      std::cerr << launch.name << ": error: rank " << r << " " << describe_exit(ranks.statuses[r])
                << "; stopping the other ranks" << std::endl;
      ranks.signal_running(SIGTERM);
      deadline = std::chrono::steady_clock::now() + launch.grace;
    }
    const int signal = launch.stop ? launch.stop->load() : 0;
    if (signal > 0 && forwarded == 0 && first_failure < 0) {
      forwarded = signal;
      ranks.signal_running(signal);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      for (size_t r = 0; r < ranks.pids.size(); ++r)
        if (!ranks.done[r])
          std::cerr << launch.name << ": rank " << r << " did not stop within "
                    << launch.grace.count() / 1000.0 << " s: killed" << std::endl;
      ranks.signal_running(SIGKILL);
      deadline = std::chrono::steady_clock::time_point::max();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (first_failure >= 0) return 1;
  return forwarded > 0 && ranks.statuses != std::vector<int>(ranks.pids.size(), 0) ? 128 + forwarded : 0;
}

}  // namespace retriever
}  // namespace gradcache
