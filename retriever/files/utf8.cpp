// UTF-8 checks: finding invalid sequences and making text printable for messages.
#include "retriever/files/utf8.h"

namespace gradcache::retriever {

std::string printable_utf8(std::string_view s) {
  std::string out;
  while (!s.empty()) {
    const std::optional<size_t> bad = find_invalid_utf8(s);
    if (!bad) {
      out += s;
      break;
    }
    static const char kHex[] = "0123456789ABCDEF";
    const auto byte = static_cast<unsigned char>(s[*bad]);
    out += s.substr(0, *bad);
    out += {'\\', 'x', kHex[byte >> 4], kHex[byte & 15]};
    s.remove_prefix(*bad + 1);
  }
  return out;
}

std::optional<size_t> find_invalid_utf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char lead = s[i];
    if (lead < 0x80) {
      ++i;
      continue;
    }
    // The sequence length and the allowed range of the second byte, which is where overlongs
    // (E0, F0), surrogates (ED) and code points above U+10FFFF (F4) are excluded.
    size_t length;
    unsigned char low = 0x80, high = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) low = 0xA0;
      if (lead == 0xED) high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) low = 0x90;
      if (lead == 0xF4) high = 0x8F;
    } else {
      return i;  // a continuation byte without a lead, C0/C1 (always overlong), or F5..FF
    }
    if (i + length > n) return i;  // truncated
    if (s[i + 1] < low || s[i + 1] > high) return i;
    for (size_t k = 2; k < length; ++k)
      if (s[i + k] < 0x80 || s[i + k] > 0xBF) return i;
    i += length;
  }
  return std::nullopt;
}

}  // namespace gradcache::retriever
