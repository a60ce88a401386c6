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
  /// Also the passage-to-query direction, averaged with query-to-passage (symmetric_contrastive_loss);
  /// as StreamingLossOptions::symmetric.
  TORCH_ARG(bool, symmetric) = false;
};

/// Query-to-passage InfoNCE (with options.symmetric(), averaged with passage-to-query as
/// symmetric_contrastive_loss). q: [N, d], p: [M, d] with M = N * (1 + k): each query's
/// positive followed by its k hard negatives ("stride 1 + k"), so query i's positive is
/// row i * (1 + k) of p. Every other passage is a negative of every query.
/// `target` (optional, int64 [N]) gives each query's positive row explicitly instead;
/// then M may be anything.
at::Tensor contrastive_loss(const at::Tensor& q, const at::Tensor& p, const ContrastiveLossOptions& options = {},
                            const at::Tensor& target = {});

/// The average of the query-to-passage loss and the passage-to-query loss (contrastive_loss
/// with options.symmetric(true)). In the second,
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

/// The reference's SimpleContrastiveLoss as a loss object for GradCache (symmetric with
/// ContrastiveLossOptions().symmetric(true), or SymmetricContrastiveLoss).
/// LossArgs understood: "reduction" ("mean"|"sum"), "target" (int64 tensor [N]).
class SimpleContrastiveLoss : public QueryPassageLoss<SimpleContrastiveLoss> {
 public:
  explicit SimpleContrastiveLoss(ContrastiveLossOptions options = {});
  using QueryPassageLoss::operator();
  at::Tensor operator()(const at::Tensor& q, const at::Tensor& p, const LossArgs& args = {}) const;
  const ContrastiveLossOptions& options() const { return options_; }
  const char* name() const { return options_.symmetric() ? "SymmetricContrastiveLoss" : "SimpleContrastiveLoss"; }

 private:
  ContrastiveLossOptions options_;
};

/// Symmetric InfoNCE (query->passage and passage->query, averaged): SimpleContrastiveLoss with
/// options.symmetric(true), under the reference's name.
class SymmetricContrastiveLoss : public SimpleContrastiveLoss {
 public:
  explicit SymmetricContrastiveLoss(ContrastiveLossOptions options = {})
      : SimpleContrastiveLoss(options.symmetric(true)) {}
};

}  // namespace gradcache
