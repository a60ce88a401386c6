// Extended grapheme clusters of UTF-32 text, as the unicode-segmentation crate's graphemes(true)
// cuts them (UAX #29 with the Indic conjunct rule GB9c): what the Precompiled normaliser walks
// (precompiled.cpp). Thread-safe and allocation-free, unlike ICU's BreakIterator.
#pragma once

#include <cstddef>
#include <string_view>

namespace gradcache::hf::detail {

/// Where the cluster that begins at `begin` (< text.size()) ends.
size_t grapheme_cluster_end(std::u32string_view text, size_t begin);

}  // namespace gradcache::hf::detail
