#include <gradcache/distributed.h>

#include "detail/compat.h"

#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef GRADCACHE_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <sstream>
#include <unordered_set>

namespace gradcache {
namespace distributed {


struct ProcessGroup::Impl {
  int rank = 0, world_size = 1, local_rank = 0;
  ProcessGroupOptions options;
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<GRADCACHE_C10D_BACKEND> backend;

  // Runs a collective and turns a peer's failure or a timeout into a clear error.
  template <class Fn>
  void run(const char* what, Fn&& fn) const {
    try {
      auto work = fn();
      work->wait(options.timeout());
    } catch (const std::exception& e) {
      std::ostringstream message;
      message << "gradcache distributed: " << what << " failed on rank " << rank << " of " << world_size
              << " (another rank stopped, crashed or did not answer within "
              << std::chrono::duration<double>(options.timeout()).count() << " s): " << first_line(e.what());
      throw std::runtime_error(message.str());
    }
  }
  static std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }
};

struct ProcessGroup::Pending::Impl {
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  std::vector<at::Tensor> tensors;  // kept alive until the transfers end
  std::shared_ptr<ProcessGroup::Impl> group;
  const char* what = "all-reduce of gradients";
};

namespace {

std::shared_ptr<::gloo::transport::Device> gloo_device(const Rendezvous& r) {
  if (!r.socket_interface.empty()) return c10d::ProcessGroupGloo::createDeviceForInterface(r.socket_interface);
  if (r.address == "127.0.0.1" || r.address == "localhost") {
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  }
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

// The store of the rendezvous, under the prefix this group's keys live in.
c10::intrusive_ptr<c10d::Store> connect_store(const Rendezvous& r, const ProcessGroupOptions& options,
                                              c10::intrusive_ptr<c10d::Store>& root) {
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<std::uint16_t>(r.port);
  store_options.isServer = r.rank == 0 && !r.agent_store;
  store_options.numWorkers = static_cast<size_t>(r.world_size);
  store_options.waitWorkers = !r.agent_store;
  store_options.timeout = options.timeout();
  root = c10::make_intrusive<c10d::TCPStore>(r.address, store_options);
  // Under torchrun's agent, keys live under its per-attempt prefix (as torch.distributed's env:// does).
  const std::string prefix =
      r.agent_store ? "/worker/attempt_" + std::to_string(r.restart_count) + "/gradcache" : "gradcache";
  return c10::make_intrusive<c10d::PrefixStore>(prefix, root);
}

c10::intrusive_ptr<GRADCACHE_C10D_BACKEND> make_backend(const std::string& backend, const Rendezvous& r,
                                                        const ProcessGroupOptions& options,
                                                        const c10::intrusive_ptr<c10d::Store>& store) {
  if (backend == "gloo") {
    auto gloo_options = c10d::ProcessGroupGloo::Options::create(options.timeout());
    gloo_options->devices.push_back(gloo_device(r));
    return c10::make_intrusive<c10d::ProcessGroupGloo>(store, r.rank, r.world_size, gloo_options);
  }
#ifdef GRADCACHE_WITH_NCCL
  if (backend == "nccl") {
    auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
    nccl_options->timeout = options.timeout();
    return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, r.rank, r.world_size, nccl_options);
  }
#endif
  TORCH_CHECK(false, "backend '", backend, "' is not available in this build (gloo",
#ifdef GRADCACHE_WITH_NCCL
              ", nccl",
#endif
              ")");
}

// FNV-1a: the same on every rank and build, unlike std::hash.
int64_t fingerprint(const std::string& text) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
  return static_cast<int64_t>(h >> 1);
}

}  // namespace

