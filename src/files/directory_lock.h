#pragma once
// One writer per directory: an exclusive flock(2) on the directory itself, held while the
// object lives. No lock file is left behind (a SIGKILLed holder's lock goes with its
// descriptor), and the directory's listing is unchanged. Advisory: it keeps gradcache's own
// commands apart (two `train` on one --output, a `train --resume` of a run still training,
// two `encode` or `export` into one output: StagedDirectory locks its partial directory).

#include <string>

namespace gradcache::files {

class DirectoryLock {
 public:
  DirectoryLock() = default;
  /// Locks `dir` (which must exist) without waiting. Throws std::runtime_error when another
  /// process holds it: "<what> <dir> is in use by process N (<its command line>)"; `what` names
  /// the directory's role ("run", "output").
  DirectoryLock(const std::string& dir, const std::string& what);
  ~DirectoryLock();
  DirectoryLock(DirectoryLock&& other) noexcept;
  DirectoryLock& operator=(DirectoryLock&& other) noexcept;
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

  /// Locks `dir` when no other process holds it; otherwise returns a lock that is not held
  /// and sets `*holder` to who holds it ("process N (<its command line>)", or "another
  /// process" where /proc/locks does not say). Throws std::runtime_error when `dir` cannot be
  /// opened as a directory.
  static DirectoryLock try_lock(const std::string& dir, const std::string& what, std::string* holder);

  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace gradcache::files
