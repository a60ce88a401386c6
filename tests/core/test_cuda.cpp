// The CUDA paths: RNG replay of CUDA dropout, the cache against a real full-batch backward on
// the GPU, fp16 autocast with the GradScaler, bf16, and the memory a cache step saves at a
// large batch. Every test is SKIPPED (GTEST_SKIP, which ctest reports as skipped) where CUDA is
// not available; scripts/gpu_check.sh runs them on a machine with a GPU and collects the
// figures they record (RecordProperty) from gtest's JSON output.
//
// Tolerances: as on CPU (test_grad_cache.cpp, test_precision.cpp). The cache changes only the
// order of summation, and cuBLAS may pick other kernels for a chunk's GEMM than for the whole
// batch's: about n * eps for reductions of n ~ 100 terms, so kTol64 = 1e-13 in float64 and
// kTol32 = 1e-5 in float32 (TF32 is off for matmuls by default in LibTorch). Against a chunked
// full batch in fp16/bf16 both sides run the same low-precision operations on the same values;
// only the fp32 sum of the chunks' weight-gradient contributions is ordered differently, hence
// kTolSameLow = 1e-5. A replay without the recorded CUDA generator state gives other dropout
// masks and errors of order 1e-1.
#include "test_util.h"

#ifdef GRADCACHE_WITH_DISTRIBUTED
#include <gradcache/distributed.h>
#endif

#include <unistd.h>

namespace gc = gradcache;
using gctest::full_batch_chunked;
using gctest::grads_of;
using gctest::params_of;
using gctest::kTol32;
using gctest::kTol64;
using gctest::max_rel_error;
using gctest::recording;
using gctest::Recorder;
using gctest::report_error;
using gctest::zero_grads;

namespace {

constexpr double kTolSameLow = 1e-5;

#define SKIP_WITHOUT_CUDA()                                                                 \
  do {                                                                                      \
    if (!torch::cuda::is_available()) GTEST_SKIP() << "CUDA is not available on this machine"; \
  } while (0)

const torch::Device kCuda(torch::kCUDA, 0);


std::vector<torch::Tensor> cache_grads(gc::GradCache& cache, std::initializer_list<torch::nn::Module*> modules,
                                       const torch::Tensor& x, const torch::Tensor& y) {
  auto params = params_of(modules);
  zero_grads(params);
  cache({x, y});
  return grads_of(params);
}

// A cache whose step 1 does not record the generators: the replay draws fresh dropout masks.
struct NoReplay : gc::GradCache {
  using gc::GradCache::GradCache;
  ForwardResult forward_no_grad(size_t i, const std::vector<gc::ModelInput>& chunks) override {
    auto r = gc::GradCache::forward_no_grad(i, chunks);
    for (auto& c : r.chunks) c.rng_state = gc::RngState::capture({kCuda});
    return r;
  }
};

}  // namespace

TEST(Cuda, DropoutReplayIsBitIdenticalAndGradientsMatchFloat64) {
  SKIP_WITHOUT_CUDA();
  torch::manual_seed(3);
  gctest::Mlp q(32, 64, 16, /*dropout=*/0.3), p(32, 64, 16, /*dropout=*/0.3);
  q->to(kCuda, torch::kFloat64);
  p->to(kCuda, torch::kFloat64);
  auto x = torch::randn({64, 32}, torch::dtype(torch::kFloat64).device(kCuda));
  auto y = torch::randn({64, 32}, torch::dtype(torch::kFloat64).device(kCuda));
  auto rec_q = std::make_shared<Recorder>(), rec_p = std::make_shared<Recorder>();
  gc::GradCache cache({recording(q, rec_q), recording(p, rec_p)}, 12, gc::SimpleContrastiveLoss(),
                      gc::GradCacheOptions().retain_chunks(0));

  torch::manual_seed(42);
  auto full = full_batch_chunked(q, p, x, y, 12, gc::SimpleContrastiveLoss(), gc::Precision::fp32, kCuda);
  rec_q->grad_outputs.clear();
  rec_p->grad_outputs.clear();
  torch::manual_seed(42);
  auto cached = cache_grads(cache, {q.ptr().get(), p.ptr().get()}, x, y);

  for (auto* rec : {rec_q.get(), rec_p.get()}) {
    ASSERT_EQ(rec->no_grad_outputs.size(), 6u);  // 64 rows in chunks of 12
    ASSERT_EQ(rec->grad_outputs.size(), 6u);
    for (size_t c = 0; c < 6; ++c) {
      EXPECT_TRUE(rec->no_grad_outputs[c].is_cuda());
      EXPECT_TRUE(torch::equal(rec->no_grad_outputs[c], rec->grad_outputs[c])) << "chunk " << c;
    }
  }
  const double err = max_rel_error(cached, full);
  report_error("CUDA, dropout 0.3, float64, 64 rows in chunks of 12", err);
  ::testing::Test::RecordProperty("cuda_dropout_fp64_error", std::to_string(err));
  EXPECT_LT(err, kTol64);

  // Guard: without the CUDA generator's recorded state the masks differ and so do the gradients.
  NoReplay broken({q, p}, 12, gc::SimpleContrastiveLoss(), gc::GradCacheOptions().retain_chunks(0));
  torch::manual_seed(42);
  auto wrong = cache_grads(broken, {q.ptr().get(), p.ptr().get()}, x, y);
  EXPECT_GT(max_rel_error(wrong, full), 1e-3);
}

