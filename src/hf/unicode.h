// The Unicode operations of the BERT normaliser and pre-tokeniser, with the exact semantics of
// Hugging Face `tokenizers` (which runs them with Rust's std, the `unicode_categories` crate and
// the `unicode-normalization-alignments` crate), computed with ICU.
//
// The crates are pinned to old Unicode versions, and that shows in the ids: a character assigned
// after Unicode 8.0 is neither punctuation, nor a control character, nor a non-spacing mark for
// `tokenizers` (the `unicode_categories` tables are Unicode 8.0), and NFD leaves a character
// assigned after Unicode 9.0 alone. ICU answers for its own, newer Unicode, so each predicate
// here asks ICU for the category *and* the age of the character. Rust's std (white space, lower
// case) follows a recent Unicode, as ICU does.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gradcache::hf::unicode {

/// The Unicode version of the category tables `tokenizers` uses (unicode_categories 0.1.1).
inline constexpr int kCategoryTablesMajor = 8;
/// The Unicode version of its NFD (unicode-normalization-alignments 0.1.12).
inline constexpr int kNormalizationTablesMajor = 9;

/// The code points of UTF-8 text. Ill-formed bytes become U+FFFD, one per maximal ill-formed
/// subpart (Unicode's recommended practice, as Python's `bytes.decode(errors="replace")`).
std::u32string decode_utf8(std::string_view text);
/// Where the first ill-formed byte is, or nothing for valid UTF-8.
std::optional<size_t> find_invalid_utf8(std::string_view text);
/// `text` with each ill-formed byte written as \xNN: for messages, which must be valid UTF-8.
std::string printable_utf8(std::string_view text);
void append_utf8(std::string& out, char32_t c);
std::string encode_utf8(std::u32string_view text);

/// Rust's char::is_whitespace: the White_Space property.
bool is_whitespace(char32_t c);
/// `tokenizers`' BERT is_control: categories Cc, Cf and Co (Unicode 8.0), except \t, \n, \r.
bool is_control(char32_t c);
/// `tokenizers`' BERT punctuation: ASCII punctuation, or a P* category (Unicode 8.0).
bool is_punctuation(char32_t c);
/// Category Mn (Unicode 8.0): what strip_accents removes after NFD.
bool is_nonspacing_mark(char32_t c);
/// Rust regex's \w (Unicode 16.0, the regex crate's tables): Alphabetic, a mark, a decimal digit,
/// a connector punctuation or Join_Control. Added tokens with single_word match only between
/// non-word characters; the Whitespace pre-tokeniser cuts at the edges of runs of them.
bool is_word_char(char32_t c);
/// Rust's char::is_numeric (Rust's Unicode, 17.0): a number of any kind (Nd, Nl, No).
bool is_numeric(char32_t c);
/// unicode-normalization-alignments' is_combining_mark, which StripAccents removes: a mark of any
/// kind (Mn, Mc, Me) in Unicode 9.0.
bool is_combining_mark(char32_t c);
/// The CJK ideograph blocks that handle_chinese_chars surrounds with spaces (the ranges of
/// `tokenizers`' is_chinese_char, which are Google BERT's).
bool is_chinese_char(char32_t c);

/// Appends Rust's char::to_lowercase of `c`: the full, context-free mapping (U+0130 becomes
/// "i\u0307"; a capital sigma is always σ, never final ς).
void append_lowercase(std::u32string& out, char32_t c);
/// Canonical decomposition (NFD) of the characters of Unicode 9.0; later ones are left alone.
void nfd(std::u32string& text);
/// The other normalisation forms, likewise over the characters of Unicode 9.0.
void nfc(std::u32string& text);
void nfkd(std::u32string& text);
void nfkc(std::u32string& text);

}  // namespace gradcache::hf::unicode
