// The library's own exception type (bad input is a c10::Error from TORCH_CHECK).
#pragma once

#include <stdexcept>
#include <string>

namespace gradcache {

/// Thrown by a cache step when the loss is NaN or infinite (and by the streaming loss and
/// the dual cache for a non-finite score, naming its tile). Nothing was backpropagated:
/// parameter gradients are as they were before the step.
class NonFiniteLossError : public std::runtime_error {
 public:
  NonFiniteLossError(const std::string& message, double loss) : std::runtime_error(message), loss_(loss) {}
  double loss() const { return loss_; }

 private:
  double loss_;
};

}  // namespace gradcache
