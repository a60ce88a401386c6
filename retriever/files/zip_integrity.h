// Checking a zip archive's CRC-32s before LibTorch reads it: LibTorch's bundled miniz is built
// without CRC checks on read, so a flipped byte inside a tensor would load without a word.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gradcache {
namespace retriever {

/// What is wrong with the zip archive `zip` (an in-memory copy of the whole file), or nothing
/// when every entry's data matches the CRC-32 the central directory records for it. Walks the
/// end-of-central-directory record (zip64 records too), every central directory entry and its
/// local header; stored entries are checked as they are, deflated ones are inflated first.
/// Reports, e.g., "entry 'archive/data/3' fails its CRC check (stored 0x1234abcd, computed
/// 0x0badf00d)", "the end-of-central-directory record is missing (the file is truncated or not
/// a zip archive)". Never throws on malformed input, only on allocation failure.
std::optional<std::string> find_zip_damage(std::string_view zip);

}  // namespace retriever
}  // namespace gradcache
