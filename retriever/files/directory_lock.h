#pragma once
// One writer per directory: an exclusive flock(2) on the directory itself, held while the
// object lives. No lock file is left behind (a SIGKILLed holder's lock goes with its
// descriptor), and the directory's listing is unchanged. Advisory: it keeps gradcache's own
// commands apart (two `train` on one --output, a `train --resume` of a run still training).

#include <string>

namespace gradcache::retriever {

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

  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace gradcache::retriever
