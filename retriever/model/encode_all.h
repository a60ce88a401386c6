// Turning token sequences into vectors in batches, without graph: what evaluation, `encode`
// and `mine` do with a trained model.
#pragma once

#include "retriever/launch/stop_signal.h"

#include <gradcache/model.h>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace gradcache {
namespace retriever {

/// Representations [N, d] of token sequences, computed without graph in batches of
/// `batch_size`, shortest sequences together (less padding), returned in input order.
/// The model's training mode is left as it was. Throws StoppedBySignal before a batch once
/// `stop` (when given) holds a signal number.
at::Tensor encode_all(const gradcache::Model& model, const std::vector<std::vector<int64_t>>& tokens,
                      int64_t batch_size, const c10::Device& device, const std::atomic<int>* stop = nullptr);

}  // namespace retriever
}  // namespace gradcache
