// Data-parallel Gradient Cache over torch.distributed's c10d: Gloo on CPU, NCCL on CUDA,
// processes launched by torchrun (docs/design.md §4).
#pragma once

#include <gradcache/grad_cache.h>
#include <gradcache/loss.h>

#include <torch/arg.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace gradcache {
namespace distributed {

struct ProcessGroupOptions {
  /// How long any rendezvous or collective may wait for the other ranks before it fails.
  TORCH_ARG(std::chrono::milliseconds, timeout) = std::chrono::minutes(5);
  /// "gloo" or "nccl"; "" picks NCCL when `device` is CUDA and LibTorch has it, else Gloo.
  TORCH_ARG(std::string, backend) = "";
  /// Where the tensors of collectives live (CPU for Gloo).
  TORCH_ARG(c10::Device, device) = c10::Device(c10::kCPU);
};

/// A TCP port on 127.0.0.1 that was free a moment ago (the kernel's choice for port 0): the
/// MASTER_PORT of a group whose ranks all run on this machine. Throws when no socket can be had.
int free_loopback_port();

/// Where and as whom a process joins its group: everything torch.distributed's env://
/// rendezvous reads from the environment, passed explicitly (the library reads no
/// environment variable). A launcher's variables are the program's business, e.g.
/// retriever::torchrun_rendezvous() for torchrun.
struct Rendezvous {
  int rank = 0;
  int world_size = 1;
  /// The process's index on its machine (which GPU it uses); -1: the same as rank.
  int local_rank = -1;
  /// Host and port of the store: rank 0 serves it, unless agent_store.
  std::string address = "127.0.0.1";
  int port = 29500;
  /// torchrun's agent already serves the store (TORCHELASTIC_USE_AGENT_STORE): every rank is
  /// a client, under the agent's prefix for this restart attempt.
  bool agent_store = false;
  int restart_count = 0;
  /// Network interface for Gloo (GLOO_SOCKET_IFNAME); "": loopback for a local address, else
  /// the interface of the host name.
  std::string socket_interface;
};

/// A group of processes and the collectives gradcache needs. Every collective waits at most
/// the group's timeout; a rank that died or never came makes the others throw a
/// std::runtime_error that says so, never hang. Copies share the group.
///
/// A program using it should ignore SIGPIPE (`std::signal(SIGPIPE, SIG_IGN)`, as Python
/// does) before creating it: a write to the socket of a peer that died raises SIGPIPE, whose
/// default action kills the process without a word; ignored, the write fails and the
/// collective throws with a message. The library installs no signal handler itself.
class ProcessGroup {
 public:
  /// Joins the group `rendezvous` describes; throws, saying why, if it cannot within the timeout.
  static ProcessGroup create(const Rendezvous& rendezvous, const ProcessGroupOptions& options = {});

  int rank() const;
  int world_size() const;
  int local_rank() const;
  const ProcessGroupOptions& options() const;

  /// Rows of every rank's `local` (dim 0 may differ between ranks), concatenated in rank order.
  at::Tensor all_gather_rows(const at::Tensor& local) const;
  /// Sums `tensors` over the ranks, in place.
  void all_reduce_sum(std::vector<at::Tensor>& tensors) const;
  /// Starts summing `tensor` over the ranks in place; call wait() on the result.
  class Pending;
  Pending all_reduce_sum_async(at::Tensor tensor) const;
  /// One step of a ring: sends `to_next` to rank (rank + 1) % W and receives into
  /// `from_previous` (already shaped as the sender's tensor) from rank (rank - 1 + W) % W, while
  /// the caller computes; call wait() on the result. `tag` keeps streams of messages apart.
  Pending shift_ring_async(const at::Tensor& to_next, at::Tensor from_previous, int tag) const;
  void barrier() const;
  /// Throws, naming the ranks that differ, unless every rank passed the same `value`.
  void check_same(const std::string& what, const std::string& value) const;

  struct Impl;

