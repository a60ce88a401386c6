// The batch the training-step exactness tests share: small enough for fp64 full-batch
// references, with hard negatives and texts of unequal length (padding matters).
#pragma once

#include "retriever/model/batching.h"

#include <cstdint>
#include <vector>

namespace step_test {

/// Eight queries, each with its positive then one hard negative, from 24 token sequences of 1 to
/// 11 tokens (ids 1..39, for an encoder of 40 ids).
struct StepBatch {
  gradcache::retriever::TokenBatch queries, passages;
};

inline StepBatch eight_queries_with_hard_negatives() {
  std::vector<std::vector<int64_t>> tokens;
  for (int i = 0; i < 24; ++i) {
    std::vector<int64_t> seq;
    for (int j = 0; j < 1 + (i * 7) % 11; ++j) seq.push_back(1 + (i * 3 + j) % 39);
    tokens.push_back(seq);
  }
  std::vector<int64_t> q_rows, p_rows;
  for (int64_t i = 0; i < 8; ++i) {
    q_rows.push_back(i);
    p_rows.push_back(8 + i);   // positive
    p_rows.push_back(16 + i);  // hard negative
  }
  return {gradcache::retriever::pad_batch(tokens, q_rows), gradcache::retriever::pad_batch(tokens, p_rows)};
}

}  // namespace step_test
