#pragma once
// Checks the parts of a serialized sentencepiece model that sentencepiece itself trusts.
//
// sentencepiece (0.1.9x) validates the model proto's pieces, but reads its normalization rules
// (NormalizerSpec.precompiled_charsmap: a darts-clone double-array trie over the input bytes and
// a blob of normalized strings) without any bounds check: a trie whose offsets point outside its
// array makes every Encode read past the buffer (fuzz_export found the SEGV in
// Normalizer::NormalizePrefix). This walks every trie node an input can reach and refuses a model
// whose walk would leave the array or whose values point outside the normalized strings.

#include <string_view>

namespace gradcache::retriever {

/// Throws std::runtime_error saying what is broken when the normalizer or denormalizer of the
/// model proto `bytes` holds a precompiled map that sentencepiece would read out of bounds, or
/// when the proto's wire format cannot be followed to find them. Returns otherwise (a model
/// without precompiled maps, or with sound ones). The message has no prefix naming the file:
/// the caller adds it.
void check_sentencepiece_normalizers(std::string_view bytes);

}  // namespace gradcache::retriever
