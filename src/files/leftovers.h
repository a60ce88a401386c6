// What a killed command leaves: files and directories named after its process id, which no
// destructor removed: an atomic write's "NAME.tmp-PID", scratch space's "gradcache-PID-...", a
// replaced run's ".replaced-PID". The next command that writes there removes them; a live
// process's are a concurrent command's. (A staged directory's "OUT.partial-PID" is told by its
// lock instead, since pids are reused: files/staged_directory.h.)
#pragma once

#include <string>

namespace gradcache::files {

/// Whether `name` is "<prefix><pid>" or "<prefix><pid>-<anything>" for a process that no longer
/// exists.
bool names_dead_process(const std::string& name, const std::string& prefix);

/// What remove_dead_processes_entries may remove: a caller that writes only files under its
/// names leaves a directory so named alone (it is somebody else's).
enum class LeftoverKind { files_only, files_and_directories };

/// Removes the entries of `dir` that names_dead_process(name, prefix) calls a dead process's
/// (directories recursively, when `kind` allows them). Errors are ignored: a leftover that
/// cannot go is only space.
void remove_dead_processes_entries(const std::string& dir, const std::string& prefix,
                                   LeftoverKind kind = LeftoverKind::files_and_directories);

}  // namespace gradcache::files
