// InfoNCE with in-batch negatives and hard negatives (docs/design.md §1).
#pragma once

#include <gradcache/loss.h>

#include <torch/arg.h>

#include <string>
#include <vector>

namespace gradcache {

enum class Reduction { Mean, Sum };

/// Parses "mean" / "sum"; throws on anything else.
Reduction parse_reduction(const std::string& name);

enum class Similarity {
  Dot,     ///< q · p, as the reference and DPR
  Cosine,  ///< q · p / (|q| |p|), as sentence-transformers (pair it with a temperature ~0.05)
};

struct ContrastiveLossOptions {
  /// Scores are divided by it. 1 as the reference; 0.01-0.1 is usual with Cosine.
  TORCH_ARG(double, temperature) = 1.0;
  /// Overridable per call with LossArgs {"reduction", "mean"|"sum"}.
  TORCH_ARG(Reduction, reduction) = Reduction::Mean;
  TORCH_ARG(Similarity, similarity) = Similarity::Dot;
};

/// Query-to-passage InfoNCE. q: [N, d], p: [M, d] with M = N * (1 + k): each query's
/// positive followed by its k hard negatives ("stride 1 + k"), so query i's positive is
/// row i * (1 + k) of p. Every other passage is a negative of every query.
/// `target` (optional, int64 [N]) gives each query's positive row explicitly instead;
/// then M may be anything.
at::Tensor contrastive_loss(const at::Tensor& q, const at::Tensor& p, const ContrastiveLossOptions& options = {},
                            const at::Tensor& target = {});

/// The average of the query-to-passage loss and the passage-to-query loss. In the second,
/// each query's positive passage is the anchor and the N queries are the candidates (hard
/// negatives are only candidates of the first direction).
at::Tensor symmetric_contrastive_loss(const at::Tensor& q, const at::Tensor& p,
                                      const ContrastiveLossOptions& options = {}, const at::Tensor& target = {});

/// InfoNCE of a score matrix: `scores` [N, M], already divided by the temperature, whatever
/// computed them (a dot product, a cosine, a learned similarity). The positive columns are
/// `target` (int64 [N]) if given, else the stride 1 + k layout above (M = N * (1 + k)).
/// `symmetric` averages in the passage-to-query direction over the positive columns.
at::Tensor score_matrix_loss(const at::Tensor& scores, Reduction reduction = Reduction::Mean, bool symmetric = false,
                             const at::Tensor& target = {});

/// The reference's SimpleContrastiveLoss as a loss object for GradCache.
/// LossArgs understood: "reduction" ("mean"|"sum"), "target" (int64 tensor [N]).
class SimpleContrastiveLoss {
 public:
  explicit SimpleContrastiveLoss(ContrastiveLossOptions options = {});
  at::Tensor operator()(const at::Tensor& q, const at::Tensor& p, const LossArgs& args = {}) const;
  /// The canonical loss form (see Loss): reps = {q, p}.
  at::Tensor operator()(const std::vector<at::Tensor>& reps, const LossArgs& args) const {
    check_two_reps(reps, "SimpleContrastiveLoss");
    return (*this)(reps[0], reps[1], args);
  }
  const ContrastiveLossOptions& options() const { return options_; }

 private:
  ContrastiveLossOptions options_;
};

/// Symmetric InfoNCE (query->passage and passage->query, averaged); same arguments.
class SymmetricContrastiveLoss {
 public:
  explicit SymmetricContrastiveLoss(ContrastiveLossOptions options = {});
  at::Tensor operator()(const at::Tensor& q, const at::Tensor& p, const LossArgs& args = {}) const;
  /// The canonical loss form (see Loss): reps = {q, p}.
  at::Tensor operator()(const std::vector<at::Tensor>& reps, const LossArgs& args) const {
    check_two_reps(reps, "SymmetricContrastiveLoss");
    return (*this)(reps[0], reps[1], args);
  }
  const ContrastiveLossOptions& options() const { return options_; }

 private:
  ContrastiveLossOptions options_;
};

}  // namespace gradcache