ProcessGroup ProcessGroup::create(const Rendezvous& r, const ProcessGroupOptions& options) {
  TORCH_CHECK(r.world_size >= 1 && r.rank >= 0 && r.rank < r.world_size, "gradcache distributed: rank ", r.rank,
              " is not in a group of ", r.world_size);
  TORCH_CHECK(r.port > 0 && r.port < 65536, "gradcache distributed: port ", r.port, " is not a TCP port");
  auto impl = std::make_shared<Impl>();
  impl->rank = r.rank;
  impl->world_size = r.world_size;
  impl->local_rank = r.local_rank >= 0 ? r.local_rank : r.rank;
  impl->options = options;
  std::string backend = options.backend();
  if (backend.empty()) backend = options.device().is_cuda() ? "nccl" : "gloo";
  try {
    const auto store = connect_store(r, options, impl->store);
    impl->backend = make_backend(backend, r, options, store);
  } catch (const std::exception& e) {
    throw std::runtime_error("gradcache distributed: rank " + std::to_string(r.rank) + " of " +
                             std::to_string(r.world_size) + " could not join the group at " + r.address + ":" +
                             std::to_string(r.port) + " within " +
                             std::to_string(std::chrono::duration_cast<std::chrono::seconds>(options.timeout()).count()) +
                             " s (did every rank start? is the address reachable?): " + Impl::first_line(e.what()));
  }
  return ProcessGroup(std::move(impl));
}

int ProcessGroup::rank() const { return impl_->rank; }
int ProcessGroup::world_size() const { return impl_->world_size; }
int ProcessGroup::local_rank() const { return impl_->local_rank; }
const ProcessGroupOptions& ProcessGroup::options() const { return impl_->options; }

at::Tensor ProcessGroup::all_gather_rows(const at::Tensor& local) const {
  c10::NoGradGuard no_grad;
  const auto device = impl_->options.device();
  // Sizes first: ranks may hold different numbers of rows; the gather itself needs equal shapes.
  std::vector<at::Tensor> size_in{at::tensor({local.size(0)}, at::TensorOptions(at::kLong)).to(device)};
  std::vector<std::vector<at::Tensor>> size_out(1);
  for (int r = 0; r < world_size(); ++r) size_out[0].push_back(at::empty_like(size_in[0]));
  impl_->run("all-gather of batch sizes", [&] { return impl_->backend->allgather(size_out, size_in); });
  std::vector<int64_t> sizes;
  for (const auto& s : size_out[0]) sizes.push_back(s.item<int64_t>());
  const int64_t longest = *std::max_element(sizes.begin(), sizes.end());

  auto padded = local.to(device).contiguous();
  if (local.size(0) < longest) {
    auto shape = local.sizes().vec();
    shape[0] = longest - local.size(0);
    padded = at::cat({padded, at::zeros(shape, padded.options())}, 0);
  }
  std::vector<at::Tensor> in{padded};
  std::vector<std::vector<at::Tensor>> out(1);
  for (int r = 0; r < world_size(); ++r) out[0].push_back(at::empty_like(padded));
  impl_->run("all-gather of representations", [&] { return impl_->backend->allgather(out, in); });
  std::vector<at::Tensor> rows;
  for (int r = 0; r < world_size(); ++r) rows.push_back(out[0][r].slice(0, 0, sizes[r]));
  return at::cat(rows, 0).to(local.device());
}

void ProcessGroup::all_reduce_sum(std::vector<at::Tensor>& tensors) const {
  for (auto& t : tensors) all_reduce_sum_async(t).wait();
}

ProcessGroup::Pending ProcessGroup::all_reduce_sum_async(at::Tensor tensor) const {
  auto pending = std::make_shared<Pending::Impl>();
  pending->group = impl_;
  std::vector<at::Tensor> tensors{std::move(tensor)};
  c10d::AllreduceOptions options;
  options.reduceOp = c10d::ReduceOp::SUM;
  try {
    pending->works.push_back(impl_->backend->allreduce(tensors, options));
  } catch (const std::exception& e) {
    throw std::runtime_error("gradcache distributed: all-reduce failed on rank " + std::to_string(rank()) + ": " +
                             Impl::first_line(e.what()));
  }
  return Pending(std::move(pending));
}

