// Memory: the CPU tracking allocator, retained chunks (exact gradients, fewer replays), the
// memory budget, and chunk sizes chosen by measurement.
#include "test_util.h"

namespace gc = gradcache;
using gctest::kTol64;

namespace {


// Counts the model's forward calls with grad (replays and retained chunks) and without.
struct CallCounter {
  int with_grad = 0, without_grad = 0;
};
gc::Model counting(gctest::Mlp mlp, std::shared_ptr<CallCounter> calls) {
  return gc::Model([mlp, calls](const torch::Tensor& x) mutable {
           (torch::GradMode::is_enabled() ? calls->with_grad : calls->without_grad)++;
           return mlp(x);
         })
      .with_state_of(mlp);
}

// The chunked fp32 full batch, its gradients cleared again for the cache's step.
std::vector<torch::Tensor> chunked_reference(gctest::Mlp q, gctest::Mlp p, const torch::Tensor& x,
                                             const torch::Tensor& y, int64_t chunk) {
  auto grads = gctest::full_batch_chunked(q, p, x, y, chunk, gc::SimpleContrastiveLoss());
  gctest::zero_grads(gctest::params_of({q.ptr().get(), p.ptr().get()}));
  return grads;
}

}  // namespace

TEST(CpuMemoryTracker, CountsLiveTensorBytesAndThePeak) {
  gc::CpuMemoryTracker::install();
  gc::CpuMemoryTracker::install();  // idempotent
  ASSERT_TRUE(gc::CpuMemoryTracker::installed());
  const auto before = gc::CpuMemoryTracker::stats().current;
  gc::reset_peak_memory(c10::kCPU);
  {
    auto a = torch::empty({1 << 20}, torch::kFloat32);  // 4 MiB
    EXPECT_GE(gc::CpuMemoryTracker::stats().current - before, 4 << 20);
  }
  EXPECT_LT(gc::CpuMemoryTracker::stats().current - before, 4 << 20);
  EXPECT_GE(gc::memory_stats(c10::kCPU)->peak - before, 4 << 20);
  gc::reset_peak_memory(c10::kCPU);
  EXPECT_EQ(gc::memory_stats(c10::kCPU)->peak, gc::memory_stats(c10::kCPU)->current);
}

TEST(RetainedChunks, AreNotReplayedAndGradientsStayExact) {
  torch::manual_seed(0);
  gctest::Mlp q(8, 32, 8, /*dropout=*/0.3), p(8, 32, 8, /*dropout=*/0.3);
  q->to(torch::kFloat64);
  p->to(torch::kFloat64);
  auto x = torch::randn({20, 8}, torch::kFloat64), y = torch::randn({20, 8}, torch::kFloat64);
  torch::manual_seed(7);
  const auto full = chunked_reference(q, p, x, y, 4);  // 5 chunks per model
  for (int64_t retain : {-1, 0, 1, 3, 5, 9}) {
    auto calls_q = std::make_shared<CallCounter>(), calls_p = std::make_shared<CallCounter>();
    gc::GradCache cache({counting(q, calls_q), counting(p, calls_p)}, 4, gc::SimpleContrastiveLoss(),
                        gc::GradCacheOptions().retain_chunks(retain));
    torch::manual_seed(7);
    cache({x, y});
    auto params = q->parameters();
    auto pp = p->parameters();
    params.insert(params.end(), pp.begin(), pp.end());
    const double err = gctest::max_rel_error(gctest::grads_of(params), full);
    gctest::zero_grads(params);
    // -1 without retain_memory retains nothing (the paper's algorithm).
    const int kept = retain < 0 ? 0 : static_cast<int>(std::min<int64_t>(retain, 5));
    gctest::report_error("retain_chunks " + std::to_string(retain) + ", dropout 0.3, float64", err);
    EXPECT_LT(err, kTol64) << "retain " << retain;
    // Step 1: kept chunks with grad, the others without; step 3: only the others again.
    EXPECT_EQ(calls_q->without_grad, 5 - kept) << "retain " << retain;
    EXPECT_EQ(calls_q->with_grad, kept + (5 - kept)) << "retain " << retain;
    EXPECT_EQ(calls_p->with_grad, 5) << "retain " << retain;
  }
}

