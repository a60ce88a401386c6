#include "files/staged_directory.h"

#include "files/leftovers.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <utility>

namespace gradcache {
namespace files {
namespace fs = std::filesystem;

StagedDirectory::StagedDirectory(std::string target, std::string marker, bool overwrite, std::string flag)
    : target_(std::move(target)), marker_(std::move(marker)), flag_(std::move(flag)), overwrite_(overwrite) {
  // "dir/" names dir: its partial sibling is "dir.partial-N", not "dir/.partial-N".
  while (target_.size() > 1 && target_.back() == '/') target_.pop_back();
  if (target_.empty()) throw std::runtime_error(flag_ + " must not be empty");
  check_target();
  partial_ = target_ + ".partial-" + std::to_string(::getpid());
  std::error_code error;
  fs::remove_all(partial_, error);  // left by a killed process that had this pid
  fs::create_directories(partial_, error);
  if (error) throw std::runtime_error("cannot create " + partial_ + " (for " + flag_ + "): " + error.message());
  // Locked before the others are looked at: of two commands starting at once, one at least
  // sees the other's lock (both may, and both stop; neither writes into the other's output).
  lock_ = DirectoryLock(partial_, flag_);
  try {
    remove_stale_partials();
  } catch (...) {
    fs::remove_all(partial_, error);
    throw;
  }
}

StagedDirectory::~StagedDirectory() {
  if (committed_) return;
  std::error_code ignored;
  fs::remove_all(partial_, ignored);
}

std::string StagedDirectory::path(const std::string& name) const { return (fs::path(partial_) / name).string(); }

// The other "<target>.partial-<pid>" directories: a live command's holds its lock, so this one
// stops rather than race it to the target; an unlocked one is a killed command's, which no
// destructor removed, and goes (whatever its pid names now: pids are reused).
void StagedDirectory::remove_stale_partials() const {
  const fs::path target(target_);
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string prefix = target.filename().string() + ".partial-";
  const std::string own = fs::path(partial_).filename().string();
  std::error_code error;
  for (fs::directory_iterator it(parent, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0 || name == own) continue;
    const std::string pid = name.substr(prefix.size());
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;  // not one of ours
    std::error_code ignored;
    if (!it->is_directory(ignored) || it->is_symlink(ignored)) {
      if (names_dead_process(name, prefix)) fs::remove(it->path(), ignored);
      continue;
    }
    std::string holder;
    DirectoryLock other;
    try {
      other = DirectoryLock::try_lock(it->path().string(), flag_, &holder);
    } catch (const std::runtime_error&) {
      if (!fs::exists(it->path(), ignored)) continue;  // its command just finished, or removed it
      throw;
    }
    if (!other.held())
      throw std::runtime_error(flag_ + " " + target_ + " is being written by " + holder +
                               ": wait for it to end, or stop it, or choose another " + flag_);
    fs::remove_all(it->path(), ignored);
  }
}

namespace {

// The names the stamp lists, one per line; empty when there is no stamp.
std::set<std::string> stamped_files(const fs::path& dir) {
  std::set<std::string> names;
  std::ifstream in(dir / StagedDirectory::kStamp);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) names.insert(line);
  }
  return names;
}

}  // namespace

void StagedDirectory::check_target() const {
  std::error_code error;
  const auto status = fs::symlink_status(target_, error);
  if (!fs::exists(status)) return;
  if (!overwrite_)
    throw std::runtime_error(flag_ + " " + target_ + " already exists; add --overwrite to replace it, or choose another " +
                             flag_);
  if (!fs::is_directory(status))
    throw std::runtime_error(flag_ + " " + target_ + " exists and is not a directory; not replacing it");
  if (fs::is_empty(target_, error)) return;
  if (!fs::exists(fs::path(target_) / marker_))
    throw std::runtime_error(flag_ + " " + target_ + " is a directory without " + marker_ +
                             ", i.e. not one this command wrote; not replacing it (choose another " + flag_ + ")");
  const auto listed = stamped_files(target_);
  if (listed.empty())
    throw std::runtime_error(flag_ + " " + target_ + " has no " + kStamp + " stamp, so this program cannot tell that " +
                             "it wrote it (an older version, or a copy, did); not replacing it: remove it yourself " +
                             "or choose another " + flag_);
  for (fs::directory_iterator it(target_, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name != kStamp && !listed.count(name))
      throw std::runtime_error(flag_ + " " + target_ + " holds " + name + ", which this program did not write there; " +
                               "not replacing it (move that file out, or choose another " + flag_ + ")");
  }
  if (error) throw std::runtime_error("cannot list " + target_ + " (" + flag_ + "): " + error.message());
}

void StagedDirectory::commit() {
  {
    std::ofstream stamp(fs::path(partial_) / kStamp);
    std::error_code error;
    for (fs::directory_iterator it(partial_, error), end; !error && it != end; it.increment(error)) {
      if (it->path().filename() != kStamp) stamp << it->path().filename().string() << "\n";
    }
    stamp.flush();
    if (error || !stamp)
      throw std::runtime_error("cannot write " + (fs::path(partial_) / kStamp).string() + " (for " + flag_ + ")");
  }
  check_target();  // something may have appeared there meanwhile
  const std::string old = target_ + ".old-" + std::to_string(::getpid());
  const bool replacing = fs::exists(fs::symlink_status(target_));
  if (replacing && std::rename(target_.c_str(), old.c_str()) != 0)
    throw std::runtime_error("cannot move the old " + target_ + " aside: " + std::strerror(errno));
  if (std::rename(partial_.c_str(), target_.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    if (replacing) std::rename(old.c_str(), target_.c_str());
    throw std::runtime_error("cannot rename " + partial_ + " to " + target_ + ": " + reason);
  }
  committed_ = true;
  std::error_code error;
  if (replacing && fs::remove_all(old, error) == static_cast<std::uintmax_t>(-1)) {
    throw std::runtime_error("wrote " + target_ + ", but cannot remove the one it replaced, moved aside to " + old +
                             ": " + error.message() + "; remove it yourself");
  }
}

}  // namespace files
}  // namespace gradcache
