#include "detail/staged_directory.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <utility>

namespace gradcache {
namespace detail {
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
}

StagedDirectory::~StagedDirectory() {
  if (committed_) return;
  std::error_code ignored;
  fs::remove_all(partial_, ignored);
}

std::string StagedDirectory::path(const std::string& name) const { return (fs::path(partial_) / name).string(); }

void StagedDirectory::check_target() const {
  std::error_code error;
  const auto status = fs::symlink_status(target_, error);
  if (!fs::exists(status)) return;
  if (!overwrite_)
    throw std::runtime_error(flag_ + " " + target_ + " already exists; add --overwrite to replace it, or choose another " +
                             flag_);
  if (!fs::is_directory(status))
    throw std::runtime_error(flag_ + " " + target_ + " exists and is not a directory; not replacing it");
  if (!fs::exists(fs::path(target_) / marker_) && !fs::is_empty(target_, error))
    throw std::runtime_error(flag_ + " " + target_ + " is a directory without " + marker_ +
                             ", i.e. not one this command wrote; not replacing it (choose another " + flag_ + ")");
}

void StagedDirectory::commit() {
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
  std::error_code ignored;
  if (replacing) fs::remove_all(old, ignored);
}

}  // namespace detail
}  // namespace gradcache