TEST(RetainedChunks, MemoryBudgetKeepsWhatFitsExactly) {
  gc::CpuMemoryTracker::install();
  torch::manual_seed(1);
  gctest::Mlp q(16, 256, 16, 0.1), p(16, 256, 16, 0.1);
  auto x = torch::randn({64, 16}), y = torch::randn({64, 16});

  // What one chunk of 8 rows holds for backward, measured the way the cache measures it.
  int64_t chunk_bytes = 0;
  {
    const auto before = gc::CpuMemoryTracker::stats().current;
    auto rep = q(x.slice(0, 0, 8));
    chunk_bytes = gc::CpuMemoryTracker::stats().current - before;
  }
  ASSERT_GT(chunk_bytes, 0);

  struct Inspect : gc::GradCache {
    using gc::GradCache::GradCache;
    std::vector<int64_t> kept, bytes;
    ForwardResult forward_no_grad(size_t i, const std::vector<gc::ModelInput>& chunks) override {
      auto r = gc::GradCache::forward_no_grad(i, chunks);
      kept.push_back(r.retained_chunks());
      bytes.push_back(r.retained_bytes());
      return r;
    }
  };
  torch::manual_seed(3);
  const auto full = chunked_reference(q, p, x, y, 8);
  // Room for about 5 chunks: the first model keeps 5 (of 8), the second what is left (0).
  const int64_t budget = chunk_bytes * 5 + chunk_bytes / 2;
  Inspect cache({q, p}, 8, gc::SimpleContrastiveLoss(), gc::GradCacheOptions().retain_memory(budget));
  torch::manual_seed(3);
  cache({x, y});
  auto params = q->parameters();
  auto pp = p->parameters();
  params.insert(params.end(), pp.begin(), pp.end());
  EXPECT_LT(gctest::max_rel_error(gctest::grads_of(params), full), 1e-5);  // float32
  ASSERT_EQ(cache.kept.size(), 2u);
  EXPECT_EQ(cache.kept[0], 5);
  EXPECT_EQ(cache.kept[1], 0);
  EXPECT_LE(cache.bytes[0] + cache.bytes[1], budget);
}

TEST(RetentionPolicy, DecidesFromTheRecordsAlone) {
  const gc::RetentionPolicy paper;  // the default: nothing retained
  EXPECT_FALSE(paper.should_retain({}, 4, 8, 0));
  gc::ChunkRecord kept;
  kept.rows = 8;
  kept.retained = true;
  const gc::RetentionPolicy two(2, 0);
  EXPECT_TRUE(two.should_retain({}, 4, 8, 0));
  EXPECT_TRUE(two.should_retain({kept}, 4, 8, 0));
  EXPECT_FALSE(two.should_retain({kept, kept}, 4, 8, 0));

  const gc::RetentionPolicy budget(-1, 1000);
  EXPECT_TRUE(budget.should_retain({}, 4, 8, 0));  // the probe
  kept.graph_bytes = 400;
  EXPECT_TRUE(budget.should_retain({kept}, 4, 8, 0));     // 400 more fit in the 600 left
  EXPECT_FALSE(budget.should_retain({kept}, 4, 8, 300));  // not after 300 retained by other models
  EXPECT_TRUE(budget.fits({kept}, 0, 600));
  EXPECT_FALSE(budget.fits({kept}, 0, 601));
  kept.retained = false;  // the probe did not fit: the model retains nothing more
  EXPECT_FALSE(budget.should_retain({kept}, 4, 1, 0));
}

