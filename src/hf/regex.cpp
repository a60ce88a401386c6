// The regular expressions of tokenizer.json as `tokenizers` runs them (utils/onig.rs: Oniguruma
// 6.9.10 with its default, Ruby syntax and Unicode 16.0 tables), run with PCRE2 (32-bit, over code
// points). The two engines backtrack alike, but their pattern languages differ in places real
// tokenizers use, so a pattern is translated before PCRE2 compiles it:
// - every class is written out as code point ranges computed here with Oniguruma's meaning:
//   \s (White_Space, where PCRE2's lacks U+0085), \w (Oniguruma's Word, which outside brackets
//   also holds ² ³ ¹ ¼ ½ ¾), \d, \h (a hex digit in Ruby, horizontal space in PCRE2), \p{..} and
//   [...] (nested classes such as BLOOM's ` ?[^(\s|[.,!?…。，、।۔،])]+`, `&&`, POSIX brackets). The
//   Unicode data is ICU's restricted to Unicode 16.0, completed by unicode16_tables.h, so neither
//   PCRE2's nor ICU's own Unicode version shows; \b and \B become lookarounds on that \w;
// - Ruby's spellings: \uHHHH, \xHH bytes of UTF-8, \v (only U+000B), unknown letter escapes (the
//   letter), \nnn (octal unless that many groups precede it), (?m) (PCRE2's (?s)), `{,n}`, `{n}?`
//   and `{n,m}+` (a second repeat, not lazy or possessive), `^`/`$` at every line (MULTILINE).
// Under (?i) each engine folds case by simple (one character to one) folding; the case pairs of
// Unicode 16.0 are added where PCRE2's tables predate them. Oniguruma's folds of one character to
// several (ß ~ "ss", İ ~ "i̇") are not reproduced: the contractions (?i:'s|'t|'re|'ve|'m|'ll|'d)
// of real tokenizers involve none. What PCRE2 cannot do as Oniguruma does ((?x), the absent
// operator (?~..), \y, \X, \M-x, repeat counts above 65,535) is refused with a message rather
// than run differently. Every code point's membership in each class has been compared with
// Oniguruma's through `tokenizers`.
//
// Speed: a class of hundreds of ranges (\p{L}) costs PCRE2 a scan of its ranges for a character
// above U+00FF (ASCII and Latin-1 go through a bitmap); CJK-heavy text runs at about the speed of
// `tokenizers` itself, several times slower than PCRE2's own \p{L} would, which is not Oniguruma's.
//
// The files: regex_classes.cpp computes the classes, regex_translate.cpp and
// regex_class_syntax.cpp translate a pattern, and this file compiles and runs it.
#include "hf/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 32
#include <pcre2.h>

#include <optional>

#include "hf/json_fields.h"
#include "hf/regex_translate.h"
#include "hf/unicode.h"

namespace gradcache::hf::detail {

using onig_classes::kMaxCodePoint;
using onig_translation::is_ascii_alnum;

namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  const int length = pcre2_get_error_message(code, buffer, 256);
  std::u32string text;
  for (int i = 0; i < length; ++i) text.push_back(static_cast<char32_t>(buffer[i]));
  return unicode::encode_utf8(text);
}

// PCRE2's defaults for the work one match may do, and a bound on its memory: a pattern that
// backtracks catastrophically stops with an error after about ten million steps.
constexpr uint32_t kMatchLimit = 10'000'000;
constexpr uint32_t kDepthLimit = 10'000'000;
constexpr uint32_t kHeapLimitKiB = 256 * 1024;
constexpr size_t kJitStackMax = 8 << 20;

// Each thread's match context and JIT stack (neither may be shared by concurrent matches).
struct ThreadMatchState {
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;
  pcre2_match_data* data = nullptr;
  uint32_t data_pairs = 0;

  ThreadMatchState() {
    context = pcre2_match_context_create(nullptr);
    if (context == nullptr) throw std::bad_alloc();
    pcre2_set_match_limit(context, kMatchLimit);
    pcre2_set_depth_limit(context, kDepthLimit);
    pcre2_set_heap_limit(context, kHeapLimitKiB);
    jit_stack = pcre2_jit_stack_create(32 * 1024, kJitStackMax, nullptr);
    if (jit_stack != nullptr) pcre2_jit_stack_assign(context, nullptr, jit_stack);
  }
  ~ThreadMatchState() {
    pcre2_match_data_free(data);
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_context_free(context);
  }
  ThreadMatchState(const ThreadMatchState&) = delete;
  ThreadMatchState& operator=(const ThreadMatchState&) = delete;

  pcre2_match_data* match_data(uint32_t pairs) {
    if (data == nullptr || data_pairs < pairs) {
      pcre2_match_data_free(data);
      data = pcre2_match_data_create(pairs, nullptr);
      if (data == nullptr) throw std::bad_alloc();
      data_pairs = pairs;
    }
    return data;
  }
};

