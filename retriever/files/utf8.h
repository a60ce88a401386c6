// UTF-8 checks: finding invalid sequences (the text readers refuse them) and making any bytes
// printable in a message.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gradcache::retriever {

/// Returns the byte offset of the first invalid UTF-8 sequence, or std::nullopt if valid.
/// Overlong encodings, UTF-16 surrogates (U+D800..U+DFFF), code points above U+10FFFF and
/// truncated sequences are invalid.
std::optional<size_t> find_invalid_utf8(std::string_view text);

/// `text` made valid UTF-8 for a message, each stray byte written as "\xNN": messages are
/// printed and may be put in JSON reports, which need valid UTF-8.
std::string printable_utf8(std::string_view text);

}  // namespace gradcache::retriever
