// Losses, input splitting, generator states: the pieces GradCache is built from.
#include "test_util.h"

namespace gc = gradcache;
using gctest::error_of;

namespace {

// Reference InfoNCE written out: mean_i [logsumexp_j S_ij - S_i,target(i)].
torch::Tensor reference_infonce(const torch::Tensor& s, const torch::Tensor& target) {
  auto lse = torch::logsumexp(s, 1);
  auto pos = s.gather(1, target.unsqueeze(1)).squeeze(1);
  return (lse - pos).mean();
}


}  // namespace

TEST(ContrastiveLoss, MatchesTheFormulaWithHardNegativesAndTemperature) {
  torch::manual_seed(0);
  const int64_t n = 5, k = 2;
  auto q = torch::randn({n, 6}, torch::kFloat64), p = torch::randn({n * (1 + k), 6}, torch::kFloat64);
  auto opts = gc::ContrastiveLossOptions().temperature(0.2);
  auto loss = gc::contrastive_loss(q, p, opts);
  auto expected = reference_infonce(q.matmul(p.t()) / 0.2, torch::arange(0, n * (1 + k), 1 + k));
  EXPECT_NEAR(loss.item<double>(), expected.item<double>(), 1e-12);

  auto summed = gc::contrastive_loss(q, p, gc::ContrastiveLossOptions(opts).reduction(gc::Reduction::Sum));
  EXPECT_NEAR(summed.item<double>(), n * expected.item<double>(), 1e-11);
  // As a loss object, with the reduction and explicit targets passed per call.
  auto target = torch::tensor({1, 0, 14, 3, 7}, torch::kLong);
  auto via_args = gc::SimpleContrastiveLoss(opts)(q, p, {{"target", target}, {"reduction", "sum"}});
  EXPECT_NEAR(via_args.item<double>(), n * reference_infonce(q.matmul(p.t()) / 0.2, target).item<double>(), 1e-11);
}

TEST(ContrastiveLoss, CosineSimilarityNormalises) {
  torch::manual_seed(1);
  auto q = torch::randn({4, 3}, torch::kFloat64), p = torch::randn({4, 3}, torch::kFloat64);
  auto opts = gc::ContrastiveLossOptions().similarity(gc::Similarity::Cosine).temperature(0.05);
  auto a = gc::contrastive_loss(q, p, opts);
  auto qn = q / q.norm(2, 1, true), pn = p / p.norm(2, 1, true);
  auto b = reference_infonce(qn.matmul(pn.t()) / 0.05, torch::arange(4));
  EXPECT_NEAR(a.item<double>(), b.item<double>(), 1e-12);
  EXPECT_NEAR(gc::contrastive_loss(q * 3, p * 0.5, opts).item<double>(), a.item<double>(), 1e-12);
}

TEST(ContrastiveLoss, SymmetricAveragesBothDirections) {
  torch::manual_seed(2);
  const int64_t n = 4, k = 1;
  auto q = torch::randn({n, 5}, torch::kFloat64), p = torch::randn({n * (1 + k), 5}, torch::kFloat64);
  auto s = q.matmul(p.t());
  auto t = torch::arange(0, n * (1 + k), 1 + k);
  auto q2p = reference_infonce(s, t);
  auto p2q = reference_infonce(s.index_select(1, t).t(), torch::arange(n));  // positives as anchors
  auto loss = gc::SymmetricContrastiveLoss()(q, p);
  EXPECT_NEAR(loss.item<double>(), ((q2p + p2q) / 2).item<double>(), 1e-12);
  // Symmetry is one option, as for the streaming loss: the class is a name for it.
  const auto as_option = gc::SimpleContrastiveLoss(gc::ContrastiveLossOptions().symmetric(true));
  EXPECT_EQ(as_option(q, p).item<double>(), loss.item<double>());
  EXPECT_NEAR(gc::contrastive_loss(q, p, gc::ContrastiveLossOptions().symmetric(true)).item<double>(),
              loss.item<double>(), 0);
  EXPECT_NE(error_of([&] { gc::SymmetricContrastiveLoss()(std::vector<torch::Tensor>{q}, gc::LossArgs{}); }).find("SymmetricContrastiveLoss"),
            std::string::npos);
}

TEST(ContrastiveLoss, GradientMatchesFiniteDifferences) {
  torch::manual_seed(3);
  auto q = torch::randn({3, 4}, torch::kFloat64).requires_grad_(), p = torch::randn({6, 4}, torch::kFloat64);
  auto opts = gc::ContrastiveLossOptions().temperature(0.7);
  gc::symmetric_contrastive_loss(q, p, opts).backward();
  const double h = 1e-6;
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      auto qp = q.detach().clone(), qm = q.detach().clone();
      qp[i][j] += h;
      qm[i][j] -= h;
      double fd = (gc::symmetric_contrastive_loss(qp, p, opts).item<double>() -
                   gc::symmetric_contrastive_loss(qm, p, opts).item<double>()) / (2 * h);
      EXPECT_NEAR(q.grad()[i][j].item<double>(), fd, 1e-8);
    }
  }
}

