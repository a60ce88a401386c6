// The splitting pre-tokenisers of `tokenizers` (pre_tokenizers/split.rs, whitespace.rs,
// punctuation.rs, digits.rs, sequence.rs), each cutting a text into words:
// - Split: at the matches of a pattern (a literal {"String"} or an Oniguruma {"Regex"}), with a
//   split behaviour, and with invert the matches are the words and the rest the delimiters;
// - Whitespace: the runs of word characters and the runs of other characters that are not white
//   space (the regex crate's `\w+|[^\w\s]+`, Unicode \w), white space dropped;
// - WhitespaceSplit: cut at white space (char::is_whitespace), which goes;
// - Punctuation: each punctuation character (ASCII punctuation, or P* in Unicode 8.0) is a
//   delimiter, with a split behaviour (Isolated when the file says none);
// - Digits: the numeric characters (char::is_numeric) as runs (Contiguous) or one word each
//   (individual_digits);
// - Sequence: each pre-tokeniser over the words of the one before.
// A character-predicate pattern makes every matching character a delimiter of its own (pattern.rs).
#include "hf/components.h"
#include "hf/json_fields.h"
#include "hf/regex.h"
#include "hf/split_behavior.h"
#include "hf/unicode.h"

namespace gradcache::hf::detail {
namespace {

// Splits `text` at each character `is_delimiter` accepts, one delimiter per character.
template <class Predicate>
void split_at_characters(std::u32string_view text, Predicate is_delimiter, SplitBehavior behavior, bool at_origin,
                         Words& out) {
  thread_local std::vector<Match> matches;
  matches.clear();
  for (size_t i = 0; i < text.size(); ++i)
    if (is_delimiter(text[i])) matches.emplace_back(i, i + 1);
  split_at_matches(text, matches, behavior, /*invert=*/false, at_origin, out);
}

class Split final : public PreTokenizer {
 public:
  Split(PatternSpec pattern, SplitBehavior behavior, bool invert, const Source& source)
      : pattern_(std::move(pattern)),
        behavior_(behavior),
        invert_(invert),
        regex_(pattern_.regex(), source.at("pattern")) {}

  void split(std::u32string_view text, bool at_origin, Words& out) const override {
    thread_local std::vector<Match> matches;
    matches.clear();
    regex_.find_all(text, matches);
    split_at_matches(text, matches, behavior_, invert_, at_origin, out);
  }

  OrderedJson to_json() const override {
    return OrderedJson{{"type", "Split"},
                       {"pattern", pattern_.to_json()},
                       {"behavior", split_behavior_name(behavior_)},
                       {"invert", invert_}};
  }

 private:
  PatternSpec pattern_;
  SplitBehavior behavior_;
  bool invert_;
  Regex regex_;
};

class Whitespace final : public PreTokenizer {
 public:
  void split(std::u32string_view text, bool at_origin, Words& out) const override {
    enum Kind { kSpace, kWord, kOther };
    auto kind = [](char32_t c) {
      if (unicode::is_word_char(c)) return kWord;
      return unicode::is_whitespace(c) ? kSpace : kOther;
    };
    size_t i = 0;
    while (i < text.size()) {
      const Kind k = kind(text[i]);
      size_t end = i + 1;
      while (end < text.size() && kind(text[end]) == k) ++end;
      if (k != kSpace) out.push(text.substr(i, end - i), at_origin && i == 0);
      i = end;
    }
  }

  OrderedJson to_json() const override { return OrderedJson{{"type", "Whitespace"}}; }
};

class WhitespaceSplit final : public PreTokenizer {
 public:
  void split(std::u32string_view text, bool at_origin, Words& out) const override {
    size_t begin = 0;
    for (size_t i = 0; i <= text.size(); ++i) {
      if (i < text.size() && !unicode::is_whitespace(text[i])) continue;
      out.push(text.substr(begin, i - begin), at_origin && begin == 0);
      begin = i + 1;
    }
  }

  OrderedJson to_json() const override { return OrderedJson{{"type", "WhitespaceSplit"}}; }
};

class Punctuation final : public PreTokenizer {
 public:
  explicit Punctuation(SplitBehavior behavior) : behavior_(behavior) {}

