#include "files/atomic_file.h"

#include "files/leftovers.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gradcache {
namespace files {
namespace {

std::runtime_error io_error(const std::string& what, const std::string& path) {
  return std::runtime_error(what + " " + path + ": " + std::strerror(errno));
}

void fsync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) throw io_error("cannot open", path);
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0 && !directory) throw io_error("cannot flush", path);
}

}  // namespace

bool write_all(int fd, const char* data, size_t size) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) {  // no progress and no error: report it as one rather than loop
      errno = EIO;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

void commit_file(const std::string& tmp_path, const std::string& path) {
  try {
    fsync_path(tmp_path, false);
  } catch (...) {  // e.g. the disk filled up: the earlier file stays, the temporary one goes
    std::remove(tmp_path.c_str());
    throw;
  }
  if (std::rename(tmp_path.c_str(), path.c_str()) != 0) {
    const auto error = io_error("cannot rename " + tmp_path + " to", path);
    std::remove(tmp_path.c_str());
    throw error;
  }
  auto dir = std::filesystem::path(path).parent_path();
  fsync_path(dir.empty() ? "." : dir.string(), true);
}

std::string temporary_path(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const std::string prefix = target.filename().string() + ".tmp-";
  // Files only: this program writes no directory under such a name, so a directory there is
  // somebody else's.
  remove_dead_processes_entries(target.has_parent_path() ? target.parent_path().string() : ".", prefix,
                                LeftoverKind::files_only);
  return path + ".tmp-" + std::to_string(::getpid());
}

std::string write_temporary_file(const std::string& path, const std::string& bytes) {
  const std::string tmp = temporary_path(path);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw io_error("cannot write", tmp);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      const auto error = io_error("cannot write (is the disk full?)", tmp);
      std::remove(tmp.c_str());
      throw error;
    }
  }
  try {
    fsync_path(tmp, false);
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  return tmp;
}

void write_file_atomic_streamed(const std::string& path,
                                const std::function<void(const std::function<void(const void*, size_t)>&)>& produce) {
  const std::string tmp = temporary_path(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw io_error("cannot write", tmp);
  int failure = 0;  // the errno of the first failed write
  try {
    produce([&](const void* data, size_t size) {
      if (failure == 0 && !write_all(fd, static_cast<const char*>(data), size)) failure = errno;
    });
  } catch (...) {
    ::close(fd);
    std::remove(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0 && failure == 0) failure = errno;
  if (failure != 0) {
    errno = failure;
    const auto error = io_error("cannot write (is the disk full?)", tmp);
    std::remove(tmp.c_str());
    throw error;
  }
  commit_file(tmp, path);
}

void write_file_atomic(const std::string& path, const std::string& bytes) {
  commit_file(write_temporary_file(path, bytes), path);
}

std::string regular_file_problem(const std::string& path) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0 || S_ISREG(status.st_mode)) return "";
  if (S_ISDIR(status.st_mode)) return "it is a directory; give a file";
  const std::string kind = S_ISFIFO(status.st_mode)                              ? "a pipe (FIFO)"
                           : S_ISCHR(status.st_mode) || S_ISBLK(status.st_mode) ? "a device"
                           : S_ISSOCK(status.st_mode)                           ? "a socket"
                                                                                : "not a regular file";
  return "it is " + kind + ", not a regular file (what a pipe or a device gives can be read only once, and "
         "opening a pipe waits for a writer); write it to a file first";
}

std::string read_file(const std::string& path) {
  // A directory opens as a stream that reads nothing, a FIFO's open blocks: say what it is.
  if (const auto problem = regular_file_problem(path); !problem.empty())
    throw std::runtime_error("cannot read " + path + ": " + problem);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw io_error("cannot read", path);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace files
}  // namespace gradcache
