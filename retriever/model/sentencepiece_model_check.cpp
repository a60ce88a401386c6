#include "retriever/model/sentencepiece_model_check.h"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace gradcache::retriever {
namespace {

// sentencepiece_model.proto's field numbers: ModelProto.normalizer_spec = 3,
// ModelProto.denormalizer_spec = 5, NormalizerSpec.precompiled_charsmap = 2.
constexpr uint32_t kNormalizerSpec = 3, kDenormalizerSpec = 5, kPrecompiledCharsmap = 2;

/// One protobuf message's fields, read in wire order (the wire format: a varint key
/// `field << 3 | type`, then a varint, 8 bytes, a varint length and that many bytes, or 4 bytes).
class WireReader {
 public:
  explicit WireReader(std::string_view bytes) : rest_(bytes) {}

  /// Calls on_bytes(field, value) for every length-delimited field; skips the others.
  template <class OnBytes>
  void each_length_delimited(OnBytes&& on_bytes) {
    while (!rest_.empty()) {
      const uint64_t key = varint();
      const uint32_t type = key & 7;
      const uint64_t field = key >> 3;
      switch (type) {
        case 0: varint(); break;
        case 1: take(8); break;
        case 5: take(4); break;
        case 2: {
          const uint64_t length = varint();
          if (length > rest_.size()) fail("a field's length runs past the end of the file");
          on_bytes(field, take(static_cast<size_t>(length)));
          break;
        }
        default:  // groups (3, 4) are not in sentencepiece's proto; 6 and 7 are not wire types
          fail("field " + std::to_string(field) + " has wire type " + std::to_string(type) +
               ", which a sentencepiece model does not use");
      }
    }
  }

 private:
  [[noreturn]] static void fail(const std::string& what) { throw std::runtime_error(what); }

  uint64_t varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (rest_.empty()) fail("the file ends inside a number");
      const auto byte = static_cast<uint8_t>(rest_.front());
      rest_.remove_prefix(1);
      value |= static_cast<uint64_t>(byte & 0x7F) << shift;
      if ((byte & 0x80) == 0) return value;
    }
    fail("a number is longer than 10 bytes");
  }

  std::string_view take(size_t count) {
    if (count > rest_.size()) fail("the file ends inside a field");
    const std::string_view taken = rest_.substr(0, count);
    rest_.remove_prefix(count);
    return taken;
  }

  std::string_view rest_;
};

/// darts-clone's double-array unit (third_party/darts_clone/darts.h in sentencepiece).
struct Unit {
  uint32_t bits;
  bool has_leaf() const { return ((bits >> 8) & 1) == 1; }
  uint32_t value() const { return bits & ((1U << 31) - 1); }
  uint32_t label() const { return bits & ((1U << 31) | 0xFF); }
  uint32_t offset() const { return (bits >> 10) << ((bits & (1U << 9)) >> 6); }
};

/// The checks follow Normalizer::DecodePrecompiledCharsMap (a little-endian uint32 trie size,
/// the trie's units, then the normalized strings) and DoubleArray::commonPrefixSearch: from the
/// root's base b, an input byte c reads unit b ^ c; when its label is c, the walk moves to base
/// b ^ c ^ offset, whose unit holds the value (an index into the normalized strings) if the unit
/// had a leaf. Any byte can follow, so every reachable base must keep b ^ c inside the array for
/// all 256 c. Bases are visited once each, so a trie with cycles is walked in finite time.
void check_charsmap(std::string_view blob, const char* spec) {
  const auto fail = [spec](const std::string& what) {
    throw std::runtime_error(std::string("its ") + spec + "'s precompiled normalization map " + what);
  };
  uint32_t trie_size = 0;
  if (blob.size() <= sizeof(trie_size)) return;  // sentencepiece refuses it itself ("broken")
  std::memcpy(&trie_size, blob.data(), sizeof(trie_size));
  if (trie_size >= blob.size()) return;  // refused by sentencepiece too
  if (trie_size > blob.size() - sizeof(trie_size))
    fail("declares a trie of " + std::to_string(trie_size) + " bytes, more than the " +
         std::to_string(blob.size() - sizeof(trie_size)) + " that follow");
  const size_t units = trie_size / sizeof(uint32_t);
  const char* trie = blob.data() + sizeof(trie_size);
  const size_t normalized_size = blob.size() - sizeof(trie_size) - trie_size;
  if (units == 0) fail("has an empty trie");
  const auto unit = [trie](size_t index) {
    Unit read{};
    std::memcpy(&read.bits, trie + index * sizeof(uint32_t), sizeof(uint32_t));
    return read;
  };
  const auto check_base = [&](size_t base) {
    if ((base | 0xFF) >= units)
      fail("points at unit " + std::to_string(base | 0xFF) + " of a trie of " + std::to_string(units));
  };
  std::vector<bool> visited(units, false);
  std::vector<size_t> pending{unit(0).offset()};
  check_base(pending.back());
  visited[pending.back()] = true;
  while (!pending.empty()) {
    const size_t base = pending.back();
    pending.pop_back();
    for (uint32_t c = 0; c < 256; ++c) {
      const Unit child = unit(base ^ c);
      if (child.label() != c) continue;
      const size_t next = base ^ c ^ child.offset();
      check_base(next);
      if (child.has_leaf() && unit(next).value() >= normalized_size)
        fail("maps to byte " + std::to_string(unit(next).value()) + " of " + std::to_string(normalized_size) +
             " bytes of normalized text");
      if (!visited[next]) {
        visited[next] = true;
        pending.push_back(next);
      }
    }
  }
}

}  // namespace

void check_sentencepiece_normalizers(std::string_view bytes) {
  WireReader(bytes).each_length_delimited([](uint64_t field, std::string_view spec) {
    if (field != kNormalizerSpec && field != kDenormalizerSpec) return;
    const char* name = field == kNormalizerSpec ? "normalizer" : "denormalizer";
    // Every occurrence is checked: protobuf merges repeated messages, and the last map wins.
    WireReader(spec).each_length_delimited([name](uint64_t inner, std::string_view charsmap) {
      if (inner == kPrecompiledCharsmap) check_charsmap(charsmap, name);
    });
  });
}

}  // namespace gradcache::retriever