ThreadMatchState& thread_match_state() {
  thread_local ThreadMatchState state;
  return state;
}

}  // namespace

struct Regex::Compiled {
  pcre2_code* code = nullptr;
  uint32_t pairs = 1;  // the whole match and the capture groups
  ~Compiled() { pcre2_code_free(code); }
};

Regex::Regex(const std::string& pattern, const Source& source)
    : pattern_(pattern), source_(source), compiled_(std::make_unique<Compiled>()) {
  const std::u32string translated = translate_onig_pattern(pattern, source);
  pcre2_compile_context* context = pcre2_compile_context_create(nullptr);
  if (context == nullptr) throw std::bad_alloc();
  pcre2_set_newline(context, PCRE2_NEWLINE_LF);  // Oniguruma's: '.', '^' and '$' see only \n
  pcre2_set_bsr(context, PCRE2_BSR_UNICODE);     // \R: any Unicode line break
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  compiled_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                                  PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE, &error_code, &error_offset, context);
  pcre2_compile_context_free(context);
  if (compiled_->code == nullptr)
    fail(source, "the regular expression " + quote_for_message(pattern) +
                     " does not compile: " + pcre2_message(error_code));
  uint32_t captures = 0;
  pcre2_pattern_info(compiled_->code, PCRE2_INFO_CAPTURECOUNT, &captures);
  compiled_->pairs = captures + 1;
  // Where the platform has no JIT the interpreter runs the same pattern, only slower.
  (void)pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE);
}

Regex::~Regex() = default;

void Regex::find_all(std::u32string_view text, std::vector<Match>& matches) const {
  for (const char32_t c : text)
    if (c > kMaxCodePoint || (c >= 0xD800 && c <= 0xDFFF))
      fail(source_, "the regular expression " + quote_for_message(pattern_) +
                        " was given a text that holds no Unicode character (a surrogate or a value above U+10FFFF)");
  ThreadMatchState& state = thread_match_state();
  pcre2_match_data* data = state.match_data(compiled_->pairs);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  // Oniguruma's FindMatches: search from where the last match ended; an empty match right there
  // is skipped by searching again one character further on (onig's regex.rs, FindMatches::next).
  size_t from = 0;
  std::optional<size_t> last_end;
  while (from <= text.size()) {
    const int rc =
        pcre2_match(compiled_->code, subject, text.size(), from, PCRE2_NO_UTF_CHECK, data, state.context);
    if (rc == PCRE2_ERROR_NOMATCH) return;
    if (rc < 0) {
      const bool limit = rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
                         rc == PCRE2_ERROR_HEAPLIMIT || rc == PCRE2_ERROR_JIT_STACKLIMIT;
      fail(source_, "the regular expression " + quote_for_message(pattern_) +
                        (limit ? " backtracks too much on a text of " + std::to_string(text.size()) +
                                     " characters (" + pcre2_message(rc) + "); a pattern with nested repeats such "
                                     "as (a+)+ can take exponential time"
                               : " failed on a text of " + std::to_string(text.size()) +
                                     " characters: " + pcre2_message(rc)));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data);
    const size_t begin = ovector[0], end = ovector[1];
    if (begin > end || end > text.size())  // \K in a lookahead can do this; Oniguruma has no such match
      fail(source_, "the regular expression " + quote_for_message(pattern_) +
                        " gave a match that ends before it begins (\\K in a lookaround?)");
    if (begin == end && last_end == end) {
      from += 1;
      continue;
    }
    matches.emplace_back(begin, end);
    from = end;
    last_end = end;
  }
}

std::string escape_regex(std::string_view literal) {
  // Every ASCII character but letters and digits escaped: in Oniguruma's syntax (which Regex
  // reads) a backslash before any of them means the character itself, and none of them is then
  // special; letters and digits stay bare, since \d, \1... are not literals.
  std::string out;
  out.reserve(literal.size() * 2);
  for (const char c : literal) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x80 && !is_ascii_alnum(byte)) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

PatternSpec read_pattern_spec(const Json& config, const char* key, const Source& source) {
  const Json& value = require_field(config, key, source);
  const Source at = source.at(key);
  if (!value.is_object() || value.size() != 1)
    fail(at, "expected an object with one key, \"String\" or \"Regex\", found " + describe_json(value) +
                 (value.is_object() ? " with " + std::to_string(value.size()) + " keys" : ""));
  PatternSpec pattern;
  if (value.contains("Regex")) {
    pattern.is_regex = true;
    pattern.text = read_string(value, "Regex", at);
  } else if (value.contains("String")) {
    pattern.text = read_string(value, "String", at);
  } else {
    fail(at, "unknown pattern kind " + quote_for_message(value.begin().key()) + " (expected \"String\" or \"Regex\")");
  }
  return pattern;
}

}  // namespace gradcache::hf::detail
