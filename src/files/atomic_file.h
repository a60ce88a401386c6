// Writing files so that a crash or a full disk never leaves a torn or half-written one.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace gradcache {
namespace files {

/// "<path>.tmp-<pid>": where this process writes `path` before renaming it into place. The name
/// is this process's own, so two processes writing one file never write into each other's
/// temporary file (each rename puts a whole file in place; the last one stays). Asking for it
/// first removes the temporary files beside `path` of processes that no longer exist (a
/// SIGKILLed writer's), as staged directories do with their partial siblings.
std::string temporary_path(const std::string& path);

/// Writes `bytes` to temporary_path(path), flushes it to disk, then renames it over `path`: readers
/// see the old file or the new one, never a mix. Throws std::runtime_error naming the path.
void write_file_atomic(const std::string& path, const std::string& bytes);

/// write_file_atomic for bytes made in pieces: `produce(write)` calls write(data, size) for each,
/// which goes to temporary_path(path) at once, so the whole never sits in memory (a checkpoint of a 0.6B
/// model and its AdamW state is 7 GB). A failed write is remembered, later ones are skipped, and
/// the error is thrown (naming the path, the temporary file removed) once `produce` returns: the
/// producer, LibTorch's archive writer, never sees an exception from `write`.
void write_file_atomic_streamed(const std::string& path,
                                const std::function<void(const std::function<void(const void*, size_t)>&)>& produce);

/// Writes `bytes` to temporary_path(path) and flushes it to disk, returning that path; on failure
/// removes it and throws std::runtime_error naming it. For files that must all be written
/// before any is committed (commit_file); write_file_atomic does both for one file.
std::string write_temporary_file(const std::string& path, const std::string& bytes);

/// Flushes `tmp_path` to disk and renames it over `path` (for files written by other code).
void commit_file(const std::string& tmp_path, const std::string& path);

/// Writes all `size` bytes to the descriptor `fd` (a pipe, a memory file), retrying short
/// writes and EINTR. Returns false, with errno set, when a write fails.
bool write_all(int fd, const char* data, size_t size);

/// The whole file; throws std::runtime_error naming the path if it cannot be read (or is not a
/// regular file: regular_file_problem).
std::string read_file(const std::string& path);

/// Why `path` cannot be read as a file, or "" when it can (or does not exist: the caller's
/// open says so in its own words): "it is a directory", "it is a pipe (FIFO)", a device or a
/// socket. Found by stat, without opening: a FIFO's open waits for a writer forever (and deaf
/// to SIGTERM: the signal only interrupts it), and what it gives can be read only once. Every
/// reader of a user's file asks this before opening it.
std::string regular_file_problem(const std::string& path);

}  // namespace files
}  // namespace gradcache
