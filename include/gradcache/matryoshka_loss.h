// Matryoshka representations (Kusupati et al., 2022): one loss over several prefixes of the
// same representations, so that the first m dimensions of an embedding work as an embedding
// on their own. The loss only slices representations, so it wraps any loss (dense,
// streaming, sharded) and a GradCache step still caches one representation per example.
#pragma once

#include <gradcache/loss.h>

#include <torch/arg.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gradcache {

struct MatryoshkaOptions {
  /// The prefix widths, in any order: positive, distinct, each at most the representations'
  /// width (checked per call). The full width may be one of them.
  TORCH_ARG(std::vector<int64_t>, dims);
  /// One weight per prefix (finite, >= 0, not all 0); empty means 1 for each.
  TORCH_ARG(std::vector<double>, weights);
  /// Re-normalise each prefix to unit L2 norm: set it when the encoder normalises its output,
  /// since the prefix of a unit vector is shorter than 1 and would score lower than a unit
  /// vector of that width does at inference time.
  TORCH_ARG(bool, normalize_prefixes) = false;
};

/// Throws a one-line message naming the bad value unless `options` is usable: dims non-empty,
/// positive and distinct; weights empty or one per dim, finite, >= 0 and not all 0. With
/// `width` > 0 also checks that every dim is at most `width`. Messages start with `who`.
void check_matryoshka_options(const MatryoshkaOptions& options, int64_t width = 0,
                              const std::string& who = "MatryoshkaLoss");

/// The first `dim` columns of `reps` [N, d], re-normalised to unit L2 norm when `normalize`
/// (as torch.nn.functional.normalize: x / max(|x|, 1e-12)); `dim` == d returns `reps` itself.
/// Differentiable; what training, evaluation and encoding all use, so they agree.
at::Tensor matryoshka_prefix(const at::Tensor& reps, int64_t dim, bool normalize);

/// sum_m w_m * inner({reps[0][:, :m], reps[1][:, :m], ...}, args): every representation
/// (2-d, [rows, width]) is cut to each prefix width in turn, the LossArgs pass through
/// unchanged. A drop-in wherever a Loss goes:
///
///   GradCache cache({q_enc, p_enc}, 64,
///                   MatryoshkaLoss(SimpleContrastiveLoss(), MatryoshkaOptions().dims({64, 32, 16})));
///
/// With a collective inner loss (distributed::ShardedContrastiveLoss) every rank calls it
/// once per prefix, in the same order, as it must.
class MatryoshkaLoss {
 public:
  /// Throws (see check_matryoshka_options) on bad options or an undefined inner loss.
  MatryoshkaLoss(Loss inner, MatryoshkaOptions options);
  at::Tensor operator()(const std::vector<at::Tensor>& reps, const LossArgs& args) const;
  const MatryoshkaOptions& options() const { return options_; }

 private:
  Loss inner_;
  MatryoshkaOptions options_;
};

}  // namespace gradcache
