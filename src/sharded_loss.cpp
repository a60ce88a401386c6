#include <gradcache/sharded_loss.h>

#include "detail/score_tiles.h"
#include "detail/streaming_parts.h"
#include "detail/targets.h"

#include <gradcache/grad_cache.h>  // NonFiniteLossError

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>
#include <c10/core/GradMode.h>
#include <c10/util/accumulate.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/custom_class.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

namespace gradcache {
namespace distributed {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr const char* kShardedLoss = "sharded_contrastive_loss";
// Message streams of the ring: passage blocks, and the running sums that travel with them.
constexpr int kBlockTag = 7001, kSumsTag = 7002;

// The group and every rank's block sizes, kept for the backward (a capsule in saved_data).
struct Ring : torch::CustomClassHolder {
  Ring(ProcessGroup g, std::vector<int64_t> q, std::vector<int64_t> p)
      : group(std::move(g)), query_rows(std::move(q)), passage_rows(std::move(p)) {}
  ProcessGroup group;
  std::vector<int64_t> query_rows, passage_rows;  // per rank

  int rank() const { return group.rank(); }
  int world() const { return group.world_size(); }
  // The rank whose block a rank holds `step` steps into the ring (it starts with its own).
  int block_at(int step) const { return (rank() - step + world()) % world(); }
  int64_t first_row(const std::vector<int64_t>& rows, int r) const {
    return std::accumulate(rows.begin(), rows.begin() + r, int64_t{0});
  }
  // Sends `out` on, receives the previous rank's tensor of `rows` rows (trailing shape of `out`).
  // `spare`, when given and large enough, is memory no longer needed that receives it.
  std::pair<ProcessGroup::Pending, at::Tensor> shift(const at::Tensor& out, int64_t rows, int tag,
                                                     const at::Tensor& spare = {}) const {
    if (world() == 1) return {ProcessGroup::Pending(nullptr), out};  // a ring of one: the block stays
    auto shape = out.sizes().vec();
    shape[0] = rows;
    const int64_t numel = c10::multiply_integers(shape);
    auto in = spare.defined() && spare.is_contiguous() && spare.scalar_type() == out.scalar_type() &&
                      spare.numel() >= numel
                  ? spare.view({-1}).narrow(0, 0, numel).view(shape)
                  : at::empty(shape, out.options());
    return {group.shift_ring_async(out, in, tag), in};
  }
};

c10::intrusive_ptr<Ring> ring_of(AutogradContext* ctx) {
  return c10::static_intrusive_pointer_cast<Ring>(ctx->saved_data["ring"].toCapsule());
}

// Every rank throws together (a rank that stopped alone would leave the others waiting in the
// ring): with its own tile named where the bad scores are local.
void check_tiles_on_every_rank(const detail::TileChecks& checks, const ProcessGroup& group) {
  if (!any_rank(group)(!checks.ok())) return;
  checks.check();
  throw NonFiniteLossError(std::string(kShardedLoss) + ": a score is NaN or infinite on another rank; nothing was "
                           "backpropagated. The scores q p^T / temperature overflow: use a larger temperature, "
                           "Similarity::Cosine, or float32 instead of half precision",
                           std::numeric_limits<double>::infinity());
}

// Row- and column-wise logsumexp of S = q p^T / tau over the passages (and queries) of every
// rank, this rank's rows (and columns) only. Forward: the passage blocks go round the ring;
// each visiting block's tiles are folded into this rank's row sums, and into the block's column
// sums, which travel with it and come home after W shifts. Backward: the same ring again, each
// block carrying its column sums and gradients, and the gradient of its rows, which grows at
// every rank it visits and comes home at the end.
struct RingLogSumExp : public torch::autograd::Function<RingLogSumExp> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& p, const at::Tensor& tau,
                               int64_t tile, bool columns, const c10::intrusive_ptr<Ring>& ring) {
    const auto type = detail::tile_compute_type(q.scalar_type());
    const auto qs = q.to(type) * tau.to(type).reciprocal();
    const double neg_inf = -std::numeric_limits<double>::infinity();
    auto row_lse = at::full({q.size(0)}, neg_inf, qs.options());
    at::Tensor block = p.to(type).contiguous();
    at::Tensor col_lse = columns ? at::full({p.size(0)}, neg_inf, qs.options()) : at::Tensor();
    detail::TileChecks checks(kShardedLoss);
    const int64_t q_first = ring->first_row(ring->query_rows, ring->rank());
    for (int step = 0; step < ring->world(); ++step) {
      const int owner = ring->block_at(step), next_owner = ring->block_at(step + 1);
      const bool last = step + 1 == ring->world();
      auto prefetch = last ? std::make_pair(ProcessGroup::Pending(nullptr), at::Tensor())
                           : ring->shift(block, ring->passage_rows[next_owner], kBlockTag);
      detail::fold_score_tiles(qs, block, tile, row_lse, col_lse, checks, q_first,
                               ring->first_row(ring->passage_rows, owner));
      if (columns) {  // after the last step this brings this rank's own column sums home
        auto [sent, received] = ring->shift(col_lse, ring->passage_rows[next_owner], kSumsTag);
        sent.wait();
        col_lse = received;
      }
      if (!last) {
        prefetch.first.wait();
        block = prefetch.second;
      }
    }
    check_tiles_on_every_rank(checks, ring->group);

    ctx->set_materialize_grads(false);
    ctx->saved_data["tile"] = tile;
    ctx->saved_data["columns"] = columns;
    ctx->saved_data["ring"] = c10::IValue::make_capsule(ring);
    ctx->save_for_backward({q, p, tau, row_lse, columns ? col_lse : at::Tensor()});
    return columns ? variable_list{row_lse, col_lse} : variable_list{row_lse};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &q = saved[0], &p = saved[1], &tau = saved[2], &row_lse = saved[3], &col_lse = saved[4];
    const auto ring = ring_of(ctx);
    const bool columns = ctx->saved_data["columns"].toBool();
    const at::Tensor g_row = grads[0], g_col = columns ? grads[1] : at::Tensor();
    // Every rank takes the same branches: the same loss runs on all of them.
    if (!g_row.defined() && !g_col.defined()) return variable_list(6);

    const auto type = detail::tile_compute_type(q.scalar_type());
    const auto inv_tau = tau.to(type).reciprocal();
    const auto qs = q.to(type) * inv_tau;
    const int64_t d = q.size(1);
    // The travelling block: its rows, then (when the columns are used) their logsumexp and
    // gradient as two more columns.
    at::Tensor block = p.to(type);
    if (g_col.defined()) block = at::cat({block, col_lse.unsqueeze(1), g_col.to(type).unsqueeze(1)}, 1);
    block = block.contiguous();
    auto dq = at::zeros_like(qs);  // dS p, summed over all blocks; divided by tau below
    auto dp = at::zeros({p.size(0), d}, qs.options());  // the travelling block's gradient
    for (int step = 0; step < ring->world(); ++step) {
      const int next_owner = ring->block_at(step + 1);
      const bool last = step + 1 == ring->world();
      auto prefetch = last ? std::make_pair(ProcessGroup::Pending(nullptr), at::Tensor())
                           : ring->shift(block, ring->passage_rows[next_owner], kBlockTag);
      const auto rows = block.narrow(1, 0, d);
      const auto lse_c = g_col.defined() ? block.select(1, d) : at::Tensor();
      const auto g_c = g_col.defined() ? block.select(1, d + 1) : at::Tensor();
      detail::backprop_score_tiles(qs, rows, ctx->saved_data["tile"].toInt(), row_lse, g_row, lse_c, g_c, dq, dp);
      if (!last) prefetch.first.wait();  // the block has gone on: its memory receives the next gradient
      const bool block_is_input = block.data_ptr() == p.data_ptr();
      auto [sent, received] = ring->shift(dp, ring->passage_rows[next_owner], kSumsTag,  // home after W shifts
                                          block_is_input ? at::Tensor() : block);
      sent.wait();
      dp = received;
      if (!last) block = prefetch.second;
    }
    // This rank's share of the temperature's gradient; SharedAcrossRanks sums the shares.
    const auto dtau = ((qs * dq).sum() * inv_tau).neg_().reshape(tau.sizes()).to(tau.scalar_type());
    dq.mul_(inv_tau);
    return {dq.to(q.scalar_type()), dp.to(p.scalar_type()), dtau, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// The identity, whose backward sums the gradient over the ranks: for a tensor every rank uses
// (the temperature), each rank's loss share giving it only a share of its gradient.
struct SharedAcrossRanks : public torch::autograd::Function<SharedAcrossRanks> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const c10::intrusive_ptr<Ring>& ring) {
    ctx->saved_data["ring"] = c10::IValue::make_capsule(ring);
    return x.view_as(x);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    std::vector<at::Tensor> sum{grads[0].contiguous().clone()};
    ring_of(ctx)->group.all_reduce_sum(sum);
    return {sum[0], at::Tensor()};
  }
};

// The whole batch's loss as the value, this rank's share as what the backward differentiates.
struct ValueOfWhole : public torch::autograd::Function<ValueOfWhole> {
  static at::Tensor forward(AutogradContext*, const at::Tensor& share, const at::Tensor& whole) {
    return whole.clone();
  }
  static variable_list backward(AutogradContext*, variable_list grads) { return {grads[0], at::Tensor()}; }
};

}  // namespace

