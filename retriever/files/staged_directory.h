// Output directories that appear whole or not at all. The implementation is shared with
// gradcache::hf (src/detail/staged_directory.h, library gradcache_files).
#pragma once

#include "detail/staged_directory.h"

namespace gradcache {
namespace retriever {

using ::gradcache::detail::names_dead_process;
using ::gradcache::detail::remove_dead_processes_entries;
using ::gradcache::detail::StagedDirectory;

}  // namespace retriever
}  // namespace gradcache
