// Writing files so that a crash or a full disk never leaves a torn or half-written one. The
// implementation is shared with gradcache::hf (src/detail/atomic_file.h, library gradcache_files).
#pragma once

#include "detail/atomic_file.h"

namespace gradcache {
namespace retriever {

using ::gradcache::detail::commit_file;
using ::gradcache::detail::read_file;
using ::gradcache::detail::regular_file_problem;
using ::gradcache::detail::temporary_path;
using ::gradcache::detail::write_file_atomic;
using ::gradcache::detail::write_file_atomic_streamed;
using ::gradcache::detail::write_all;
using ::gradcache::detail::write_temporary_file;

}  // namespace retriever
}  // namespace gradcache