TEST(Cuda, TransformerWithDropoutMatchesFullBatchFloat32) {
  SKIP_WITHOUT_CUDA();
  torch::manual_seed(5);
  gctest::TextEncoder q(100, 32, /*dropout=*/0.1), p(100, 32, /*dropout=*/0.1);
  q->to(kCuda);
  p->to(kCuda);
  const int64_t rows = 48, len = 16, chunk = 8;
  auto ids_q = torch::randint(1, 100, {rows, len}, torch::dtype(torch::kLong).device(kCuda));
  auto ids_p = torch::randint(1, 100, {rows, len}, torch::dtype(torch::kLong).device(kCuda));
  auto mask = torch::ones({rows, len}, torch::dtype(torch::kLong).device(kCuda));
  mask.slice(1, 10) = 0;
  gc::ModelInput in_q(std::map<std::string, torch::Tensor>{{"input_ids", ids_q}, {"attention_mask", mask}});
  gc::ModelInput in_p(std::map<std::string, torch::Tensor>{{"input_ids", ids_p}, {"attention_mask", mask}});
  gc::GradCache cache({q, p}, chunk, gc::SimpleContrastiveLoss(), gc::GradCacheOptions().retain_chunks(0));

  auto params = params_of({q.ptr().get(), p.ptr().get()});
  torch::manual_seed(7);
  zero_grads(params);
  std::vector<torch::Tensor> reps;
  for (size_t m = 0; m < 2; ++m) {
    std::vector<torch::Tensor> parts;
    for (const auto& c : gc::split_input(m == 0 ? in_q : in_p, chunk)) parts.push_back(cache.models()[m](c).toTensor());
    reps.push_back(torch::cat(parts, 0));
  }
  gc::SimpleContrastiveLoss()(reps, {}).backward();
  auto full = grads_of(params);
  torch::manual_seed(7);
  zero_grads(params);
  cache({in_q, in_p});
  const double err = max_rel_error(grads_of(params), full);
  report_error("CUDA, Transformer layer with dropout 0.1, float32, 48 rows in chunks of 8", err);
  ::testing::Test::RecordProperty("cuda_transformer_fp32_error", std::to_string(err));
  EXPECT_LT(err, kTol32);
}

TEST(Cuda, Fp16WithGradScalerMatchesFp16FullBatch) {
  SKIP_WITHOUT_CUDA();
  torch::manual_seed(11);
  gctest::Mlp q(32, 64, 16, /*dropout=*/0.2), p(32, 64, 16, /*dropout=*/0.2);
  q->to(kCuda);
  p->to(kCuda);
  auto x = torch::randn({48, 32}, kCuda), y = torch::randn({48, 32}, kCuda);
  gc::Loss loss = gc::SimpleContrastiveLoss(gc::ContrastiveLossOptions().temperature(0.5));
  const double scale = 1024;
  auto scaler = std::make_shared<gc::GradScaler>(gc::GradScalerOptions().init_scale(scale));
  auto rec_q = std::make_shared<Recorder>();
  gc::GradCache cache({recording(q, rec_q), p}, 12, loss,
                      gc::GradCacheOptions().precision(gc::Precision::fp16).scaler(scaler).retain_chunks(0));
  torch::manual_seed(5);
  auto full = full_batch_chunked(q, p, x, y, 12, loss, gc::Precision::fp16, kCuda, scale);
  rec_q->grad_outputs.clear();
  torch::manual_seed(5);
  auto cached = cache_grads(cache, {q.ptr().get(), p.ptr().get()}, x, y);
  ASSERT_EQ(rec_q->grad_outputs.size(), 4u);
  for (size_t c = 0; c < 4; ++c) {
    EXPECT_EQ(rec_q->grad_outputs[c].scalar_type(), torch::kHalf);  // autocast was on in the replay
    EXPECT_TRUE(torch::equal(rec_q->no_grad_outputs[c], rec_q->grad_outputs[c])) << "chunk " << c;
  }
  const double err = max_rel_error(cached, full);
  report_error("CUDA, fp16 autocast + GradScaler (1024), dropout 0.2, vs chunked fp16 full batch", err);
  ::testing::Test::RecordProperty("cuda_fp16_scaled_error", std::to_string(err));
  EXPECT_LT(err, kTolSameLow);

  // The scaler unscales and steps: the update is the unscaled gradient's.
  auto params = params_of({q.ptr().get(), p.ptr().get()});
  torch::optim::SGD sgd(params, torch::optim::SGDOptions(0.1));
  scaler->unscale_(sgd);
  std::vector<torch::Tensor> unscaled;
  for (const auto& g : full) unscaled.push_back(g / scale);
  EXPECT_LT(max_rel_error(grads_of(params), unscaled), kTolSameLow);
  EXPECT_TRUE(scaler->step(sgd));
  scaler->update();
}

