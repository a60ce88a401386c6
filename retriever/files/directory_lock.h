// One writer per directory (an flock on the directory itself). The implementation is shared
// with the staged output directories (src/detail/directory_lock.h, library gradcache_files).
#pragma once

#include "detail/directory_lock.h"

namespace gradcache::retriever {

using ::gradcache::detail::DirectoryLock;

}  // namespace gradcache::retriever