at::Tensor sharded_contrastive_loss(const ProcessGroup& group, const at::Tensor& q_local, const at::Tensor& p_local,
                                    const StreamingLossOptions& options) {
  detail::check_representations(q_local, p_local, kShardedLoss);
  detail::check_tile_size(options.tile_size(), kShardedLoss);
  auto tau = detail::temperature_of(options, q_local, kShardedLoss);
  const auto t = detail::positive_columns({}, q_local.size(0), p_local.size(0), q_local.device(), kShardedLoss);
  // One gather for every rank's block sizes and whether its rows are finite (found up front: a
  // -inf score would pass the forward and turn the backward into NaN).
  const bool finite = at::isfinite(q_local).all().item<bool>() && at::isfinite(p_local).all().item<bool>();
  const auto shape = group.all_gather_rows(
      at::tensor({q_local.size(0), p_local.size(0), int64_t{finite ? 0 : 1}}, at::TensorOptions(at::kLong)).view({1, 3}));
  std::vector<int64_t> query_rows, passage_rows;
  std::string bad_ranks;
  for (int r = 0; r < group.world_size(); ++r) {
    query_rows.push_back(shape[r][0].item<int64_t>());
    passage_rows.push_back(shape[r][1].item<int64_t>());
    if (shape[r][2].item<int64_t>() != 0) bad_ranks += (bad_ranks.empty() ? "" : ", ") + std::to_string(r);
  }
  if (!bad_ranks.empty()) {
    throw NonFiniteLossError(std::string(kShardedLoss) + ": representations of rank(s) " + bad_ranks + " hold NaN or inf; " +
                                 "nothing was backpropagated. Check the encoder's output and the learning rate",
                             std::numeric_limits<double>::quiet_NaN());
  }
  const int64_t all_queries = std::accumulate(query_rows.begin(), query_rows.end(), int64_t{0});
  const auto ring = c10::make_intrusive<Ring>(group, query_rows, passage_rows);

  if (tau.requires_grad()) tau = SharedAcrossRanks::apply(tau, ring);
  const auto [a, b] = detail::similarity_inputs(q_local, p_local, options.similarity());
  const auto lse = RingLogSumExp::apply(a, b, tau, options.tile_size(), options.symmetric(), ring);
  const auto type = lse[0].scalar_type();
  const auto positive = ((a.to(type) * tau.reciprocal().to(type)) * b.index_select(0, t).to(type)).sum(1);
  // The mean is over the whole batch's queries, not this rank's.
  const double scale = options.reduction() == Reduction::Mean ? 1.0 / static_cast<double>(all_queries) : 1.0;
  auto share = (lse[0] - positive).sum() * scale;
  if (options.symmetric()) share = (share + (lse[1].index_select(0, t) - positive).sum() * scale) / 2;
  std::vector<at::Tensor> whole{share.detach().reshape({1}).clone()};
  group.all_reduce_sum(whole);
  return ValueOfWhole::apply(share, whole[0].reshape({}));
}

ShardedContrastiveLoss::ShardedContrastiveLoss(ProcessGroup group, StreamingLossOptions options)
    : group_(std::move(group)), options_(std::move(options)) {
  detail::check_tile_size(options_.tile_size(), "ShardedContrastiveLoss");
  if (!options_.temperature_tensor().defined()) {
    TORCH_CHECK(options_.temperature() > 0 && std::isfinite(options_.temperature()),
                "ShardedContrastiveLoss: temperature must be positive and finite, got ", options_.temperature());
  }
}

at::Tensor ShardedContrastiveLoss::operator()(const at::Tensor& q_local, const at::Tensor& p_local,
                                              const LossArgs& args) const {
  const auto options = detail::with_loss_args(options_, args, "ShardedContrastiveLoss", /*targets_allowed=*/false);
  return sharded_contrastive_loss(group_, q_local, p_local, options);
}

}  // namespace distributed
}  // namespace gradcache
