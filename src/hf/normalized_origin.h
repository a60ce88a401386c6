// Which characters of a normalised text `tokenizers` still aligns with the start of the original
// text: what Metaspace's prepend_scheme "first" asks (offsets_original().0 == 0, metaspace.rs).
//
// A NormalizedString (tokenizer/normalizer.rs) keeps, for each normalised character, the range
// of the original it came from. Every normaliser rewrites through transform() (or replace(),
// which does the same bookkeeping): it gives the new characters in order, each with a change
// (0: replaces the next original character, -n: replaces it and removes the n after it, 1:
// inserted), and a character takes the range of the character it replaces, an inserted one the
// range of the character before it, or (0, 0) when nothing comes before. The ranges only grow
// along the text, so the characters aligned with the start are always a prefix: a normaliser
// turns the count of such leading characters before it into the count after it (Normalizer::
// normalize). A piece cut from the normalised text (at an added token, by a pre-tokeniser)
// begins at the original start exactly when it begins inside that prefix.
#pragma once

#include <cstddef>
#include <string_view>

namespace gradcache::hf::detail {

/// Follows transform()'s bookkeeping over the changes of the new characters, in order, to count
/// how many leading new characters keep the start. `at_origin`: the count before; `skipped`:
/// transform()'s initial_offset (old characters removed before the first new one).
class OriginTracker {
 public:
  explicit OriginTracker(size_t at_origin, size_t skipped = 0) : before_(at_origin), consumed_(skipped) {}

  /// The next new character, with its change.
  void add(ptrdiff_t change) {
    if (done_) return;
    // An inserted character takes the range of the old character before the current one (of
    // none: (0, 0), the start); any other takes the range of the current one and moves past it
    // and the ones it removes.
    const bool at_start = change > 0 ? consumed_ == 0 || consumed_ - 1 < before_ : consumed_ < before_;
    if (change <= 0) consumed_ += static_cast<size_t>(1 - change);
    if (at_start) {
      ++after_;
    } else {
      done_ = true;  // the ranges only grow: no later character keeps the start
    }
  }
  /// No later character can keep the start (the caller may stop adding).
  bool done() const { return done_; }
  /// The count after.
  size_t at_origin() const { return after_; }

 private:
  size_t before_;
  size_t consumed_;
  size_t after_ = 0;
  bool done_ = false;
};

/// The count after Lowercase: each character becomes its lower case, the first character of it
/// a change 0, the rest insertions (normalizer.rs lowercase), so the leading characters' lower
/// cases keep the start.
size_t lowercase_origin(std::u32string_view text, size_t at_origin);
/// Lowercase (Rust's char::to_lowercase of each character) in place, as the Lowercase
/// normaliser and BertNormalizer's lowercase do it; returns the count after (lowercase_origin).
size_t lowercase_in_place(std::u32string& text, size_t at_origin);
/// The count after NFD (NFKD with `compatibility`) of `text`, which has `at_origin` leading
/// characters at the start: unicode-normalization-alignments gives each character's
/// decomposition its first character as a change 0 and the rest as insertions, and the canonical
/// reordering moves them with their changes (normalizers.cpp).
size_t decomposition_origin(std::u32string_view text, size_t at_origin, bool compatibility);
/// The same for NFC (NFKC): the composition adds the changes of the characters it merges, less
/// one for each merge (normalizers.cpp).
size_t composition_origin(std::u32string_view text, size_t at_origin, bool compatibility);

}  // namespace gradcache::hf::detail