 private:
  explicit ProcessGroup(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

/// An all-reduce in flight.
class ProcessGroup::Pending {
 public:
  void wait();
  struct Impl;
  explicit Pending(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<Impl> impl_;
};

/// The rows of every rank's `local` in rank order, differentiable: the backward keeps the
/// gradient of the local rows. Every rank computes the same loss over the gathered rows, so
/// each rank's share of the gradient is exactly its own rows' (the reference's
/// gather_input_tensor, with unequal batch sizes allowed).
at::Tensor gather_rows(const ProcessGroup& group, const at::Tensor& local);

/// Wraps a type-erased Loss so that it sees the representations of all ranks: each argument is
/// gathered with gather_rows before `loss` runs (what DistributedGradCache does by default;
/// the functional API's gradcache::functional::gather_input_tensor takes any callable and an
/// axis). With hard negatives every rank must use the same k.
Loss gather_input_tensor(const ProcessGroup& group, Loss loss);

/// The gradients a step accumulated, summed over the ranks once per step, in buckets of
/// about `bucket_bytes`. A tensor listed twice (tied encoders) is synchronised once.
class GradientSynchronizer {
 public:
  GradientSynchronizer(ProcessGroup group, int64_t bucket_bytes = int64_t{4} << 20);
  /// Starts summing the gradients of `params` (those that have one) across the ranks.
  void start(const std::vector<at::Tensor>& params);
  /// Waits for everything started, and writes the sums back into the gradients.
  void finish();
  /// Bytes sent into all-reduces since construction (the payload, per rank).
  int64_t bytes_reduced() const { return bytes_reduced_; }

 private:
  struct Bucket;
  ProcessGroup group_;
  int64_t bucket_bytes_;
  std::vector<std::shared_ptr<Bucket>> in_flight_;
  std::vector<const void*> started_;  // gradients already in flight this step
  int64_t bytes_reduced_ = 0;
};

/// Whether any rank passed true (a collective: every rank must call it). For
/// GradScalerOptions::agree_found_inf, so that all ranks skip an fp16 overflow step together.
std::function<bool(bool)> any_rank(const ProcessGroup& group);

struct DistributedOptions {
  /// Gradients are summed in buckets of about this many bytes.
  TORCH_ARG(int64_t, bucket_bytes) = int64_t{4} << 20;
  /// Whether the loss is given every rank's representations (gathered with gather_rows), as a
  /// loss written for one process needs. False for a loss that combines the ranks itself
  /// (ShardedContrastiveLoss): it is given only this rank's.
  TORCH_ARG(bool, gather_inputs) = true;
};

/// GradCache across processes. By default the loss sees the representations of every rank
/// (it is wrapped with gather_input_tensor) and each rank caches the gradient of its own rows;
/// with DistributedOptions().gather_inputs(false) and a ShardedContrastiveLoss, each rank
/// computes only its share of the loss and no rank holds the whole batch (sharded_loss.h).
/// After the last use of each module its parameter gradients are summed over the ranks: once
/// per step (the reference's no_sync_except_last), in buckets, and asynchronously, so the next
/// model's replay overlaps the communication. W ranks with N/W examples each get the
/// gradients of one process with all N. Local batch sizes may differ.
class DistributedGradCache : public GradCache {
 public:
  DistributedGradCache(ProcessGroup group, std::vector<Model> models, std::vector<int64_t> chunk_sizes, Loss loss_fn,
                       GradCacheOptions options = {}, DistributedOptions distributed = {});
  DistributedGradCache(ProcessGroup group, std::vector<Model> models, int64_t chunk_size, Loss loss_fn,
                       GradCacheOptions options = {}, DistributedOptions distributed = {});

  const ProcessGroup& group() const { return group_; }
  /// Bytes of gradients all-reduced so far (per rank).
  int64_t bytes_reduced() const { return synchronizer_.bytes_reduced(); }

 protected:
  void on_model_backward_done(size_t model_index) override;

 private:
  ProcessGroup group_;
  GradientSynchronizer synchronizer_;
};

}  // namespace distributed
}  // namespace gradcache