  void split(std::u32string_view text, bool at_origin, Words& out) const override {
    split_at_characters(text, unicode::is_punctuation, behavior_, at_origin, out);
  }

  OrderedJson to_json() const override {
    return OrderedJson{{"type", "Punctuation"}, {"behavior", split_behavior_name(behavior_)}};
  }

 private:
  SplitBehavior behavior_;
};

class Digits final : public PreTokenizer {
 public:
  explicit Digits(bool individual_digits) : individual_digits_(individual_digits) {}

  void split(std::u32string_view text, bool at_origin, Words& out) const override {
    split_at_characters(text, unicode::is_numeric,
                        individual_digits_ ? SplitBehavior::kIsolated : SplitBehavior::kContiguous, at_origin, out);
  }

  OrderedJson to_json() const override {
    return OrderedJson{{"type", "Digits"}, {"individual_digits", individual_digits_}};
  }

 private:
  bool individual_digits_;
};

class PreTokenizerSequence final : public PreTokenizer {
 public:
  explicit PreTokenizerSequence(std::vector<std::unique_ptr<PreTokenizer>> pre_tokenizers)
      : pre_tokenizers_(std::move(pre_tokenizers)) {}

  void split(std::u32string_view text, bool at_origin, Words& out) const override {
    if (pre_tokenizers_.empty()) {  // nothing cuts: the text is one word
      out.push(text, at_origin);
      return;
    }
    if (pre_tokenizers_.size() == 1) {
      pre_tokenizers_.front()->split(text, at_origin, out);
      return;
    }
    // Two buffers in turn: the words of one pre-tokeniser are the texts of the next. (Local,
    // not thread_local: a Sequence may hold a Sequence.)
    Words current, next;
    pre_tokenizers_.front()->split(text, at_origin, current);
    for (size_t k = 1; k < pre_tokenizers_.size(); ++k) {
      Words& target = k + 1 == pre_tokenizers_.size() ? out : next;
      next.clear();
      for (size_t i = 0; i < current.size(); ++i)
        pre_tokenizers_[k]->split(current[i], i == 0 && current.first_at_origin, target);
      if (&target != &out) std::swap(current, next);
    }
  }

  OrderedJson to_json() const override {
    OrderedJson list = OrderedJson::array();
    for (const auto& pre_tokenizer : pre_tokenizers_) list.push_back(pre_tokenizer->to_json());
    return OrderedJson{{"type", "Sequence"}, {"pretokenizers", list}};
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> pre_tokenizers_;
};

}  // namespace

std::unique_ptr<PreTokenizer> split_from_json(const Json& config, const Source& source) {
  expect_object(config, source);
  PatternSpec pattern = read_pattern_spec(config, "pattern", source);
  const SplitBehavior behavior = read_split_behavior(config, "behavior", source);
  const bool invert = read_required_bool(config, "invert", source);
  return std::make_unique<Split>(std::move(pattern), behavior, invert, source);
}

std::unique_ptr<PreTokenizer> whitespace_from_json(const Json& config, const Source& source) {
  expect_object(config, source);
  return std::make_unique<Whitespace>();
}

std::unique_ptr<PreTokenizer> whitespace_split_from_json(const Json& config, const Source& source) {
  expect_object(config, source);
  return std::make_unique<WhitespaceSplit>();
}

std::unique_ptr<PreTokenizer> punctuation_from_json(const Json& config, const Source& source) {
  expect_object(config, source);
  // serde's default for a missing "behavior" is Isolated (punctuation.rs).
  const SplitBehavior behavior =
      config.contains("behavior") ? read_split_behavior(config, "behavior", source) : SplitBehavior::kIsolated;
  return std::make_unique<Punctuation>(behavior);
}

std::unique_ptr<PreTokenizer> digits_from_json(const Json& config, const Source& source) {
  expect_object(config, source);
  return std::make_unique<Digits>(read_required_bool(config, "individual_digits", source));
}

std::unique_ptr<PreTokenizer> pre_tokenizer_sequence_from_json(const Json& config, const Source& source) {
  return std::make_unique<PreTokenizerSequence>(make_pre_tokenizers(config, "pretokenizers", source));
}

}  // namespace gradcache::hf::detail