TEST(ContrastiveLoss, BadShapesAndTargetsAreExplained) {
  auto q = torch::randn({4, 8}), p = torch::randn({6, 8});
  EXPECT_NE(error_of([&] { gc::contrastive_loss(q, p); }).find("multiple of the number of queries"), std::string::npos);
  EXPECT_NE(error_of([&] { gc::contrastive_loss(q, torch::randn({4, 7})); }).find("same dimension"), std::string::npos);
  EXPECT_NE(error_of([&] { gc::contrastive_loss(q, p, {}, torch::tensor({0, 1, 2, 6})); }).find("[0, 6)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gc::contrastive_loss(q, p, {}, torch::tensor({0, 1})); }).find("one entry per query"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gc::contrastive_loss(q, q, gc::ContrastiveLossOptions().temperature(0)); })
                .find("temperature must be positive"),
            std::string::npos);
}

TEST(LossAdapter, AcceptsTheDocumentedSignatures) {
  auto q = torch::randn({2, 3}), p = torch::randn({2, 3});
  gc::Loss two([](const torch::Tensor& a, const torch::Tensor& b) { return (a * b).sum(); });
  gc::Loss with_args([](const std::vector<torch::Tensor>& r, const gc::LossArgs& a) {
    return r[0].sum() * a.get_double("scale", 1.0);
  });
  gc::Loss builtin = gc::SimpleContrastiveLoss();  // the canonical form, with its arguments
  EXPECT_NEAR(two({q, p}).item<double>(), (q * p).sum().item<double>(), 1e-6);
  EXPECT_NEAR(with_args({q, p}, {{"scale", 2.0}}).item<double>(), 2 * q.sum().item<double>(), 1e-6);
  EXPECT_NEAR(builtin({q, p}, {{"reduction", "sum"}}).item<double>(),
              gc::SimpleContrastiveLoss()(q, p, {{"reduction", "sum"}}).item<double>(), 1e-6);
  EXPECT_NE(error_of([&] { two({q, p, q}); }).find("takes 2 representations"), std::string::npos);
  EXPECT_NE(error_of([&] { builtin({q, p, q}); }).find("takes 2 representations"), std::string::npos);
}

TEST(SplitInput, KeepsStructureAndSharesStorage) {
  auto a = torch::arange(10).reshape({5, 2}), b = torch::arange(5);
  auto chunks = gc::split_input(std::vector<torch::Tensor>{a, b}, 2);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[2].arg(0).size(0), 1);
  EXPECT_TRUE(torch::equal(chunks[1].arg(1), torch::tensor({2, 3})));
  EXPECT_EQ(chunks[1].arg(0).data_ptr(), a[2].data_ptr());  // a view, not a copy

  std::map<std::string, torch::Tensor> kw{{"input_ids", a}, {"attention_mask", a > 3}};
  auto kchunks = gc::split_input(kw, 4);
  ASSERT_EQ(kchunks.size(), 2u);
  EXPECT_EQ(kchunks[1].kwarg("attention_mask").size(0), 1);

  auto pair = gc::split_input(gc::ModelInput(std::make_pair(std::vector<torch::Tensor>{a}, kw)), 3);
  EXPECT_EQ(pair[0].args().size(), 1u);
  EXPECT_EQ(pair[0].kwargs().size(), 2u);

  // TorchScript values: a tuple of (tensor list, dict), nested.
  c10::impl::GenericDict dict(c10::StringType::get(), c10::TensorType::get());
  dict.insert("x", a);
  c10::List<torch::Tensor> list({a, a * 2});
  auto tuple = c10::ivalue::Tuple::create({c10::IValue(list), c10::IValue(dict)});
  auto tchunks = gc::split_input(gc::ModelInput(c10::IValue(tuple)), 2);
  ASSERT_EQ(tchunks.size(), 3u);
  const auto& elems = tchunks[1].args()[0].toTupleRef().elements();
  EXPECT_TRUE(elems[0].isTensorList());
  EXPECT_TRUE(torch::equal(elems[0].toTensorList().get(1), (a * 2).slice(0, 2, 4)));
  EXPECT_TRUE(torch::equal(elems[1].toGenericDict().at("x").toTensor(), a.slice(0, 2, 4)));

  EXPECT_EQ(gc::split_input(a, 100).size(), 1u);
}

TEST(SplitInput, RejectsWhatItCannotSplit) {
  EXPECT_NE(error_of([] { gc::split_input(torch::randn({4}), 0); }).find("positive"), std::string::npos);
  EXPECT_NE(error_of([] { gc::split_input(torch::tensor(3.0), 1); }).find("scalar"), std::string::npos);
  EXPECT_NE(error_of([] { gc::split_input(gc::ModelInput::call({torch::randn({2}), c10::IValue(int64_t{3})}), 1); })
                .find("args[1], a value of type Int"),
            std::string::npos);
}

TEST(RngState, CaptureAndRestoreReplaysDraws) {
  auto state = gc::RngState::capture();
  auto first = torch::rand({3});
  auto dropped = torch::dropout(torch::ones({8}), 0.5, true);
  state.restore();
  EXPECT_TRUE(torch::equal(torch::rand({3}), first));
  EXPECT_TRUE(torch::equal(torch::dropout(torch::ones({8}), 0.5, true), dropped));
  auto after = torch::rand({2});
  {
    gc::RngStateGuard guard;
    torch::rand({100});
  }
  state.restore();
  torch::rand({3});
  torch::dropout(torch::ones({8}), 0.5, true);
  EXPECT_TRUE(torch::equal(torch::rand({2}), after));
  EXPECT_EQ(gc::RngState::capture({c10::Device(c10::kCPU)}).devices().size(), 1u);
}
