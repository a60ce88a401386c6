// Operating-system pieces: thread settings (LibTorch and OpenBLAS), child processes,
// resident set size and load.
#include "system.h"

#include "retriever/launch/threads.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace gcbench {

// ---- threads ----------------------------------------------------------------------------

// OpenBLAS is found at run time by the retriever's threads.h (with another BLAS it is absent).
bool openblas_found() { return gradcache::retriever::blas_threads() > 0; }

ThreadConfig current_threads() {
  ThreadConfig t;
  t.intra_op = at::get_num_threads();
  t.openblas = openblas_found() ? gradcache::retriever::blas_threads() : -1;
  return t;
}

void set_threads(int64_t intra_op, int64_t openblas) {
  if (intra_op > 0) at::set_num_threads(static_cast<int>(intra_op));
  if (openblas > 0) gradcache::retriever::set_blas_threads(static_cast<int>(openblas));
}

// ---- child processes --------------------------------------------------------------------

std::string run_child(const std::string& program, const std::vector<std::string>& args) {
  // posix_spawn = fork + exec: the child starts clean (no copy of this process's OpenMP or
  // OpenBLAS thread pools, whose threads do not survive a bare fork).
  int pipe_fds[2];
  // Close-on-exec, so that children started at the same time (the distributed scenario) do
  // not inherit each other's pipe and keep it open.
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[1]);
  std::vector<std::string> argv_s{program};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  if (rc != 0) {
    close(pipe_fds[0]);
    throw std::runtime_error("cannot start " + program + ": " + std::strerror(rc));
  }
  std::string output;
  char buf[4096];
  for (;;) {
    const ssize_t got = read(pipe_fds[0], buf, sizeof buf);
    if (got > 0) {
      output.append(buf, static_cast<size_t>(got));
    } else if (got == 0 || errno != EINTR) {
      break;
    }
  }
  close(pipe_fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string cmd;
    for (const auto& a : argv_s) cmd += a + " ";
    throw std::runtime_error("child process failed (" +
                             (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                                : "signal " + std::to_string(WTERMSIG(status))) +
                             "): " + cmd);
  }
  return output;
}

double load_average() {
  std::ifstream in("/proc/loadavg");
  double one = -1;
  in >> one;
  return one;
}

}  // namespace gcbench