TEST(Cuda, Bf16WithDropoutMatchesBf16FullBatch) {
  SKIP_WITHOUT_CUDA();
  torch::manual_seed(12);
  gctest::Mlp q(32, 64, 16, /*dropout=*/0.2), p(32, 64, 16, /*dropout=*/0.2);
  q->to(kCuda);
  p->to(kCuda);
  auto x = torch::randn({48, 32}, kCuda), y = torch::randn({48, 32}, kCuda);
  gc::Loss loss = gc::SimpleContrastiveLoss(gc::ContrastiveLossOptions().temperature(0.5));
  gc::GradCache cache({q, p}, 12, loss, gc::GradCacheOptions().precision(gc::Precision::bf16).retain_chunks(0));
  torch::manual_seed(6);
  auto full = full_batch_chunked(q, p, x, y, 12, loss, gc::Precision::bf16, kCuda);
  torch::manual_seed(6);
  auto cached = cache_grads(cache, {q.ptr().get(), p.ptr().get()}, x, y);
  const double err = max_rel_error(cached, full);
  report_error("CUDA, bf16 autocast, dropout 0.2, vs chunked bf16 full batch", err);
  ::testing::Test::RecordProperty("cuda_bf16_error", std::to_string(err));
  EXPECT_LT(err, kTolSameLow);
  // bf16 really changed the computation.
  gc::GradCache fp32({q, p}, 12, loss, gc::GradCacheOptions().retain_chunks(0));
  torch::manual_seed(6);
  EXPECT_GT(max_rel_error(cache_grads(fp32, {q.ptr().get(), p.ptr().get()}, x, y), full), 1e-4);
}

// At a batch of 4096 the full batch keeps every row's activations until the backward; the cache
// keeps one chunk's. The peak of CUDA memory allocated (gradcache::memory_stats) of both.
TEST(Cuda, CacheStepPeakMemoryAtBatch4096) {
  SKIP_WITHOUT_CUDA();
  torch::manual_seed(13);
  const int64_t batch = 4096, chunk = 256, in = 256, hidden = 4096, out = 256;
  gctest::Mlp q(in, hidden, out, 0.1), p(in, hidden, out, 0.1);
  q->to(kCuda);
  p->to(kCuda);
  auto x = torch::randn({batch, in}, kCuda), y = torch::randn({batch, in}, kCuda);
  auto params = params_of({q.ptr().get(), p.ptr().get()});
  auto peak_of = [&](auto&& step) {
    zero_grads(params);
    torch::cuda::synchronize();
    gc::reset_peak_memory(kCuda);
    const int64_t before = gc::memory_stats(kCuda)->current;
    step();
    torch::cuda::synchronize();
    return gc::memory_stats(kCuda)->peak - before;
  };
  const int64_t full = peak_of([&] { gc::SimpleContrastiveLoss()(q(x), p(y)).backward(); });
  gc::GradCache cache({q, p}, chunk, gc::SimpleContrastiveLoss(), gc::GradCacheOptions().retain_chunks(0));
  const int64_t cached = peak_of([&] { cache({x, y}); });
  std::cout << "[figure] CUDA peak memory above the model at batch " << batch << ": full batch " << full
            << " bytes, cache (chunks of " << chunk << ") " << cached << " bytes" << std::endl;
  ::testing::Test::RecordProperty("cuda_memory_batch", std::to_string(batch));
  ::testing::Test::RecordProperty("cuda_memory_chunk", std::to_string(chunk));
  ::testing::Test::RecordProperty("cuda_memory_full_batch_peak_bytes", std::to_string(full));
  ::testing::Test::RecordProperty("cuda_memory_cache_peak_bytes", std::to_string(cached));
  // Activations: the full batch holds batch x hidden floats per model (x 2-3 for tanh, dropout's
  // mask and output); the cache one chunk's. Gradients of the weights are held by both.
  EXPECT_LT(cached, full / 2);
}

#ifdef GRADCACHE_WITH_DISTRIBUTED
// An NCCL group of one process on GPU 0 (one GPU cannot hold two NCCL ranks): it forms, and its
// collectives act on CUDA tensors as a group of one must (a gather returns the rows, a sum the
// values).
TEST(Cuda, NcclGroupOfOneGathersAndSums) {
  SKIP_WITHOUT_CUDA();
  namespace gd = gradcache::distributed;
  gd::Rendezvous r;
  r.port = 20000 + static_cast<int>(::getpid() % 20000);
  auto group = gd::ProcessGroup::create(r, gd::ProcessGroupOptions().backend("nccl").device(kCuda));
  auto rows = torch::randn({5, 3}, kCuda);
  EXPECT_TRUE(torch::equal(group.all_gather_rows(rows), rows));
  std::vector<torch::Tensor> sums{rows.clone()};
  group.all_reduce_sum(sums);
  EXPECT_TRUE(torch::equal(sums[0], rows));
  group.barrier();
}
#endif
