#pragma once
// Scratch space in the temporary directory ($TMPDIR, else /tmp) that a SIGKILLed command does
// not leave behind for good. Every entry is named "gradcache-<pid>-<what>"; making one first
// removes the entries of processes that no longer exist (a killed run's tokenizer, BM25 index
// or gnuplot directory, which no destructor removed). A live process's are left alone.

#include <string>

namespace gradcache::retriever {

/// "<tmp>/gradcache-<pid>-<name>": a file this process may write, and must remove.
std::string scratch_file_path(const std::string& name);

/// A new, empty directory "<tmp>/gradcache-<pid>-<tag>-XXXXXX" (mkdtemp). Throws
/// std::runtime_error naming the temporary directory when it cannot be made.
std::string make_scratch_directory(const std::string& tag);

}  // namespace gradcache::retriever
