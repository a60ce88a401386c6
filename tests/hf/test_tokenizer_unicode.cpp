// The Unicode steps (src/hf/unicode.h) against what `tokenizers` does to every code point: the
// committed table (tests/hf/fixtures/unicode_table.txt, all 1,112,064 scalar values but the
// Hangul syllables, whose decomposition is algorithmic and checked here by its formula); the live
// tests compare the table made on the spot, Hangul included.
#include <unicode/ustring.h>

#include "hf/unicode.h"
#include "hf_test_util.h"
#include "unicode_table.h"

namespace unicode = gradcache::hf::unicode;

namespace {

TEST(HfUnicode, EveryCodePointAsTokenizersTreatsIt) {
  const size_t mismatches =
      hf_unicode_test::compare_with_table(hf_test::read_file(hf_test::fixture("unicode_table.txt")),
                                          /*table_has_hangul=*/false);
  EXPECT_EQ(mismatches, 0u);
}

// NFD of a Hangul syllable: the leading consonant, the vowel, and the trailing consonant if any
// (the Unicode standard's arithmetic, §3.12).
TEST(HfUnicode, HangulSyllablesDecomposeAlgorithmically) {
  for (char32_t s = 0xAC00; s <= 0xD7A3; ++s) {
    const char32_t index = s - 0xAC00;
    std::u32string expected{0x1100 + index / (21 * 28), 0x1161 + (index % (21 * 28)) / 28};
    if (index % 28 != 0) expected.push_back(0x11A7 + index % 28);
    std::u32string text(1, s);
    unicode::nfd(text);
    ASSERT_EQ(text, expected) << std::hex << static_cast<uint32_t>(s);
  }
}

// append_lowercase is the simple mapping plus U+0130: equal to ICU's full (context-free)
// lower-casing of each character alone, wherever ICU maps it.
TEST(HfUnicode, LowercaseIsTheFullMappingOfEachCharacter) {
  size_t mismatches = 0;
  for (char32_t c = 0; c < 0x110000; ++c) {
    if (c >= 0xD800 && c <= 0xDFFF) continue;
    UChar source[2];
    int32_t length = 0;
    U16_APPEND_UNSAFE(source, length, static_cast<UChar32>(c));
    UChar lowered[8];
    UErrorCode status = U_ZERO_ERROR;
    const int32_t n = u_strToLower(lowered, 8, source, length, "", &status);
    ASSERT_TRUE(U_SUCCESS(status));
    std::u32string icu;
    for (int32_t i = 0; i < n;) {
      UChar32 x;
      U16_NEXT(lowered, i, n, x);
      icu.push_back(static_cast<char32_t>(x));
    }
    std::u32string ours;
    unicode::append_lowercase(ours, c);
    // Where ICU leaves a character alone, ours may map it: the mappings newer than this ICU.
    if (ours != icu && icu != std::u32string(1, c) && ++mismatches <= 10)
      ADD_FAILURE() << "U+" << std::hex << static_cast<uint32_t>(c);
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST(HfUnicode, IllFormedUtf8BecomesReplacementCharacters) {
  // One U+FFFD per maximal ill-formed subpart: a lone continuation byte, a truncated sequence, an
  // overlong form, a surrogate, a code point above U+10FFFF.
  EXPECT_EQ(unicode::decode_utf8("a\x80"
                                 "b"),
            U"a\uFFFDb");
  EXPECT_EQ(unicode::decode_utf8("a\xE2\x82"), U"a\uFFFD");
  EXPECT_EQ(unicode::decode_utf8("\xC0\xAF"), U"\uFFFD\uFFFD");
  EXPECT_EQ(unicode::decode_utf8("\xED\xA0\x80"), U"\uFFFD\uFFFD\uFFFD");
  EXPECT_EQ(unicode::decode_utf8("\xF4\x90\x80\x80"), U"\uFFFD\uFFFD\uFFFD\uFFFD");
  EXPECT_EQ(unicode::decode_utf8("\xE2\x82\xAC\xF0\x9F\x98\x80"), U"\u20AC\U0001F600");
  EXPECT_EQ(unicode::find_invalid_utf8("ok \xE2\x82"), 3u);
  EXPECT_EQ(unicode::find_invalid_utf8("ok \xE2\x82\xAC"), std::nullopt);
  EXPECT_EQ(unicode::printable_utf8("a\xFF"
                                    "b"),
            "a\\xFFb");
}

// NFD of a long text goes through ICU in blocks cut where nothing reorders; the result is the same
// as one piece at a time.
TEST(HfUnicode, LongTextsDecomposeInBlocksAsInOnePiece) {
  std::u32string text;
  for (size_t i = 0; i < 700000; ++i) text += (i % 3 == 0) ? U"\u00E9\u0316" : U"a\u0301\u0316";
  std::u32string blocks = text;
  unicode::nfd(blocks);
  std::u32string expected;
  for (size_t i = 0; i < 700000; ++i) expected += (i % 3 == 0) ? U"e\u0316\u0301" : U"a\u0316\u0301";
  EXPECT_EQ(blocks, expected);
}

}  // namespace
