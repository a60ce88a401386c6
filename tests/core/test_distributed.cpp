// Data-parallel training with 2 processes on loopback (Gloo). The test binary is its own
// worker: each test starts two copies of it with `--worker SCENARIO RANK WORLD PORT TIMEOUT_MS`
// (each sets up its group explicitly), and checks how they end. Workers compare what they computed with a
// single-process reference they compute themselves (same seed, all the data).
#include "test_util.h"

#include <gradcache/distributed.h>
#include <gradcache/functional.h>
#include <gradcache/matryoshka_loss.h>
#include <gradcache/sharded_loss.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <thread>

extern char** environ;

namespace gc = gradcache;
using gctest::kTol64;
namespace gd = gradcache::distributed;

int worker_gather_dtypes(const gd::ProcessGroup& group);  // test_distributed_gather.cpp

namespace {


// ---- the workers ---------------------------------------------------------------------------

struct Data {
  torch::Tensor x, y;  // all rows; a rank takes its slice
};

Data make_data(int64_t n, int64_t k) {
  torch::manual_seed(123);
  return {torch::randn({n, 6}, torch::kFloat64), torch::randn({n * (1 + k), 6}, torch::kFloat64)};
}

std::pair<gctest::Mlp, gctest::Mlp> make_models(bool tied) {
  torch::manual_seed(7);
  gctest::Mlp q(6, 16, 5), p(6, 16, 5);
  q->to(torch::kFloat64);
  p->to(torch::kFloat64);
  return {q, tied ? q : p};
}

std::vector<torch::Tensor> unique_params(const gctest::Mlp& q, const gctest::Mlp& p) {
  auto params = q->parameters();
  if (q.ptr() != p.ptr()) {
    auto pp = p->parameters();
    params.insert(params.end(), pp.begin(), pp.end());
  }
  return params;
}

// Row ranges of each rank; `uneven` gives rank 0 fewer rows than rank 1.
std::pair<int64_t, int64_t> my_rows(int rank, int64_t n, bool uneven) {
  const int64_t first = uneven ? n / 2 - 1 : n / 2;
  return rank == 0 ? std::make_pair(int64_t{0}, first) : std::make_pair(first, n);
}

int fail(const std::string& message) {
  std::cerr << "worker: " << message << std::endl;
  return 1;
}

// One cache step on each rank vs one full-batch backward of the same loss in one process.
int worker_gradients(const gd::ProcessGroup& group, bool tied, int64_t k, bool uneven,
                     const gc::Loss& loss = gc::SimpleContrastiveLoss()) {
  const int64_t n = 12;
  auto data = make_data(n, k);
  auto [q, p] = make_models(tied);
  auto [lo, hi] = my_rows(group.rank(), n, uneven);
  gd::DistributedGradCache cache(group, {q, p}, 4, loss, gc::GradCacheOptions(),
                                 gd::DistributedOptions().bucket_bytes(512));
  cache({data.x.slice(0, lo, hi), data.y.slice(0, lo * (1 + k), hi * (1 + k))});
  const auto params = unique_params(q, p);
  const auto distributed = gctest::grads_of(params);

  gctest::zero_grads(params);
  loss({q(data.x), p(data.y)}).backward();
  const double err = gctest::max_rel_error(distributed, gctest::grads_of(params));
  std::cout << "rank " << group.rank() << ": max relative gradient error " << err << std::endl;
  if (!(err < kTol64)) return fail("gradients differ from the single-process full batch: " + std::to_string(err));
  if (cache.bytes_reduced() <= 0) return fail("no gradient was all-reduced");
  return 0;
}

// A few SGD steps on each rank vs the same steps in one process: the same weights.
int worker_training(const gd::ProcessGroup& group, bool tied) {
  const int64_t n = 12;
  auto [q, p] = make_models(tied);
  auto [q1, p1] = make_models(tied);  // the single-process twin
  gd::DistributedGradCache cache(group, {q, p}, 4, gc::SimpleContrastiveLoss());
  gc::GradCache single({q1, p1}, 4, gc::SimpleContrastiveLoss());
  torch::optim::SGD opt(unique_params(q, p), 0.5), opt1(unique_params(q1, p1), 0.5);
  for (int step = 0; step < 3; ++step) {
    torch::manual_seed(1000 + step);  // the same data on every rank; each takes its rows
    auto x = torch::randn({n, 6}, torch::kFloat64), y = torch::randn({n, 6}, torch::kFloat64);
    auto [lo, hi] = my_rows(group.rank(), n, false);
    opt.zero_grad();
    cache({x.slice(0, lo, hi), y.slice(0, lo, hi)});
    opt.step();
    opt1.zero_grad();
    single({x, y});
    opt1.step();
  }
  const auto a = unique_params(q, p), b = unique_params(q1, p1);
  const double err = gctest::max_rel_error(a, b);
  std::cout << "rank " << group.rank() << ": weights after 3 steps differ by " << err << std::endl;
  return err < kTol64 ? 0 : fail("weights differ from the single-process run: " + std::to_string(err));
}

// Rank 1 dies inside the loss (mid-step); rank 0 must fail with a message, not hang.
int worker_dies(const gd::ProcessGroup& group) {
  auto [q, p] = make_models(false);
  const int rank = group.rank();
  gd::DistributedGradCache cache(group, {q, p}, 2,
                                 [rank](const torch::Tensor& a, const torch::Tensor& b) {
                                   if (rank == 1) std::_Exit(3);
                                   return gc::SimpleContrastiveLoss()(a, b);
                                 });
  auto data = make_data(4, 0);
  cache({data.x, data.y});
  return fail("the step finished although rank 1 died");
}

// fp16 loss scaling across ranks: an inf gradient on one rank only (after the synchronised
// step) makes both skip the step and back off the same way, agreed through any_rank.
int worker_scaler(const gd::ProcessGroup& group) {
  auto [q, p] = make_models(false);
  auto scaler = std::make_shared<gc::GradScaler>(
      gc::GradScalerOptions().init_scale(1024).agree_found_inf(gd::any_rank(group)));
  gd::DistributedGradCache cache(group, {q, p}, 2, gc::SimpleContrastiveLoss(), gc::GradCacheOptions().scaler(scaler));
  torch::optim::SGD opt(unique_params(q, p), 0.5);
  auto data = make_data(8, 0);
  auto [lo, hi] = my_rows(group.rank(), 8, false);
  for (int step = 0; step < 2; ++step) {
    opt.zero_grad();
    cache({data.x.slice(0, lo, hi), data.y.slice(0, lo, hi)});
    const bool poison = step == 1 && group.rank() == 1;
    if (poison) q->fc1->weight.mutable_grad().view(-1)[0] = std::numeric_limits<double>::infinity();
    const auto before = q->fc1->weight.detach().clone();
    const bool stepped = scaler->step(opt);
    scaler->update();
    if (stepped != (step == 0)) return fail("step " + std::to_string(step) + ": stepped = " + std::to_string(stepped));
    if (!stepped && !torch::equal(q->fc1->weight, before)) return fail("a skipped step changed the weights");
  }
  if (scaler->get_scale() != 512) return fail("scale " + std::to_string(scaler->get_scale()) + ", expected 512");
  return 0;
}

// ---- the sharded loss and the functional API: W ranks, dropout on -------------------------

// Rows [first, last) of `rank` among `world`; `uneven` gives rank 0 one row fewer.
std::pair<int64_t, int64_t> rows_of(int rank, int world, int64_t n, bool uneven) {
  auto bound = [&](int r) { return r == 0 ? int64_t{0} : r == world ? n : n * r / world - (uneven ? 1 : 0); };
  return {bound(rank), bound(rank + 1)};
}

std::pair<gctest::Mlp, gctest::Mlp> models_with_dropout() {
  torch::manual_seed(7);
  gctest::Mlp q(6, 16, 5, /*dropout=*/0.2), p(6, 16, 5, 0.2);
  q->to(torch::kFloat64);
  p->to(torch::kFloat64);
  return {q, p};
}

// What every rank's cache step computes, in one process and one graph: each rank's rows
// encoded chunk by chunk under that rank's seed (the dropout masks the ranks drew), all of
// them concatenated in rank order.
std::pair<torch::Tensor, torch::Tensor> all_ranks_reps(gctest::Mlp& q, gctest::Mlp& p, const Data& data, int world,
                                                       int64_t k, bool uneven) {
  std::vector<torch::Tensor> qs, ps;
  for (int r = 0; r < world; ++r) {
    const auto [lo, hi] = rows_of(r, world, data.x.size(0), uneven);
    torch::manual_seed(100 + r);
    for (const auto& c : data.x.slice(0, lo, hi).split(4)) qs.push_back(q(c));
    for (const auto& c : data.y.slice(0, lo * (1 + k), hi * (1 + k)).split(4)) ps.push_back(p(c));
  }
  return {torch::cat(qs), torch::cat(ps)};
}

// InfoNCE written out densely: S = Q P^T / tau, cross-entropy to each query's positive (and,
// symmetric, of each positive over the queries).
torch::Tensor dense_infonce(const torch::Tensor& Q, const torch::Tensor& P, const torch::Tensor& tau, int64_t k,
                            bool symmetric) {
  const auto S = Q.mm(P.t()) / tau;
  const auto t = torch::arange(0, P.size(0), 1 + k);
  const auto q2p = torch::nn::functional::cross_entropy(S, t);
  if (!symmetric) return q2p;
  return (q2p + torch::nn::functional::cross_entropy(S.index_select(1, t).t(), torch::arange(Q.size(0)))) / 2;
}

// A cache step with the sharded loss on each of W ranks vs one full-batch backward of the
// dense loss over every rank's representations: parameters, the temperature and the value.
// `matryoshka`: both losses wrapped in the same MatryoshkaLoss (the sharded one runs per prefix).
int worker_sharded(const gd::ProcessGroup& group, int64_t k, bool symmetric, bool uneven, bool matryoshka = false) {
  const int64_t n = 12;
  auto data = make_data(n, k);
  auto [q, p] = models_with_dropout();
  auto tau = torch::full({}, 0.5, torch::kFloat64).requires_grad_(true);
  const auto options = gc::StreamingLossOptions().tile_size(5).symmetric(symmetric).temperature_tensor(tau);
  gc::Loss sharded = gd::ShardedContrastiveLoss(group, options);
  gc::Loss dense = [&](const std::vector<torch::Tensor>& r, const gc::LossArgs&) {
    return dense_infonce(r[0], r[1], tau, k, symmetric);
  };
  const auto prefixes = gc::MatryoshkaOptions().dims({5, 3, 2}).weights({1, 0.5, 2}).normalize_prefixes(true);
  if (matryoshka) {
    sharded = gc::MatryoshkaLoss(sharded, prefixes);
    dense = gc::MatryoshkaLoss(dense, prefixes);
  }
  gd::DistributedGradCache cache(group, {q, p}, 4, sharded, gc::GradCacheOptions(),
                                 gd::DistributedOptions().bucket_bytes(512).gather_inputs(false));
  const auto [lo, hi] = rows_of(group.rank(), group.world_size(), n, uneven);
  torch::manual_seed(100 + group.rank());
  const double value = cache({data.x.slice(0, lo, hi), data.y.slice(0, lo * (1 + k), hi * (1 + k))}).item<double>();
  auto params = unique_params(q, p);
  params.push_back(tau);
  const auto distributed = gctest::grads_of(params);

  gctest::zero_grads(params);
  const auto [Q, P] = all_ranks_reps(q, p, data, group.world_size(), k, uneven);
  const auto loss = dense({Q, P});
  loss.backward();
  const double err = gctest::max_rel_error(distributed, gctest::grads_of(params));
  std::cout << "rank " << group.rank() << " of " << group.world_size() << ": max relative gradient error " << err
            << ", loss " << value << " vs " << loss.item<double>() << std::endl;
  if (!(err < kTol64)) return fail("gradients differ from the one-process full batch: " + std::to_string(err));
  if (!(std::abs(value - loss.item<double>()) < kTol64)) return fail("the loss differs from the whole batch's");
  return 0;
}

// The sharded loss alone, on representations that are leaves: each rank's rows get the rows of
// the whole batch's gradient.
int worker_sharded_loss(const gd::ProcessGroup& group, int64_t k, bool symmetric) {
  const int64_t n = 12;
  auto data = make_data(n, k);
  auto tau = torch::full({}, 0.5, torch::kFloat64).requires_grad_(true);
  const auto [lo, hi] = rows_of(group.rank(), group.world_size(), n, true);
  auto q = data.x.slice(0, lo, hi).clone().requires_grad_(true);
  auto p = data.y.slice(0, lo * (1 + k), hi * (1 + k)).clone().requires_grad_(true);
  const auto options = gc::StreamingLossOptions().tile_size(5).symmetric(symmetric).temperature_tensor(tau);
  gd::sharded_contrastive_loss(group, q, p, options).backward();
  auto Q = data.x.clone().requires_grad_(true), P = data.y.clone().requires_grad_(true);
  auto tau1 = torch::full({}, 0.5, torch::kFloat64).requires_grad_(true);
  dense_infonce(Q, P, tau1, k, symmetric).backward();
  const double err = gctest::max_rel_error(
      {q.grad(), p.grad(), tau.grad()},
      {Q.grad().slice(0, lo, hi), P.grad().slice(0, lo * (1 + k), hi * (1 + k)), tau1.grad()});
  std::cout << "rank " << group.rank() << " of " << group.world_size() << ": max relative gradient error " << err
            << " (q " << gctest::max_rel_error({q.grad()}, {Q.grad().slice(0, lo, hi)}) << ", p "
            << gctest::max_rel_error({p.grad()}, {P.grad().slice(0, lo * (1 + k), hi * (1 + k))}) << ", tau "
            << gctest::max_rel_error({tau.grad()}, {tau1.grad()}) << ")" << std::endl;
  return err < kTol64 ? 0 : fail("gradients differ from the whole batch's: " + std::to_string(err));
}

// The functional API across processes: cached() + cat_input_tensor(gather_input_tensor(loss))
// + GradientSynchronizer on each rank vs one full-batch backward in one process.
int worker_functional(const gd::ProcessGroup& group) {
  const int64_t n = 12;
  auto data = make_data(n, 0);
  auto [q, p] = models_with_dropout();
  auto encode = gc::functional::cached([](gctest::Mlp& m, const torch::Tensor& x) { return m(x); });
  auto loss_fn = gc::functional::cat_input_tensor(
      gc::functional::gather_input_tensor(group, [](const torch::Tensor& a, const torch::Tensor& b) {
        return gc::contrastive_loss(a, b);
      }));
  const auto [lo, hi] = rows_of(group.rank(), group.world_size(), n, false);
  torch::manual_seed(100 + group.rank());
  std::vector<torch::Tensor> q_reps, p_reps;
  std::vector<gc::functional::Replay> replays;
  for (auto [model, rows, reps] : {std::make_tuple(q, data.x.slice(0, lo, hi), &q_reps),
                                   std::make_tuple(p, data.y.slice(0, lo, hi), &p_reps)}) {
    for (const auto& chunk : rows.split(4)) {
      auto [rep, replay] = encode(model, chunk);
      reps->push_back(rep);
      replays.push_back(replay);
    }
  }
  loss_fn(q_reps, p_reps).backward();
  std::vector<torch::Tensor> all_reps = q_reps;
  all_reps.insert(all_reps.end(), p_reps.begin(), p_reps.end());
  for (size_t i = 0; i < replays.size(); ++i) replays[i](all_reps[i]);
  const auto params = unique_params(q, p);
  gd::GradientSynchronizer sync(group);
  sync.start(params);
  sync.finish();
  const auto distributed = gctest::grads_of(params);

  gctest::zero_grads(params);
  const auto [Q, P] = all_ranks_reps(q, p, data, group.world_size(), 0, false);
  gc::contrastive_loss(Q, P).backward();
  const double err = gctest::max_rel_error(distributed, gctest::grads_of(params));
  std::cout << "rank " << group.rank() << ": max relative gradient error " << err << std::endl;
  return err < kTol64 ? 0 : fail("gradients differ from the one-process full batch: " + std::to_string(err));
}

// A worker's command line: --worker SCENARIO RANK WORLD PORT TIMEOUT_MS.
int run_worker(char** argv) {
  const std::string scenario = argv[2];
  gd::Rendezvous rendezvous;
  rendezvous.rank = std::atoi(argv[3]);
  rendezvous.world_size = std::atoi(argv[4]);
  rendezvous.port = std::atoi(argv[5]);
  const auto timeout = std::chrono::milliseconds(std::atoi(argv[6]));
  // What a program must do itself: a write to a dead peer's socket then fails with a message
  // instead of killing this process silently.
  std::signal(SIGPIPE, SIG_IGN);
  try {
    auto group = gd::ProcessGroup::create(rendezvous, gd::ProcessGroupOptions().timeout(timeout));
    if (scenario == "gradients") return worker_gradients(group, false, 0, false);
    if (scenario == "gradients_tied") return worker_gradients(group, true, 0, false);
    if (scenario == "gradients_hard_negatives") return worker_gradients(group, false, 2, false);
    if (scenario == "gradients_uneven") return worker_gradients(group, true, 1, true);
    if (scenario == "gradients_streaming") {  // tiles of 5 over the 24 gathered passages: uneven edges
      const gc::StreamingContrastiveLoss streaming(gc::StreamingLossOptions().tile_size(5).temperature(0.5));
      return worker_gradients(group, false, 1, false, streaming);
    }
    if (scenario == "sharded_hard_negatives_symmetric") return worker_sharded(group, 2, true, false);
    if (scenario == "sharded_uneven") return worker_sharded(group, 1, false, true);
    if (scenario == "sharded_matryoshka") return worker_sharded(group, 1, true, true, /*matryoshka=*/true);
    if (scenario == "functional") return worker_functional(group);
    if (scenario == "sharded_loss") return worker_sharded_loss(group, 1, false);
    if (scenario == "training") return worker_training(group, false);
    if (scenario == "training_tied") return worker_training(group, true);
    if (scenario == "dies") return worker_dies(group);
    if (scenario == "scaler") return worker_scaler(group);
    if (scenario == "gather_dtypes") return worker_gather_dtypes(group);
    if (scenario == "mismatch") {
      group.check_same("settings", group.rank() == 0 ? "temperature=0.05" : "temperature=0.1");
      return fail("check_same accepted different settings");
    }
    return fail("unknown scenario " + scenario);
  } catch (const std::exception& e) {
    std::cerr << e.what() << std::endl;
    return 2;
  }
}

// ---- the tests: start workers, watch them --------------------------------------------------

struct Outcome {
  int status = -1;      // exit status, or -1 if it had to be killed
  std::string stderr_;  // what it said
};

// Starts `ranks` of a `world`-process group running `scenario`; waits at most `deadline`.
std::vector<Outcome> run_group(const std::string& scenario, int world, int ranks, std::chrono::seconds deadline,
                               int timeout_ms = 20000) {
  const int port = gradcache::distributed::free_loopback_port();
  std::vector<pid_t> pids;
  std::vector<std::string> logs;
  for (int rank = 0; rank < ranks; ++rank) {
    std::vector<std::string> args = {"/proc/self/exe", "--worker", scenario, std::to_string(rank),
                                     std::to_string(world), std::to_string(port), std::to_string(timeout_ms)};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    logs.push_back(::testing::TempDir() + "worker_" + scenario + "_" + std::to_string(rank) + ".log");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 2, logs.back().c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = 0;
    EXPECT_EQ(posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    pids.push_back(pid);
  }
  std::vector<Outcome> outcomes(pids.size());
  const auto end = std::chrono::steady_clock::now() + deadline;
  for (size_t i = 0; i < pids.size(); ++i) {
    int status = 0;
    while (waitpid(pids[i], &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > end) {
        kill(pids[i], SIGKILL);
        waitpid(pids[i], &status, 0);
        status = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    outcomes[i].status = status == -1 ? -1 : (WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    std::ifstream log(logs[i]);
    outcomes[i].stderr_.assign(std::istreambuf_iterator<char>(log), {});
  }
  return outcomes;
}

void expect_success(const std::vector<Outcome>& outcomes) {
  for (size_t r = 0; r < outcomes.size(); ++r) {
    EXPECT_EQ(outcomes[r].status, 0) << "rank " << r << " said:\n" << outcomes[r].stderr_;
  }
}

}  // namespace

TEST(Distributed, GradientsEqualTheSingleProcessFullBatch) {
  expect_success(run_group("gradients", 2, 2, std::chrono::seconds(60)));
}

TEST(Distributed, LossScalerSkipsOnEveryRankTogether) {
  expect_success(run_group("scaler", 2, 2, std::chrono::seconds(60)));
}

TEST(Distributed, AllGatherRowsKeepsEveryDtypeIntact) {
  expect_success(run_group("gather_dtypes", 2, 2, std::chrono::seconds(60)));
}

TEST(Distributed, TiedEncoders) { expect_success(run_group("gradients_tied", 2, 2, std::chrono::seconds(60))); }

TEST(Distributed, HardNegatives) {
  expect_success(run_group("gradients_hard_negatives", 2, 2, std::chrono::seconds(60)));
}

TEST(Distributed, StreamingLossWithHardNegatives) {
  expect_success(run_group("gradients_streaming", 2, 2, std::chrono::seconds(60)));
}

TEST(Distributed, ShardedLossEqualsTheFullBatchAtTwoAndThreeRanks) {
  for (int world : {2, 3}) {
    // Learnable temperature throughout; dropout on in the cache steps.
    for (const char* scenario : {"sharded_loss", "sharded_hard_negatives_symmetric", "sharded_uneven",
                                 "sharded_matryoshka"}) {
      SCOPED_TRACE(std::string(scenario) + " at " + std::to_string(world) + " ranks");
      expect_success(run_group(scenario, world, world, std::chrono::seconds(60)));
    }
  }
}

TEST(Distributed, FunctionalApiWithGatherInputTensor) {
  expect_success(run_group("functional", 2, 2, std::chrono::seconds(60)));
}

TEST(Distributed, UnequalLocalBatches) {
  expect_success(run_group("gradients_uneven", 2, 2, std::chrono::seconds(60)));
}

TEST(Distributed, TrainingEndsWithTheSingleProcessWeights) {
  expect_success(run_group("training", 2, 2, std::chrono::seconds(60)));
  expect_success(run_group("training_tied", 2, 2, std::chrono::seconds(60)));
}

TEST(Distributed, ARankThatDiesMidStepStopsTheOthersWithAMessage) {
  const auto start = std::chrono::steady_clock::now();
  const auto outcomes = run_group("dies", 2, 2, std::chrono::seconds(60), /*timeout_ms=*/10000);
  EXPECT_EQ(outcomes[1].status, 3);  // it died as told
  EXPECT_NE(outcomes[0].status, 0);
  EXPECT_NE(outcomes[0].status, -1) << "rank 0 hung";
  EXPECT_NE(outcomes[0].stderr_.find("gradcache distributed"), std::string::npos) << outcomes[0].stderr_;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

TEST(Distributed, ARankThatNeverJoinsTimesOutWithAMessage) {
  const auto start = std::chrono::steady_clock::now();
  const auto outcomes = run_group("gradients", 2, /*ranks started=*/1, std::chrono::seconds(60), /*timeout_ms=*/3000);
  EXPECT_EQ(outcomes[0].status, 2);
  EXPECT_NE(outcomes[0].stderr_.find("could not join the group"), std::string::npos) << outcomes[0].stderr_;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

TEST(Distributed, RanksWithDifferentSettingsAreRefused) {
  const auto outcomes = run_group("mismatch", 2, 2, std::chrono::seconds(60));
  for (const auto& o : outcomes) {
    EXPECT_EQ(o.status, 2);
    EXPECT_NE(o.stderr_.find("started with different settings"), std::string::npos) << o.stderr_;
  }
}

int main(int argc, char** argv) {
  if (argc == 7 && std::string(argv[1]) == "--worker") return run_worker(argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
