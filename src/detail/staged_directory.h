// Output directories that appear whole or not at all: built under a temporary sibling name and
// renamed into place at the end (`gradcache encode` and `gradcache export`, and
// gradcache::hf::SentenceTransformer::save).
#pragma once

#include <string>

namespace gradcache {
namespace detail {

/// A directory written under "<target>.partial-<pid>" and renamed to `target` by commit(), so
/// that an interrupted or failed command leaves no directory that looks finished: until
/// commit() the target is untouched (an old one is replaced only then), and the destructor
/// removes the partial directory of a command that did not finish.
class StagedDirectory {
 public:
  /// Checks `target` before any work is done and creates the partial directory (and missing
  /// parents). Throws std::runtime_error naming `flag` when `target` exists and `overwrite` is
  /// false, and also with `overwrite` when it is not a directory of this kind, i.e. holds
  /// neither `marker` (e.g. "manifest.json") nor nothing: --overwrite never removes a
  /// directory of other files.
  StagedDirectory(std::string target, std::string marker, bool overwrite, std::string flag = "--output");
  ~StagedDirectory();
  StagedDirectory(const StagedDirectory&) = delete;
  StagedDirectory& operator=(const StagedDirectory&) = delete;

  /// The partial directory's path to `name`: where the files are written before commit().
  std::string path(const std::string& name) const;
  const std::string& target() const { return target_; }
  /// The partial directory itself.
  const std::string& partial() const { return partial_; }
  /// Renames the partial directory to the target, replacing an old one (checked again).
  void commit();

 private:
  void check_target() const;

  std::string target_, marker_, flag_, partial_;
  bool overwrite_;
  bool committed_ = false;
};

}  // namespace detail
}  // namespace gradcache
