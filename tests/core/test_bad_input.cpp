// Bad input: each case gives a clear error and leaves gradients, buffers and generators as
// they were.
#include "test_util.h"

namespace gc = gradcache;

namespace {

// Asserts that `fn` throws an exception whose message contains every one of `parts`.
template <class Fn>
void expect_error(Fn&& fn, std::initializer_list<const char*> parts) {
  try {
    fn();
    ADD_FAILURE() << "expected an error mentioning '" << *parts.begin() << "'";
  } catch (const std::exception& e) {
    const std::string message = e.what();
    for (const char* part : parts) EXPECT_NE(message.find(part), std::string::npos) << message;
  }
}

// Parameters with known gradients, buffers and a generator state; `unchanged()` checks all.
struct Witness {
  gctest::BnNet q{4, 8, 4}, p{4, 8, 4};
  std::vector<torch::Tensor> grads, buffers;
  torch::Tensor generator;

  Witness() {
    for (auto& t : params()) t.mutable_grad() = torch::full_like(t, 0.5);
    grads = gctest::grads_of(params());
    for (const auto& b : all_buffers()) buffers.push_back(b.clone());
    generator = at::globalContext().defaultGenerator(c10::kCPU).get_state();
  }
  std::vector<torch::Tensor> params() const {
    auto a = q->parameters(), b = p->parameters();
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
  std::vector<torch::Tensor> all_buffers() const {
    auto a = q->buffers(), b = p->buffers();
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
  void expect_unchanged() const {
    auto now = gctest::grads_of(params());
    for (size_t i = 0; i < now.size(); ++i) EXPECT_TRUE(torch::equal(now[i], grads[i])) << "gradient " << i;
    auto b = all_buffers();
    for (size_t i = 0; i < b.size(); ++i) EXPECT_TRUE(torch::equal(b[i], buffers[i])) << "buffer " << i;
    EXPECT_TRUE(torch::equal(at::globalContext().defaultGenerator(c10::kCPU).get_state(), generator));
  }
};

}  // namespace

TEST(BadInput, EmptyBatch) {
  auto x = torch::randn({0, 4}), y = torch::randn({0, 4});
  Witness w;
  gc::GradCache cache({w.q, w.p}, 2, gc::SimpleContrastiveLoss());
  expect_error([&] { cache({x, y}); }, {"model 0", "empty (0 rows)"});
  w.expect_unchanged();
}

TEST(BadInput, NonPositiveChunkSize) {
  gctest::Mlp m(4, 4, 4);
  expect_error([&] { gc::GradCache({m, m}, 0, gc::SimpleContrastiveLoss()); }, {"chunk size", "positive", "got 0"});
  expect_error([&] { gc::GradCache({m, m}, std::vector<int64_t>{4, -1}, gc::SimpleContrastiveLoss()); },
               {"model 1", "got -1"});
  expect_error([&] { gc::GradCache({m, m}, std::vector<int64_t>{4, 4, 4}, gc::SimpleContrastiveLoss()); },
               {"3 chunk sizes for 2 models"});
}

TEST(BadInput, InputCountDiffersFromModelCount) {
  auto x = torch::randn({4, 4});
  Witness w;
  gc::GradCache cache({w.q, w.p}, 2, gc::SimpleContrastiveLoss());
  expect_error([&] { cache({x}); }, {"1 inputs for 2 models"});
  w.expect_unchanged();
}

TEST(BadInput, TensorsOfOneInputDisagreeOnDim0) {
  gctest::TextEncoder enc(20, 8, 0.0);
  std::map<std::string, torch::Tensor> bad{{"input_ids", torch::randint(0, 20, {5, 3})},
                                           {"attention_mask", torch::ones({4, 3}, torch::kBool)}};
  gc::GradCache cache({enc, enc}, 2, gc::SimpleContrastiveLoss());
  expect_error([&] { cache({bad, bad}); }, {"model 0", "disagree on dim 0", "kwargs['attention_mask']", "kwargs['input_ids']"});
}

TEST(BadInput, RepresentationRowsDifferFromInputRows) {
  auto x = torch::randn({6, 4}), y = torch::randn({6, 4});
  Witness w;
  auto drops_a_row = gc::Model([q = w.q](const torch::Tensor& x) mutable { return q(x).slice(0, 1); }).with_state_of(w.q);
  gc::GradCache cache({w.q, drops_a_row}, 3, gc::SimpleContrastiveLoss());
  expect_error([&] { cache({x, y}); }, {"model 1", "2 rows for a chunk of 3 rows"});
  w.expect_unchanged();  // model 0 already ran: its BatchNorm statistics were put back
}

TEST(BadInput, LossReturningANonScalar) {
  auto x = torch::randn({4, 4}), y = torch::randn({4, 4});
  Witness w;
  gc::GradCache cache({w.q, w.p}, 2, [](const torch::Tensor& q, const torch::Tensor& p) { return (q * p).sum(1); });
  expect_error([&] { cache({x, y}); }, {"must return a scalar", "[4]"});
  w.expect_unchanged();
}

TEST(BadInput, RepresentationNotUsedByTheLossNamesTheModel) {
  auto x = torch::randn({4, 4}), y = torch::randn({4, 4});
  Witness w;
  gc::GradCache cache({w.q, w.p}, 2, [](const std::vector<torch::Tensor>& reps, const gc::LossArgs&) {
    return reps[0].pow(2).sum();
  });
  expect_error([&] { cache({x, y}); },
               {"does not use the representation of model 1", "BnNetImpl"});
  w.expect_unchanged();
}

TEST(BadInput, LossWithoutGraph) {
  auto x = torch::randn({4, 4}), y = torch::randn({4, 4});
  Witness w;
  gc::GradCache cache({w.q, w.p}, 2, [](const torch::Tensor& q, const torch::Tensor&) { return torch::zeros({}); });
  expect_error([&] { cache({x, y}); }, {"does not depend on any representation"});
  w.expect_unchanged();
}

TEST(BadInput, NonFiniteLossIsReportedAndChangesNothing) {
  auto x = torch::randn({4, 4}), y = torch::randn({4, 4});
  x[1][2] = std::numeric_limits<float>::quiet_NaN();
  Witness w;
  gc::GradCache cache({w.q, w.p}, 2, gc::SimpleContrastiveLoss());
  try {
    cache({x, y});
    ADD_FAILURE() << "expected NonFiniteLossError";
  } catch (const gc::NonFiniteLossError& e) {
    EXPECT_TRUE(std::isnan(e.loss()));
    EXPECT_NE(std::string(e.what()).find("parameter gradients are unchanged"), std::string::npos);
  }
  w.expect_unchanged();
}

TEST(BadInput, InputKindThatCannotBeSplitAsksForASplitFunction) {
  gctest::Mlp m(4, 4, 4);
  gc::GradCache cache({m, m}, 2, gc::SimpleContrastiveLoss());
  c10::List<std::string> texts({"a", "b"});
  expect_error([&] { cache({gc::ModelInput(c10::IValue(texts)), torch::randn({2, 4})}); },
               {"model 0", "holds no tensor", "split_input_fn"});
  auto mixed = gc::ModelInput::call({torch::randn({2, 4}), c10::IValue(texts)});
  expect_error([&] { cache({mixed, torch::randn({2, 4})}); }, {"args[1]", "split_input_fn"});
}

TEST(BadInput, ASplitFunctionHandlesOtherInputs) {
  // Texts and a tensor; the split function cuts both; the model embeds by text length.
  gctest::Mlp m(1, 8, 4);
  m->to(torch::kFloat64);
  auto model = gc::Model([m](const gc::ModelInput& in) mutable {
                 std::vector<double> lengths;
                 for (const auto& s : in.args()[0].toListRef()) lengths.push_back(s.toStringRef().size());
                 return m(torch::tensor(lengths, torch::kFloat64).unsqueeze(1));
               }).with_state_of(m);
  auto split = [](const gc::ModelInput& in, int64_t chunk) {
    std::vector<gc::ModelInput> out;
    auto all = in.args()[0].toList();
    for (size_t start = 0; start < all.size(); start += chunk) {
      c10::List<std::string> part;
      for (size_t i = start; i < std::min(all.size(), static_cast<size_t>(start + chunk)); ++i) part.push_back(all.get(i).toStringRef());
      out.push_back(gc::ModelInput(c10::IValue(part)));
    }
    return out;
  };
  gc::GradCache cache({model, model}, 2, gc::SimpleContrastiveLoss(), gc::GradCacheOptions().split_input_fn(split));
  c10::List<std::string> q({"a", "bbb", "cc"}), p({"dddd", "e", "ffffff"});
  auto loss = cache({gc::ModelInput(c10::IValue(q)), gc::ModelInput(c10::IValue(p))});
  EXPECT_TRUE(std::isfinite(loss.item<double>()));
  EXPECT_TRUE(gctest::any_grad(m->parameters()));
}

TEST(BadInput, ModelWithTheWrongArity) {
  gctest::Mlp m(4, 4, 4);
  gc::GradCache cache({m, m}, 2, gc::SimpleContrastiveLoss());
  std::vector<torch::Tensor> two{torch::randn({2, 4}), torch::randn({2, 4})};
  expect_error([&] { cache({two, two}); }, {"MlpImpl", "takes 1 argument(s) but the input gives 2"});
}

TEST(BadInput, ModelOutputThatIsNotATensorAsksForGetRepFn) {
  gctest::Mlp m(4, 4, 4);
  auto tuple_out = gc::Model([m](const torch::Tensor& x) mutable { return std::make_tuple(m(x), x); });
  gc::GradCache cache({tuple_out, tuple_out}, 2, gc::SimpleContrastiveLoss());
  expect_error([&] { cache({torch::randn({2, 4}), torch::randn({2, 4})}); }, {"Tuple", "get_rep_fn"});
}

TEST(BadInput, LossArgumentsItDoesNotTake) {
  gctest::Mlp m(4, 4, 4);
  gc::GradCache plain({m, m}, 2, [](const torch::Tensor& q, const torch::Tensor& p) { return q.matmul(p.t()).sum(); });
  expect_error([&] { plain({torch::randn({2, 4}), torch::randn({2, 4})}, {{"reduction", "sum"}}); },
               {"takes no extra arguments", "reduction"});
  gc::GradCache contrastive({m, m}, 2, gc::SimpleContrastiveLoss());
  expect_error([&] { contrastive({torch::randn({2, 4}), torch::randn({2, 4})}, {{"reductoin", "sum"}}); },
               {"unknown argument 'reductoin'"});
  expect_error([&] { contrastive({torch::randn({2, 4}), torch::randn({2, 4})}, {{"reduction", "max"}}); },
               {"unknown reduction 'max'"});
}
