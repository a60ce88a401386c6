#include "retriever/launch/stop_signal.h"

#include "files/atomic_file.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <stdexcept>

namespace gradcache {
namespace retriever {

StoppedBySignal::StoppedBySignal(int signal)
    : std::runtime_error("stopped by signal " + std::to_string(signal)), signal_(signal) {}

std::string signal_name(int signal) {
  return signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "signal " + std::to_string(signal);
}

void stop_if_signalled(const std::atomic<int>* stop) {
  if (stop && stop->load() != 0) throw StoppedBySignal(stop->load());
}

namespace {

// The child's answer on the pipe: one byte ('r' result, 'e' exception), then its text.
[[noreturn]] void run_child(int fd, const std::function<std::string()>& work) {
  std::string answer;
  try {
    answer = "r" + work();
  } catch (const std::exception& e) {
    answer = std::string("e") + e.what();
  } catch (...) {
    answer = "eunknown exception";
  }
  // A failed write means the parent is gone or stopped listening: nobody to tell.
  files::write_all(fd, answer.data(), answer.size());
  ::_exit(0);  // no destructors, atexit handlers or buffered output of the parent's copy
}

std::string how_it_ended(int status) {
  if (WIFSIGNALED(status)) return std::string("was killed by signal ") + std::to_string(WTERMSIG(status));
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

}  // namespace

std::string run_stoppable(const std::function<std::string()>& work, const std::atomic<int>* stop,
                          const std::string& what) {
  if (!stop) return work();
  stop_if_signalled(stop);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(what + ": cannot create a pipe: " + std::strerror(errno));
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) {
    const int error = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(what + ": cannot start a process: " + std::strerror(error));
  }
  if (child == 0) {
    ::close(fds[0]);
    // A parent killed outright (SIGKILL) takes its child along, rather than leave it working
    // for nobody; checked once more in case the parent died before the request.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    run_child(fds[1], work);
  }
  ::close(fds[1]);
  std::string answer;
  int stopped_by = 0;
  char buffer[1 << 16];
  for (;;) {
    if (stop->load() != 0) {
      stopped_by = stop->load();
      ::kill(child, SIGKILL);
      break;
    }
    pollfd readable{fds[0], POLLIN, 0};
    const int ready = ::poll(&readable, 1, 50);
    if (ready == 0 || (ready < 0 && errno == EINTR)) continue;
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the child is done (or the pipe failed: its status says)
    answer.append(buffer, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (stopped_by != 0) throw StoppedBySignal(stopped_by);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || answer.empty()) {
    throw std::runtime_error(what + ": the process doing it " + how_it_ended(status) +
                             (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL ? " (out of memory?)" : ""));
  }
  if (answer[0] == 'e') throw std::runtime_error(answer.substr(1));
  return answer.substr(1);
}

}  // namespace retriever
}  // namespace gradcache
