// FNV-1a, 64 bits: a hash that is the same on every build, platform and rank (std::hash is not),
// for what must be reproduced: WordNet's splits, an index's signature, equal texts in a batch.
#pragma once

#include <cstdint>
#include <string_view>

namespace gradcache {
namespace retriever {

constexpr uint64_t kFnv1a64Basis = 14695981039346656037ull;

/// `bytes` hashed on from `hash` (the basis for a fresh hash; a previous result to go on).
inline uint64_t fnv1a64(std::string_view bytes, uint64_t hash = kFnv1a64Basis) {
  for (const unsigned char c : bytes) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

}  // namespace retriever
}  // namespace gradcache
