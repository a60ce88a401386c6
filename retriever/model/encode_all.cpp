#include "retriever/model/encode_all.h"

#include "retriever/model/batching.h"

#include <torch/torch.h>

#include <algorithm>
#include <numeric>
#include <string>

namespace gradcache {
namespace retriever {

at::Tensor encode_all(const gradcache::Model& model, const std::vector<std::vector<int64_t>>& tokens,
                      int64_t batch_size, const c10::Device& device, const std::atomic<int>* stop) {
  TORCH_CHECK(!tokens.empty(), "encode_all: nothing to encode");
  std::vector<int64_t> order(tokens.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return tokens[a].size() < tokens[b].size(); });
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> parts;
  for (size_t start = 0; start < order.size(); start += static_cast<size_t>(batch_size)) {
    stop_if_signalled(stop);
    std::vector<int64_t> rows(order.begin() + start,
                              order.begin() + std::min(order.size(), start + static_cast<size_t>(batch_size)));
    TokenBatch batch = pad_batch(tokens, rows);
    for (auto& [name, t] : batch) t = t.to(device);
    parts.push_back(model(gradcache::ModelInput(batch)).toTensor().to(torch::kFloat32));
  }
  auto sorted = torch::cat(parts, 0);
  auto inverse = torch::empty({static_cast<int64_t>(order.size())}, torch::kLong);
  inverse.index_put_({torch::tensor(order, torch::kLong)}, torch::arange(static_cast<int64_t>(order.size())));
  return sorted.index_select(0, inverse.to(sorted.device()));
}

}  // namespace retriever
}  // namespace gradcache
