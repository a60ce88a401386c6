// Operating-system pieces: thread settings (LibTorch and OpenBLAS), child processes,
// resident set size, and the gnuplot figure.
#include "bench.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace gcbench {

// ---- threads ----------------------------------------------------------------------------

namespace {

// OpenBLAS is reached through libblas.so.3 (Debian's alternatives), so its functions are
// looked up in the process rather than linked: with another BLAS they are simply absent.
using GetThreads = int (*)();
using SetThreads = void (*)(int);

GetThreads openblas_get() { return reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads")); }
SetThreads openblas_set() { return reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads")); }

}  // namespace

bool openblas_found() { return openblas_get() != nullptr && openblas_set() != nullptr; }

ThreadConfig current_threads() {
  ThreadConfig t;
  t.intra_op = at::get_num_threads();
  t.openblas = openblas_get() ? openblas_get()() : -1;
  return t;
}

void set_threads(int64_t intra_op, int64_t openblas) {
  if (intra_op > 0) at::set_num_threads(static_cast<int>(intra_op));
  if (openblas > 0 && openblas_set()) openblas_set()(static_cast<int>(openblas));
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

namespace {

int64_t proc_status_kib(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stoll(line.substr(key.size() + 1));  // "VmHWM:   1234 kB"
  }
  return -1;
}

}  // namespace

int64_t peak_rss_bytes() { return proc_status_kib("VmHWM") * 1024; }
int64_t current_rss_bytes() { return proc_status_kib("VmRSS") * 1024; }

double load_average() {
  std::ifstream in("/proc/loadavg");
  double one = -1;
  in >> one;
  return one;
}

// ---- the figure -------------------------------------------------------------------------

namespace {

std::string strip_png(const std::string& png) {
  return png.size() > 4 && png.substr(png.size() - 4) == ".png" ? png.substr(0, png.size() - 4) : png;
}

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// Whether gnuplot knows the pngcairo terminal (anti-aliased); png (libgd) otherwise.
std::string png_terminal() {
  FILE* p = popen("gnuplot -e 'set terminal' 2>&1", "r");
  if (!p) return "png";
  std::string text;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) text += buf;
  pclose(p);
  return text.find("pngcairo") != std::string::npos ? "pngcairo" : "png";
}

}  // namespace

std::vector<std::string> write_plot(const std::string& png, const Json& scenarios) {
  const std::string stem = strip_png(png);
  std::vector<std::string> files;
  std::ostringstream script;
  const std::string terminal = png_terminal();
  const bool has_memory = scenarios.contains("memory");
  const bool has_time = scenarios.contains("retain") || scenarios.contains("overhead");
  if (!has_memory && !has_time) throw std::runtime_error("--plot: the scenarios run have nothing to plot "
                                                         "(memory, overhead or retain)");
  const int panels = (has_memory ? 1 : 0) + (has_time ? 1 : 0);
  script << "# gradcache-bench figure; run: gnuplot " << stem << ".gp\n"
         << "set terminal " << terminal << " size " << (panels == 2 ? 1400 : 760) << ",560"
         << (terminal == "pngcairo" ? " font 'sans,10'" : "") << "\n"
         << "set output " << quoted(png) << "\n"
         << "set termoption noenhanced\n"  // underscores as they are
         << "set grid\nset key top left\n";
  if (panels == 2) script << "set multiplot layout 1,2\n";

  if (has_memory) {
    // One block per mode (gnuplot "index"): batch, peak MiB, RSS MiB.
    const Json& m = scenarios["memory"];
    const std::string dat = stem + ".memory.dat";
    std::ofstream out(dat);
    std::vector<std::string> modes;
    for (const auto& p : m["points"]) {
      const auto mode = p["mode"].get<std::string>();
      if (std::find(modes.begin(), modes.end(), mode) == modes.end()) modes.push_back(mode);
    }
    for (const auto& mode : modes) {
      out << "# " << mode << ": pairs peak_tensor_MiB peak_rss_MiB\n";
      for (const auto& p : m["points"]) {
        if (p["mode"] != mode) continue;
        out << p["batch"].get<int64_t>() << " " << to_mib(p["peak_bytes"].get<int64_t>()) << " "
            << (p.contains("rss_peak_bytes") ? std::to_string(to_mib(p["rss_peak_bytes"].get<int64_t>())) : "NaN")
            << "\n";
      }
      out << "\n\n";
    }
    // For reference: the cache's own size (representations + gradients) and the peak of the
    // loss step alone (the N x M score matrix), once per batch.
    out << "# pairs cache_MiB loss_step_MiB\n";
    std::vector<int64_t> seen;
    for (const auto& p : m["points"]) {
      const auto n = p["batch"].get<int64_t>();
      if (std::find(seen.begin(), seen.end(), n) != seen.end()) continue;
      seen.push_back(n);
      out << n << " " << to_mib(p["cache_bytes"].get<int64_t>()) << " "
          << to_mib(p["loss_step_peak_bytes"].get<int64_t>()) << "\n";
    }
    out << "\n\n";
    files.push_back(dat);
    script << "set title 'Peak tensor memory of one step (chunk " << m["chunk"].get<int64_t>() << ")'\n"
           << "set logscale xy 2\nset format y '%g'\n"
           << "set xlabel 'contrastive batch (pairs)'\nset ylabel 'MiB above the step start'\n"
           << "plot ";
    for (size_t i = 0; i < modes.size(); ++i) {
      script << quoted(dat) << " index " << i << " using 1:2 with linespoints lw 2 pt 7 title " << quoted(modes[i])
             << ", ";
    }
    script << quoted(dat) << " index " << modes.size()
           << " using 1:2 with lines dt 2 lc rgb 'gray40' title 'cache itself: 2(N+M)d floats', " << quoted(dat)
           << " index " << modes.size() << " using 1:3 with lines dt 3 lw 2 lc rgb 'gray20' title 'loss step alone (N x M)'\n"
           << "unset logscale\nunset title\n";
  }

  if (has_time) {
    // Trade-off points: peak MiB, time over accumulate, label. Retain curve in its own block.
    const std::string dat = stem + ".tradeoff.dat";
    std::ofstream out(dat);
    std::string title;
    if (scenarios.contains("retain")) {
      const Json& r = scenarios["retain"];
      title = "Time vs memory (" + std::to_string(r["batch"].get<int64_t>()) + " pairs, chunks of " +
              std::to_string(r["chunk"].get<int64_t>()) + ")";
      out << "# retain_chunks curve: peak_MiB over_accumulate(medians) label over_accumulate(best of reps)\n";
      for (const auto& row : r["rows"]) {
        if (!row.contains("retain_chunks") || row.contains("memory_budget_bytes")) continue;
        out << to_mib(row["peak_bytes"].get<int64_t>()) << " " << row["over_accumulate"].get<double>() << " \"r="
            << row["retain_chunks"].get<int64_t>() << "\" " << row["over_accumulate_min"].get<double>() << "\n";
      }
      out << "\n\n# other steps\n";
      for (const auto& row : r["rows"]) {
        if (row.contains("retain_chunks") && !row.contains("memory_budget_bytes")) continue;
        std::string label = row["step"].get<std::string>();
        if (row.contains("memory_budget_bytes")) label = "budget";
        out << to_mib(row["peak_bytes"].get<int64_t>()) << " " << row["over_accumulate"].get<double>() << " \""
            << label << "\"\n";
      }
    } else {
      // Overhead alone: times only (no memory), so plot ratio per step as points at x = index.
      const Json& o = scenarios["overhead"];
      title = "Step time over accumulate (" + std::to_string(o["batch"].get<int64_t>()) + " pairs)";
      out << "# (no retain curve)\n0 NaN \"\"\n\n\n# steps: index over_accumulate label\n";
      int i = 1;
      for (const auto& row : o["rows"]) {
        out << i++ << " " << row["over_accumulate"].get<double>() << " \"" << row["step"].get<std::string>() << "\"\n";
      }
    }
    out << "\n\n";
    files.push_back(dat);
    const bool retain = scenarios.contains("retain");
    script << "set title " << quoted(title) << "\n"
           << "set xlabel " << quoted(retain ? "peak tensor memory of the step (MiB)" : "step") << "\n"
           << "set ylabel 'step time / accumulate'\nset offsets graph 0.08, graph 0.15, graph 0.1, graph 0.1\n"
           << "set key top right\n"
           << "plot " << quoted(dat) << " index 0 using 1:2 with linespoints lw 2 pt 7 title 'cache, retain_chunks r (medians)', "
           << (retain ? quoted(dat) + " index 0 using 1:4 with linespoints lw 1 dt 2 pt 6 lc rgb 'gray50' title 'the same, best of the repetitions', " : std::string())
           << quoted(dat) << " index 0 using 1:2:3 with labels offset char 1.2,-0.8 notitle, " << quoted(dat)
           << " index 1 using 1:2 with points pt 5 ps 1.5 title 'other steps', " << quoted(dat)
           << " index 1 using 1:2:3 with labels offset char 0,1.2 notitle\n";
  }
  if (panels == 2) script << "unset multiplot\n";
  const std::string gp = stem + ".gp";
  {
    std::ofstream out(gp);
    out << script.str();
  }
  files.push_back(gp);
  const std::string cmd = "gnuplot " + quoted(gp) + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("--plot: cannot run gnuplot");
  std::string messages;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) messages += buf;
  if (pclose(p) != 0) throw std::runtime_error("--plot: gnuplot failed: " + messages);
  files.insert(files.begin(), png);
  return files;
}

}  // namespace gcbench