void ProcessGroup::Pending::wait() {
  if (!impl_) return;
  auto works = std::move(impl_->works);
  impl_->works.clear();
  for (auto& work : works) impl_->group->run(impl_->what, [&] { return work; });
  impl_->tensors.clear();
}

ProcessGroup::Pending ProcessGroup::shift_ring_async(const at::Tensor& to_next, at::Tensor from_previous,
                                                     int tag) const {
  auto pending = std::make_shared<Pending::Impl>();
  pending->group = impl_;
  pending->what = "ring exchange of representations";
  const int next = (rank() + 1) % world_size(), previous = (rank() + world_size() - 1) % world_size();
  std::vector<at::Tensor> out{to_next.contiguous()}, in{std::move(from_previous)};
  TORCH_CHECK(in[0].is_contiguous(), "shift_ring_async: the receiving tensor must be contiguous");
  try {
    pending->works.push_back(impl_->backend->send(out, next, tag));
    pending->works.push_back(impl_->backend->recv(in, previous, tag));
  } catch (const std::exception& e) {
    throw std::runtime_error("gradcache distributed: ring exchange failed on rank " + std::to_string(rank()) + ": " +
                             Impl::first_line(e.what()));
  }
  pending->tensors = {out[0], in[0]};
  return Pending(std::move(pending));
}

void ProcessGroup::barrier() const {
  impl_->run("barrier", [&] { return impl_->backend->barrier(); });
}

void ProcessGroup::check_same(const std::string& what, const std::string& value) const {
  const auto all = all_gather_rows(at::tensor({fingerprint(value)}, at::TensorOptions(at::kLong)));
  std::vector<int> differ;
  for (int r = 0; r < world_size(); ++r) {
    if (all[r].item<int64_t>() != all[0].item<int64_t>()) differ.push_back(r);
  }
  if (differ.empty()) return;
  std::string ranks;
  for (int r : differ) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  throw std::invalid_argument("gradcache distributed: the ranks were started with different " + what +
                              ": rank(s) " + ranks + " differ from rank 0; start every rank with the same settings");
}

namespace {

// All-gather with a gradient: the backward keeps the local rows' slice.
struct GatherRows : torch::autograd::Function<GatherRows> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& local,
                            const ProcessGroup* group) {
    const auto sizes = group->all_gather_rows(at::tensor({local.size(0)}, at::TensorOptions(at::kLong)));
    int64_t offset = 0;
    for (int r = 0; r < group->rank(); ++r) offset += sizes[r].item<int64_t>();
    ctx->saved_data["offset"] = offset;
    ctx->saved_data["rows"] = local.size(0);
    return group->all_gather_rows(local);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad) {
    const auto offset = ctx->saved_data["offset"].toInt(), rows = ctx->saved_data["rows"].toInt();
    return {grad[0].slice(0, offset, offset + rows), at::Tensor()};
  }
};

}  // namespace

at::Tensor gather_rows(const ProcessGroup& group, const at::Tensor& local) {
  if (group.world_size() == 1) return local;
  return GatherRows::apply(local, &group);
}

Loss gather_input_tensor(const ProcessGroup& group, Loss loss) {
  return Loss([group, loss](const std::vector<at::Tensor>& reps, const LossArgs& args) {
    std::vector<at::Tensor> global;
    for (const auto& r : reps) global.push_back(gather_rows(group, r));
    return loss(global, args);
  });
}

// ---- gradient synchronisation -------------------------------------------------------------

struct GradientSynchronizer::Bucket {
  std::vector<at::Tensor> grads;  // the gradients it carries
  at::Tensor flat;                // their concatenation, summed in place
  ProcessGroup::Pending pending{nullptr};
};

