// The split behaviours of `tokenizers` (tokenizer/normalizer.rs SplitDelimiterBehavior): what
// becomes of the delimiters a pattern finds when a pre-tokeniser cuts a text at them.
// (API fixed by the lead, who uses it in byte_level.cpp; the implementation is split_behavior.cpp.)
#pragma once

#include <string_view>
#include <vector>

#include "hf/components.h"
#include "hf/regex.h"

namespace gradcache::hf::detail {

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

/// The behaviour named by the field `key`, which must be there: "Removed", "Isolated",
/// "MergedWithPrevious", "MergedWithNext" or "Contiguous" (serde's names for the variants, which
/// `tokenizers` reads and writes exactly so); anything else is refused, as `tokenizers` does.
SplitBehavior read_split_behavior(const Json& config, const char* key, const Source& source);
/// The name `tokenizers` writes for it ("Isolated"...).
const char* split_behavior_name(SplitBehavior behavior);

/// Appends to `out` the words of `text` cut at `matches` (the delimiters: sorted, not
/// overlapping, as Regex::find_all gives them) as `behavior` says, with `invert` meaning the
/// matches are the words and the rest the delimiters (Split's "invert"). Empty words are dropped.
/// `at_origin`: `text` begins where the original text begins; the word that starts at position 0
/// of `text` passes it on.
void split_at_matches(std::u32string_view text, const std::vector<Match>& matches, SplitBehavior behavior,
                      bool invert, bool at_origin, Words& out);

}  // namespace gradcache::hf::detail