TEST(RetainedChunks, BadOptionsAreRefused) {
  gctest::Mlp m(4, 4, 4);
  try {
    gc::GradCache({m, m}, 2, gc::SimpleContrastiveLoss(), gc::GradCacheOptions().retain_chunks(-2));
    ADD_FAILURE();
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("retain_chunks must be >= 0"), std::string::npos);
  }
  try {
    gc::GradCache({m, m}, 2, gc::SimpleContrastiveLoss(), gc::GradCacheOptions().retain_memory(-1));
    ADD_FAILURE();
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("retain_memory must be >= 0"), std::string::npos);
  }
}

TEST(FindChunkSize, PicksTheLargestChunkThatFitsByMeasurement) {
  gc::CpuMemoryTracker::install();
  torch::manual_seed(4);
  gctest::Mlp m(32, 512, 32, 0.1);
  auto sample = torch::randn({256, 32});
  const auto grads_before = m->parameters()[0].grad().defined();
  for (int64_t budget : {int64_t{1} << 20, int64_t{3} << 20}) {
    const auto generator = at::globalContext().defaultGenerator(c10::kCPU).get_state();
    const auto probe = gc::find_chunk_size(m, sample, budget);
    EXPECT_TRUE(torch::equal(at::globalContext().defaultGenerator(c10::kCPU).get_state(), generator));
    EXPECT_LE(probe.measured_peak, budget);
    EXPECT_GT(probe.chunk_size, 4);
    EXPECT_LE(probe.chunk_size, 256);
    if (probe.chunk_size < 256) {
      // A chunk a tenth larger does not fit: measured as find_chunk_size measures.
      const int64_t larger = std::min<int64_t>(256, probe.chunk_size + probe.chunk_size / 10 + 1);
      gc::reset_peak_memory(c10::kCPU);
      const auto before = gc::CpuMemoryTracker::stats().current;
      {
        auto rep = m(sample.slice(0, 0, larger));
        torch::autograd::grad({rep}, m->parameters(), {torch::ones_like(rep)});
      }
      EXPECT_GT(gc::CpuMemoryTracker::stats().peak - before, budget) << "chunk " << probe.chunk_size;
    }
  }
  EXPECT_EQ(m->parameters()[0].grad().defined(), grads_before);  // nothing accumulated
  EXPECT_EQ(gc::find_chunk_size(m, torch::randn({10, 32}), int64_t{1} << 30).chunk_size, 10);  // all rows fit
}

TEST(FindChunkSize, MeasuresUnderThePrecisionItIsGiven) {
  gc::CpuMemoryTracker::install();
  torch::manual_seed(5);
  gctest::Mlp m(32, 512, 32, 0.1);
  auto sample = torch::randn({512, 32});
  // 2 MiB: room for a few hundred rows above the fixed cost, which differs between LibTorch
  // versions (torch 2.11 on the GPU machine: 1.1 MB for 4 rows, beyond the 1 MiB this had).
  const int64_t budget = int64_t{2} << 20;
  const auto fp32 = gc::find_chunk_size(m, sample, budget);
  const auto bf16 = gc::find_chunk_size(m, sample, budget, gc::GradCacheOptions().precision(gc::Precision::bf16));
  // bf16 activations take half the bytes of fp32's; measured in fp32, both would be alike.
  EXPECT_LT(bf16.bytes_per_row, 0.8 * fp32.bytes_per_row);
  EXPECT_GT(bf16.chunk_size, fp32.chunk_size);
  // The probe's peak is that of a bf16 forward (autocast around the model call, as step 3
  // runs it) and its backward.
  gc::reset_peak_memory(c10::kCPU);
  const auto before = gc::CpuMemoryTracker::stats().current;
  {
    torch::Tensor rep;
    {
      gc::AutocastScope autocast(gc::Precision::bf16, c10::kCPU);
      rep = m(sample.slice(0, 0, bf16.chunk_size));
    }
    rep = rep.to(torch::kFloat);
    torch::autograd::grad({rep}, m->parameters(), {torch::ones_like(rep)});
  }
  const auto peak = gc::CpuMemoryTracker::stats().peak - before;
  EXPECT_NEAR(static_cast<double>(bf16.measured_peak), static_cast<double>(peak), 0.05 * peak);
}
