// Precompiled: SentencePiece's normalisation rules, compiled into the "precompiled_charsmap" a
// SentencePiece model carries (XLM-RoBERTa, T5, ALBERT... put it in tokenizer.json in base64), as
// `tokenizers` runs them (normalizers/precompiled.rs over the spm_precompiled crate).
//
// The charsmap is [u32 trie size in bytes][the trie: a darts-clone double array of u32 units]
// [the replacements: UTF-8, each ending with a NUL]. The trie's keys are UTF-8 byte strings and
// a key's value is where its replacement begins. `tokenizers` walks the text grapheme cluster by
// grapheme cluster (extended clusters, as the unicode-segmentation crate cuts them): a cluster
// shorter than 6 UTF-8 bytes that begins with a key is replaced whole by that key's replacement
// (the replacement of the SHORTEST key it begins with, and whatever follows the key in the
// cluster goes with it: "ﬁ" + U+0301 becomes "fi"); any other cluster goes character by
// character, each character that begins with a key replaced the same way.
//
// It also says how many leading characters stay aligned with the original's start
// (hf/normalized_origin.h). precompiled.rs hands transform() a change per new character, built
// oddly: a replacement's characters are changes 0, the last of them carrying the difference in
// length (the last ones insertions when longer, the last one removing the extra old characters
// when shorter), and a replacement by nothing adds its difference to the change of the previous
// new character, or, when there is none yet, to nothing: a text whose first character is
// replaced by nothing keeps its start on the next one ("\x01ab" gives "ab" with "a" aligned
// with "\x01"). When nothing is replaced, nothing moves.
//
// A charsmap that lies (a trie pointing outside itself, a replacement starting outside the
// replacements or inside a character) is refused when read: every node the trie can reach is
// walked once, so no text can lead the walk anywhere unchecked. `tokenizers` loads such a
// charsmap and panics on the first text that reaches the broken part.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>

#include "hf/components.h"
#include "hf/grapheme_clusters.h"
#include "hf/json_fields.h"
#include "hf/normalized_origin.h"
#include "hf/unicode.h"

