#include "files/leftovers.h"

#include <signal.h>

#include <cerrno>
#include <filesystem>

namespace gradcache::files {
namespace fs = std::filesystem;

bool names_dead_process(const std::string& name, const std::string& prefix) {
  if (name.rfind(prefix, 0) != 0) return false;
  const std::string pid = name.substr(prefix.size(), name.find('-', prefix.size()) - prefix.size());
  if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos || pid.size() > 9) return false;
  return ::kill(static_cast<pid_t>(std::stol(pid)), 0) != 0 && errno == ESRCH;
}

void remove_dead_processes_entries(const std::string& dir, const std::string& prefix, LeftoverKind kind) {
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    if (!names_dead_process(it->path().filename().string(), prefix)) continue;
    std::error_code ignored;
    if (kind == LeftoverKind::files_only && it->is_directory(ignored)) continue;
    fs::remove_all(it->path(), ignored);
  }
}

}  // namespace gradcache::files