GradientSynchronizer::GradientSynchronizer(ProcessGroup group, int64_t bucket_bytes)
    : group_(std::move(group)), bucket_bytes_(bucket_bytes) {
  TORCH_CHECK(bucket_bytes > 0, "GradientSynchronizer: bucket size must be positive, got ", bucket_bytes);
}

void GradientSynchronizer::start(const std::vector<at::Tensor>& params) {
  std::shared_ptr<Bucket> bucket;
  int64_t bucket_size = 0;
  auto launch = [&] {
    if (!bucket) return;
    std::vector<at::Tensor> flat;
    for (const auto& g : bucket->grads) flat.push_back(g.reshape({-1}));
    bucket->flat = at::cat(flat);
    bytes_reduced_ += bucket->flat.numel() * static_cast<int64_t>(bucket->flat.element_size());
    bucket->pending = group_.all_reduce_sum_async(bucket->flat);
    in_flight_.push_back(bucket);
    bucket.reset();
    bucket_size = 0;
  };
  for (const auto& p : params) {
    const auto& g = p.grad();
    if (!g.defined()) continue;
    const void* key = g.unsafeGetTensorImpl();
    if (std::find(started_.begin(), started_.end(), key) != started_.end()) continue;  // tied: once
    started_.push_back(key);
    // Buckets hold one dtype and device each.
    if (bucket && (bucket->grads.front().scalar_type() != g.scalar_type() ||
                   bucket->grads.front().device() != g.device())) {
      launch();
    }
    if (!bucket) bucket = std::make_shared<Bucket>();
    bucket->grads.push_back(g);
    bucket_size += g.numel() * static_cast<int64_t>(g.element_size());
    if (bucket_size >= bucket_bytes_) launch();
  }
  launch();
}

void GradientSynchronizer::finish() {
  auto buckets = std::move(in_flight_);
  in_flight_.clear();
  started_.clear();
  c10::NoGradGuard no_grad;
  for (auto& bucket : buckets) {
    bucket->pending.wait();
    int64_t offset = 0;
    for (auto& g : bucket->grads) {
      g.copy_(bucket->flat.slice(0, offset, offset + g.numel()).view_as(g));
      offset += g.numel();
    }
  }
}

// ---- the distributed cache ------------------------------------------------------------------

DistributedGradCache::DistributedGradCache(ProcessGroup group, std::vector<Model> models,
                                           std::vector<int64_t> chunk_sizes, Loss loss_fn, GradCacheOptions options,
                                           DistributedOptions distributed)
    : GradCache(std::move(models), std::move(chunk_sizes),
                distributed.gather_inputs() ? gather_input_tensor(group, std::move(loss_fn)) : std::move(loss_fn),
                std::move(options)),
      group_(group),
      synchronizer_(group, distributed.bucket_bytes()) {}

DistributedGradCache::DistributedGradCache(ProcessGroup group, std::vector<Model> models, int64_t chunk_size,
                                           Loss loss_fn, GradCacheOptions options, DistributedOptions distributed)
    : DistributedGradCache(std::move(group), std::move(models), std::vector<int64_t>{chunk_size}, std::move(loss_fn),
                           std::move(options), distributed) {}

void DistributedGradCache::on_model_backward_done(size_t model_index) {
  // A module's gradients are complete after its last use: start summing them while the next
  // model replays; the step ends when the last model's hook has waited for all of them.
  if (last_use_of_module(model_index)) synchronizer_.start(models()[model_index].parameters());
  if (model_index + 1 == models().size()) synchronizer_.finish();
}

std::function<bool(bool)> any_rank(const ProcessGroup& group) {
  return [group](bool local) {
    std::vector<at::Tensor> flag{
        at::full({1}, local ? 1.0 : 0.0, at::TensorOptions().dtype(at::kFloat).device(group.options().device()))};
    group.all_reduce_sum(flag);
    return flag[0].item<float>() > 0;
  };
}

}  // namespace distributed
}  // namespace gradcache