namespace gradcache::hf::detail {
namespace {

/// The largest charsmap read, decoded: SentencePiece's (nmt_nfkc) is 240 KB. Checking the trie
/// costs 255 probes a node, so this also bounds the time a hostile file costs.
constexpr size_t kMaxCharsmapBytes = size_t{8} << 20;

// ---- base64 ---------------------------------------------------------------------------------------
//
// The standard alphabet, as spm_precompiled's base64 reads it: the padding may be left out, or
// be part of the "=" or "==" the length calls for, but nothing follows it, and the bits of the
// last symbol that make no byte must be zero.

constexpr char kBase64Alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int base64_value(char symbol) {
  if (symbol >= 'A' && symbol <= 'Z') return symbol - 'A';
  if (symbol >= 'a' && symbol <= 'z') return symbol - 'a' + 26;
  if (symbol >= '0' && symbol <= '9') return symbol - '0' + 52;
  if (symbol == '+') return 62;
  if (symbol == '/') return 63;
  return -1;
}

std::string decode_base64(std::string_view text, const Source& source) {
  size_t symbols = text.size();
  while (symbols > 0 && text[symbols - 1] == '=') --symbols;
  const size_t padding = text.size() - symbols;
  for (size_t i = 0; i < symbols; ++i)
    if (base64_value(text[i]) < 0) {
      const auto byte = static_cast<unsigned char>(text[i]);
      char shown[8];
      std::snprintf(shown, sizeof shown, byte >= 0x20 && byte < 0x7F ? "'%c'" : "\\x%02X", byte);
      fail(source, std::string("is not base64: the character ") + shown + " at offset " + std::to_string(i) +
                       " is not in the standard alphabet (A-Z a-z 0-9 + /, '=' only at the end)");
    }
  const size_t tail = symbols % 4;  // symbols of the last, partial group
  if (tail == 1 || (padding > 0 && (tail == 0 || padding > 4 - tail)))
    fail(source, "is not base64: " + std::to_string(text.size()) + " characters (" + std::to_string(padding) +
                     " of them padding) do not make whole bytes; the text is cut short or padded wrongly");
  std::string bytes;
  bytes.reserve(symbols / 4 * 3 + 2);
  uint32_t bits = 0;
  int bit_count = 0;
  for (size_t i = 0; i < symbols; ++i) {
    bits = (bits << 6) | static_cast<uint32_t>(base64_value(text[i]));
    bit_count += 6;
    if (bit_count >= 8) {
      bit_count -= 8;
      bytes.push_back(static_cast<char>((bits >> bit_count) & 0xFF));
    }
  }
  if ((bits & ((1u << bit_count) - 1)) != 0)
    fail(source, "is not base64: its last symbol has bits set that make no byte (the text is damaged)");
  return bytes;
}

std::string encode_base64(std::string_view bytes) {
  std::string text;
  text.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t group = 0;
    for (size_t k = 0; k < 3; ++k) group = (group << 8) | (k < n ? static_cast<uint8_t>(bytes[i + k]) : 0u);
    for (size_t k = 0; k < 4; ++k) text.push_back(k <= n ? kBase64Alphabet[(group >> (18 - 6 * k)) & 63] : '=');
  }
  return text;
}

// ---- the charsmap -----------------------------------------------------------------------------

/// The double array (darts-clone's unit layout, spm_precompiled's reading of it) and the
/// replacements.
class CharsMap {
 public:
  CharsMap(std::string_view blob, const Source& source) {
    if (blob.size() < 4)
      fail(source, "the charsmap has " + std::to_string(blob.size()) +
                       " bytes, too few for its header (tokenizers: \"Cannot parse precompiled_charsmap\")");
    const uint32_t trie_bytes = read_u32(blob.data());
    if (trie_bytes > blob.size() - 4)
      fail(source, "the charsmap's header gives its trie " + std::to_string(trie_bytes) + " bytes, but only " +
                       std::to_string(blob.size() - 4) + " follow it (the charsmap is cut short or damaged)");
    if (trie_bytes % 4 != 0)
      fail(source, "the charsmap's header gives its trie " + std::to_string(trie_bytes) +
                       " bytes, not a whole number of 4-byte units (the charsmap is damaged)");
    if (trie_bytes == 0)
      fail(source, "the charsmap's trie is empty (tokenizers fails on the first text: its root is missing)");
    units_.resize(trie_bytes / 4);
    for (size_t i = 0; i < units_.size(); ++i) units_[i] = read_u32(blob.data() + 4 + 4 * i);
    normalized_ = std::string(blob.substr(4 + trie_bytes));
    if (const auto bad = unicode::find_invalid_utf8(normalized_))
      fail(source, "the charsmap's replacements are not valid UTF-8 (byte " + std::to_string(*bad) +
                       " of them); the charsmap is damaged");
    check_trie(source);
  }

  /// The replacement of the shortest key `key` begins with (a walk stops at a NUL byte), or
  /// nothing when it begins with none. spm_precompiled collects every key the text begins with
  /// and takes the first; the walk stops there, which the check when read makes the same.
  std::optional<std::string_view> transform(const char* key, size_t size) const {
    size_t node = offset(units_[0]);
    for (size_t i = 0; i < size; ++i) {
      const auto byte = static_cast<uint8_t>(key[i]);
      if (byte == 0) break;
      node ^= byte;
      const uint32_t unit = units_[node];
      if (label(unit) != byte) return std::nullopt;
      node ^= offset(unit);
      if (has_leaf(unit)) return replacement(value(units_[node]));
    }
    return std::nullopt;
  }

 private:
  static uint32_t read_u32(const char* p) {
    const auto* b = reinterpret_cast<const uint8_t*>(p);
    return uint32_t{b[0]} | uint32_t{b[1]} << 8 | uint32_t{b[2]} << 16 | uint32_t{b[3]} << 24;
  }
  static bool has_leaf(uint32_t unit) { return (unit >> 8) & 1; }
  static uint32_t value(uint32_t unit) { return unit & 0x7FFFFFFFu; }
  static uint32_t label(uint32_t unit) { return unit & 0x800000FFu; }
  static size_t offset(uint32_t unit) { return size_t{unit >> 10} << ((unit & (1u << 9)) >> 6); }

  /// The replacement beginning at `index`: up to the next NUL, or to the end.
  std::string_view replacement(size_t index) const {
    const size_t end = std::min(normalized_.find('\0', index), normalized_.size());
    return std::string_view(normalized_).substr(index, end - index);
  }

