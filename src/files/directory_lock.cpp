#include "files/directory_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace gradcache::files {
namespace {

// The process holding a flock on the inode `inode`, from /proc/locks ("1: FLOCK ADVISORY WRITE
// PID MAJ:MIN:INODE 0 EOF"); 0 when not found (another kernel, or the holder just let go).
long lock_holder(ino_t inode) {
  std::ifstream locks("/proc/locks");
  std::string line;
  while (std::getline(locks, line)) {
    std::istringstream fields(line);
    std::string number, kind, mode, access, pid, id;
    if (!(fields >> number >> kind) || kind != "FLOCK") continue;
    if (!(fields >> mode >> access >> pid >> id)) continue;
    const auto colon = id.rfind(':');
    if (colon != std::string::npos && id.substr(colon + 1) == std::to_string(inode)) return std::atol(pid.c_str());
  }
  return 0;
}

std::string command_line(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string command((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::replace(command.begin(), command.end(), '\0', ' ');
  while (!command.empty() && command.back() == ' ') command.pop_back();
  if (command.size() > 200) command = command.substr(0, 200) + "...";
  return command;
}

}  // namespace

DirectoryLock DirectoryLock::try_lock(const std::string& dir, const std::string& what, std::string* holder) {
  DirectoryLock lock;
  lock.fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lock.fd_ < 0) throw std::runtime_error("cannot open the " + what + " directory " + dir + ": " + std::strerror(errno));
  int rc;
  do rc = ::flock(lock.fd_, LOCK_EX | LOCK_NB);
  while (rc != 0 && errno == EINTR);
  if (rc == 0) return lock;
  const int error = errno;
  struct stat status {};
  const long pid = error == EWOULDBLOCK && ::fstat(lock.fd_, &status) == 0 ? lock_holder(status.st_ino) : 0;
  ::close(lock.fd_);
  lock.fd_ = -1;
  if (error != EWOULDBLOCK) {
    throw std::runtime_error("cannot lock the " + what + " directory " + dir + ": " + std::strerror(error));
  }
  std::string by = "another process";
  if (pid > 0) {
    by = "process " + std::to_string(pid);
    const auto command = command_line(pid);
    if (!command.empty()) by += " (" + command + ")";
  }
  if (holder) *holder = by;
  return lock;
}

DirectoryLock::DirectoryLock(const std::string& dir, const std::string& what) {
  std::string holder;
  *this = try_lock(dir, what, &holder);
  if (!held()) {
    throw std::runtime_error(what + " " + dir + " is in use by " + holder +
                             ": wait for it to end, or stop it, or choose another directory");
  }
}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the lock
}

DirectoryLock::DirectoryLock(DirectoryLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

DirectoryLock& DirectoryLock::operator=(DirectoryLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

}  // namespace gradcache::files
