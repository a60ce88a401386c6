#include "detail/graph_reach.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>

#include <unordered_set>

namespace gradcache {
namespace detail {

std::vector<bool> leaves_reached(const at::Tensor& loss, const std::vector<at::Tensor>& leaves) {
  // Owning pointers (std::shared_ptr in LibTorch 1.13, c10::intrusive_ptr in 2.15), so that a
  // leaf's accumulator outside the graph is not freed and its address reused while we search.
  using NodePtr = decltype(torch::autograd::impl::try_get_grad_accumulator(leaves.front()));
  std::vector<NodePtr> accumulators;
  for (const auto& leaf : leaves) accumulators.push_back(torch::autograd::impl::try_get_grad_accumulator(leaf));
  std::vector<bool> reached(leaves.size(), false);
  std::vector<torch::autograd::Node*> stack{loss.grad_fn().get()};
  std::unordered_set<torch::autograd::Node*> seen;
  while (!stack.empty()) {
    auto* node = stack.back();
    stack.pop_back();
    if (node == nullptr || !seen.insert(node).second) continue;
    for (size_t i = 0; i < leaves.size(); ++i) reached[i] = reached[i] || node == accumulators[i].get();
    for (const auto& edge : node->next_edges()) stack.push_back(edge.function.get());
  }
  return reached;
}

}  // namespace detail
}  // namespace gradcache