  // Walks every node the trie reaches from its root (a node is a base position; byte c leads
  // from base s to unit s ^ c, which belongs to the node if its label is c, and the child's base
  // is that position ^ its offset) and checks what a walk can read there: each unit a byte
  // 1..255 probes is inside the array, each leaf's value unit too, and each value starts a
  // replacement (at most the end of the replacements, and not inside a character).
  void check_trie(const Source& source) const {
    const size_t n = units_.size();
    const auto broken = [&](const std::string& what) {
      fail(source, "the charsmap's trie is damaged: " + what +
                       " (tokenizers would fail on a text that reaches it); take the charsmap from the "
                       "model's SentencePiece file again");
    };
    std::vector<bool> visited(n + 256, false);
    std::vector<size_t> pending{offset(units_[0])};
    while (!pending.empty()) {
      const size_t base = pending.back();
      pending.pop_back();
      if (base >= visited.size())
        broken("a node's base is " + std::to_string(base) + ", past the " + std::to_string(n) + " units");
      if (visited[base]) continue;
      visited[base] = true;
      for (size_t byte = 1; byte < 256; ++byte) {
        const size_t position = base ^ byte;
        if (position >= n)
          broken("byte " + std::to_string(byte) + " leads to unit " + std::to_string(position) + ", past the " +
                 std::to_string(n) + " units");
        const uint32_t unit = units_[position];
        if (label(unit) != byte) continue;
        const size_t child = position ^ offset(unit);
        if (has_leaf(unit)) {
          if (child >= n)
            broken("a key's value is at unit " + std::to_string(child) + ", past the " + std::to_string(n) + " units");
          const size_t index = value(units_[child]);
          if (index > normalized_.size() ||
              (index < normalized_.size() && (static_cast<uint8_t>(normalized_[index]) & 0xC0) == 0x80))
            broken("a replacement begins at byte " + std::to_string(index) + ", " +
                   (index > normalized_.size() ? "past the " + std::to_string(normalized_.size()) + " bytes of them"
                                               : std::string("inside a character")));
        }
        pending.push_back(child);
      }
    }
  }

  std::vector<uint32_t> units_;
  std::string normalized_;  // the replacements, NUL-separated
};

// ---- the normaliser -----------------------------------------------------------------------------

size_t utf8_length(char32_t c) { return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4; }

/// Writes the UTF-8 of `c` (a code point, not a surrogate: the text was decoded) at `out`.
size_t put_utf8(char32_t c, char* out) {
  const size_t length = utf8_length(c);
  if (length == 1) {
    out[0] = static_cast<char>(c);
    return 1;
  }
  static constexpr uint8_t kLead[5] = {0, 0, 0xC0, 0xE0, 0xF0};
  for (size_t k = length - 1; k > 0; --k, c >>= 6) out[k] = static_cast<char>(0x80 | (c & 0x3F));
  out[0] = static_cast<char>(kLead[length] | c);
  return length;
}

/// Appends valid UTF-8 (the replacements are checked when read) as code points.
void append_decoded(std::u32string& out, std::string_view utf8) {
  for (size_t i = 0; i < utf8.size();) {
    const auto lead = static_cast<uint8_t>(utf8[i]);
    const size_t length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    char32_t c = length == 1 ? lead : length == 2 ? lead & 0x1F : length == 3 ? lead & 0x0F : lead & 0x07;
    for (size_t k = 1; k < length; ++k) c = (c << 6) | (static_cast<uint8_t>(utf8[i + k]) & 0x3F);
    out.push_back(c);
    i += length;
  }
}

class Precompiled final : public Normalizer {
 public:
  Precompiled(std::string charsmap, const Source& source) : blob_(std::move(charsmap)), map_(blob_, source) {
    for (size_t c = 0; c < ascii_.size(); ++c) {
      const char byte = static_cast<char>(c);
      if (const auto replacement = map_.transform(&byte, 1)) append_decoded(ascii_[c].emplace(), *replacement);
    }
  }

  size_t normalize(std::u32string& text, size_t at_origin) const override {
    thread_local std::u32string out;
    out.clear();
    out.reserve(text.size());
    Changes changes(at_origin);
    const std::u32string_view chars(text);
    for (size_t begin = 0; begin < chars.size();) {
      // An ASCII character before another is a cluster of its own (only CR LF joins in ASCII).
      const char32_t c = chars[begin];
      if (c < 0x80 &&
          (begin + 1 == chars.size() || (chars[begin + 1] < 0x80 && !(c == U'\r' && chars[begin + 1] == U'\n')))) {
        const auto& replacement = ascii_[c];
        if (replacement) {
          out += *replacement;
          changes.replaced(1, replacement->size());
        } else {
          out.push_back(c);
          changes.kept();
        }
        ++begin;
        continue;
      }
      const size_t end = grapheme_cluster_end(chars, begin);
      append_cluster(chars.substr(begin, end - begin), out, changes);
      begin = end;
    }
    text.swap(out);
    return changes.at_origin();
  }

