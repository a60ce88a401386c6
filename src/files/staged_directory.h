// Output directories that appear whole or not at all: built under a temporary sibling name and
// renamed into place at the end (`gradcache encode` and `gradcache export`, and
// gradcache::hf::SentenceTransformer::save).
#pragma once

#include "files/directory_lock.h"

#include <string>

namespace gradcache {
namespace files {

/// A directory written under "<target>.partial-<pid>" and renamed to `target` by commit(), so
/// that an interrupted or failed command leaves no directory that looks finished: until
/// commit() the target is untouched (an old one is replaced only then), and the destructor
/// removes the partial directory of a command that did not finish. commit() also writes a
/// stamp, ".gradcache-output", listing the files the directory was committed with: an
/// --overwrite replaces only a directory whose every file that stamp lists, i.e. one this
/// program provably wrote and nobody added to since.
class StagedDirectory {
 public:
  /// Checks `target` before any work is done and creates and locks the partial directory (and
  /// missing parents), then removes the other "<target>.partial-<pid>" directories that no
  /// process holds (a killed command's). Throws std::runtime_error "FLAG TARGET is being
  /// written by process N (its command)" when another command writes the same target now. Throws std::runtime_error naming `flag` when `target` exists and
  /// `overwrite` is false, and also with `overwrite` unless it is empty or holds `marker`
  /// (e.g. "manifest.json") and the stamp, and nothing the stamp does not list: --overwrite
  /// never removes a directory of other files, or one a user put a file into.
  StagedDirectory(std::string target, std::string marker, bool overwrite, std::string flag = "--output");
  ~StagedDirectory();
  StagedDirectory(const StagedDirectory&) = delete;
  StagedDirectory& operator=(const StagedDirectory&) = delete;

  /// The partial directory's path to `name`: where the files are written before commit().
  std::string path(const std::string& name) const;
  const std::string& target() const { return target_; }
  /// The partial directory itself.
  const std::string& partial() const { return partial_; }
  /// Writes the stamp and renames the partial directory to the target, replacing an old one
  /// (checked again). Throws when the old one, once moved aside to "<target>.old-<pid>",
  /// cannot be removed: the new target is in place, and the message names the leftover.
  void commit();

  /// The stamp's file name.
  static constexpr const char* kStamp = ".gradcache-output";

 private:
  void check_target() const;
  void remove_stale_partials() const;

  std::string target_, marker_, flag_, partial_;
  DirectoryLock lock_;  // on partial_, until the object goes: one writer per target
  bool overwrite_;
  bool committed_ = false;
};

}  // namespace files
}  // namespace gradcache
