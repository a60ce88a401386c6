#include "retriever/launch/gnuplot.h"

#include "retriever/launch/stop_signal.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

extern char** environ;

namespace gradcache {
namespace retriever {
namespace {

// Where gnuplot's messages go: the caller's file, or a temporary one removed afterwards.
struct TemporaryLog {
  std::string path;
  bool owned = false;
  explicit TemporaryLog(const std::string& given) : path(given) {
    if (!path.empty()) return;
    std::string pattern = "/tmp/gradcache-gnuplot-XXXXXX";
    const int fd = mkstemp(pattern.data());
    if (fd < 0) throw std::runtime_error(std::string("cannot create a file for gnuplot's messages: ") + std::strerror(errno));
    close(fd);
    path = pattern;
    owned = true;
  }
  ~TemporaryLog() {
    if (owned) std::remove(path.c_str());
  }
  TemporaryLog(const TemporaryLog&) = delete;
  TemporaryLog& operator=(const TemporaryLog&) = delete;
};

}  // namespace

std::string gnuplot_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string png_terminal(int width, int height, const std::string& options) {
  const std::string size = "size " + std::to_string(width) + "," + std::to_string(height);
  const std::string tail = options.empty() ? "" : " " + options;
  return "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { set terminal pngcairo " + size + " font 'sans,10'" + tail +
         " } else { set terminal png " + size + tail + " }\n";
}

// Runs gnuplot on `script`; throws with its messages (from `log`) when it fails.
void run_gnuplot(const std::string& script, const std::string& log_path, const std::atomic<int>* stop) {
  const TemporaryLog temporary(log_path);
  const std::string& log = temporary.path;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::string program = "gnuplot";
  char* argv[] = {program.data(), const_cast<char*>(script.c_str()), nullptr};
  pid_t pid = 0;
  const int failed = posix_spawnp(&pid, "gnuplot", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (failed == ENOENT) throw std::runtime_error("gnuplot is not installed (Debian: apt-get install gnuplot-nox)");
  if (failed) throw std::runtime_error(std::string("cannot run gnuplot: ") + std::strerror(failed));
  int status = 0;
  // With a stop flag, gnuplot is polled every 20 ms rather than waited for, so that a signal
  // (which the program's handler turns into the flag) ends it at once.
  for (;;) {
    const pid_t ended = waitpid(pid, &status, stop ? WNOHANG : 0);
    if (ended == pid || (ended < 0 && errno != EINTR)) break;
    if (stop && stop->load() != 0) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      throw StoppedBySignal(stop->load());
    }
    if (ended == 0) usleep(20000);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  std::ifstream in(log);
  std::string messages((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) messages = "gnuplot is not installed";
  throw std::runtime_error("gnuplot failed: " + messages.substr(0, 400));
}

}  // namespace retriever
}  // namespace gradcache