  OrderedJson to_json() const override {
    OrderedJson j;
    j["type"] = "Precompiled";
    j["precompiled_charsmap"] = encode_base64(blob_);
    return j;
  }

 private:
  /// The changes precompiled.rs gives transform() (see the top of the file), followed only as far
  /// as the start goes. The last change stays open: a replacement by nothing may still change it.
  class Changes {
   public:
    explicit Changes(size_t at_origin) : before_(at_origin), tracker_(at_origin) {}
    void kept() { add(0); }
    void replaced(size_t old_count, size_t new_count) {
      modified_ = true;
      if (tracker_.done()) return;
      const auto diff = static_cast<ptrdiff_t>(new_count) - static_cast<ptrdiff_t>(old_count);
      if (new_count == 0) {
        if (has_open_) open_ += diff;
        return;
      }
      for (size_t i = 0; i < new_count; ++i) {
        // The last `diff` characters are insertions when longer; the last one takes the
        // difference when shorter.
        ptrdiff_t change = 0;
        if (diff > 0 && i >= new_count - static_cast<size_t>(diff)) change = 1;
        if (diff < 0 && i + 1 == new_count) change = diff;
        add(change);
      }
    }
    size_t at_origin() {
      if (!modified_) return before_;  // precompiled.rs transforms nothing then
      if (has_open_) tracker_.add(open_);
      has_open_ = false;
      return tracker_.at_origin();
    }

   private:
    void add(ptrdiff_t change) {
      if (tracker_.done()) return;
      if (has_open_) tracker_.add(open_);
      open_ = change;
      has_open_ = true;
    }

    size_t before_;
    OriginTracker tracker_;
    bool has_open_ = false;
    ptrdiff_t open_ = 0;
    bool modified_ = false;
  };

  // precompiled.rs: a cluster under 6 bytes is looked up whole, else (or when that finds
  // nothing) each character is.
  void append_cluster(std::u32string_view cluster, std::u32string& out, Changes& changes) const {
    char bytes[8];
    size_t size = 0;
    for (const char32_t c : cluster) {
      if (size + utf8_length(c) >= 6) {
        size = 6;
        break;
      }
      size += put_utf8(c, bytes + size);
    }
    if (size < 6) {
      if (const auto replacement = map_.transform(bytes, size)) {
        const size_t before = out.size();
        append_decoded(out, *replacement);
        changes.replaced(cluster.size(), out.size() - before);
        return;
      }
      if (cluster.size() == 1) {  // the character's own lookup is the one just made
        out.push_back(cluster[0]);
        changes.kept();
        return;
      }
    }
    for (const char32_t c : cluster) {
      const size_t length = put_utf8(c, bytes);
      if (const auto replacement = map_.transform(bytes, length)) {
        const size_t before = out.size();
        append_decoded(out, *replacement);
        changes.replaced(1, out.size() - before);
      } else {
        out.push_back(c);
        changes.kept();
      }
    }
  }

  std::string blob_;  // the charsmap as read, for to_json
  CharsMap map_;
  std::array<std::optional<std::u32string>, 128> ascii_;  // each ASCII character's replacement
};

}  // namespace

std::unique_ptr<Normalizer> precompiled_from_json(const Json& config, const Source& source) {
  const Source at = source.at("precompiled_charsmap");
  const Json& charsmap = require_field(config, "precompiled_charsmap", source);
  if (!charsmap.is_string()) fail(at, "expected a base64 string, found " + describe_json(charsmap));
  const auto& text = charsmap.get_ref<const std::string&>();
  if (text.size() / 4 * 3 > kMaxCharsmapBytes)
    fail(at, "is " + std::to_string(text.size()) + " characters of base64, more than the " +
                 std::to_string(kMaxCharsmapBytes) + "-byte charsmap this reader accepts");
  return std::make_unique<Precompiled>(decode_base64(text, at), at);
}

}  // namespace gradcache::hf::detail
