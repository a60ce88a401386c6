#include <gradcache/matryoshka_loss.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

namespace gradcache {

void check_matryoshka_options(const MatryoshkaOptions& options, int64_t width, const std::string& who) {
  const auto& dims = options.dims();
  TORCH_CHECK(!dims.empty(), who, ": no prefix dimensions given");
  for (size_t i = 0; i < dims.size(); ++i) {
    TORCH_CHECK(dims[i] > 0, who, ": prefix dimension ", dims[i], " must be positive");
    TORCH_CHECK(width <= 0 || dims[i] <= width, who, ": prefix dimension ", dims[i],
                " is larger than the representation width ", width);
    TORCH_CHECK(std::find(dims.begin(), dims.begin() + i, dims[i]) == dims.begin() + i, who,
                ": prefix dimension ", dims[i], " is given twice");
  }
  const auto& weights = options.weights();
  if (weights.empty()) return;
  TORCH_CHECK(weights.size() == dims.size(), who, ": ", weights.size(), " weights for ", dims.size(),
              " prefix dimensions (give one weight per dimension)");
  bool any_positive = false;
  for (double w : weights) {
    TORCH_CHECK(std::isfinite(w) && w >= 0, who, ": weight ", w, " must be finite and >= 0");
    any_positive = any_positive || w > 0;
  }
  TORCH_CHECK(any_positive, who, ": all weights are 0");
}

at::Tensor matryoshka_prefix(const at::Tensor& reps, int64_t dim, bool normalize) {
  TORCH_CHECK(reps.defined() && reps.dim() == 2, "matryoshka_prefix: representations must be 2-d [rows, width]");
  TORCH_CHECK(dim > 0 && dim <= reps.size(1), "matryoshka_prefix: prefix dimension ", dim,
              " is out of range for representations of width ", reps.size(1));
  // The whole vector is as the encoder made it (already unit when it normalises): leaving it
  // alone keeps a prefix of the full width identical to training without Matryoshka.
  if (dim == reps.size(1)) return reps;
  auto prefix = reps.narrow(1, 0, dim);
  if (!normalize) return prefix;
  return prefix / prefix.norm(2, 1, /*keepdim=*/true).clamp_min(1e-12);
}

MatryoshkaLoss::MatryoshkaLoss(Loss inner, MatryoshkaOptions options)
    : inner_(std::move(inner)), options_(std::move(options)) {
  TORCH_CHECK(inner_.defined(), "MatryoshkaLoss: undefined inner loss");
  check_matryoshka_options(options_);
}

at::Tensor MatryoshkaLoss::operator()(const std::vector<at::Tensor>& reps, const LossArgs& args) const {
  TORCH_CHECK(!reps.empty(), "MatryoshkaLoss: no representations");
  for (const auto& r : reps) {
    TORCH_CHECK(r.defined() && r.dim() == 2, "MatryoshkaLoss: representations must be 2-d [rows, width], got ",
                r.defined() ? r.sizes() : at::IntArrayRef{});
    check_matryoshka_options(options_, r.size(1));
  }
  const auto& dims = options_.dims();
  at::Tensor total;
  for (size_t i = 0; i < dims.size(); ++i) {
    const double weight = options_.weights().empty() ? 1.0 : options_.weights()[i];
    std::vector<at::Tensor> prefixes;
    prefixes.reserve(reps.size());
    for (const auto& r : reps) prefixes.push_back(matryoshka_prefix(r, dims[i], options_.normalize_prefixes()));
    // A prefix of weight 0 still runs: a collective inner loss must be called alike on every rank.
    auto term = inner_(prefixes, args) * weight;
    total = total.defined() ? total + term : term;
  }
  return total;
}

}  // namespace gradcache
