#include <gradcache/model.h>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>
#include <torch/script.h>

namespace gradcache {

struct Model::Impl {
  Forward forward;
  std::string name;
  // Where parameters and buffers come from: a C++ module, a TorchScript module, or nothing.
  std::shared_ptr<torch::nn::Module> module;
  c10::optional<torch::jit::Module> script_module;
};

namespace detail {

void throw_call_error(const std::string& who, const std::string& what) { TORCH_CHECK(false, who, ": ", what); }

std::vector<c10::IValue> call_values(const ModelInput& input) {
  std::vector<c10::IValue> values = input.args();
  if (!input.kwargs().empty()) {
    c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
    for (const auto& [name, value] : input.kwargs()) dict.insert(name, value);
    values.emplace_back(std::move(dict));
  }
  return values;
}

}  // namespace detail

namespace {

// AnyModule::any_forward is variadic: dispatch on the number of positional tensors.
torch::nn::AnyValue any_forward(torch::nn::AnyModule& m, const std::vector<at::Tensor>& a) {
  switch (a.size()) {
    case 1: return m.any_forward(a[0]);
    case 2: return m.any_forward(a[0], a[1]);
    case 3: return m.any_forward(a[0], a[1], a[2]);
    case 4: return m.any_forward(a[0], a[1], a[2], a[3]);
    case 5: return m.any_forward(a[0], a[1], a[2], a[3], a[4]);
    case 6: return m.any_forward(a[0], a[1], a[2], a[3], a[4], a[5]);
    case 7: return m.any_forward(a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
    case 8: return m.any_forward(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
    default:
      TORCH_CHECK(false, "AnyModule ", m.ptr()->name(), ": takes 1 to 8 positional tensors here, got ", a.size(),
                  "; use a callable model");
  }
}

}  // namespace

Model::Model(Forward forward, std::shared_ptr<torch::nn::Module> module) : impl_(std::make_shared<Impl>()) {
  impl_->forward = std::move(forward);
  impl_->name = module->name();
  impl_->module = std::move(module);
}

Model::Model(Forward forward, std::string name) : impl_(std::make_shared<Impl>()) {
  impl_->forward = std::move(forward);
  impl_->name = std::move(name);
}

Model::Model(const torch::nn::AnyModule& module) {
  TORCH_CHECK(!module.is_empty(), "gradcache::Model: the AnyModule is empty");
  auto any = std::make_shared<torch::nn::AnyModule>(module);
  Forward forward = [any](const ModelInput& input) -> c10::IValue {
    TORCH_CHECK(input.kwargs().empty(), "AnyModule ", any->ptr()->name(),
                ": keyword inputs are not supported; pass positional tensors or use a callable model");
    std::vector<at::Tensor> args;
    for (size_t i = 0; i < input.args().size(); ++i) args.push_back(input.arg(i));
    auto out = any_forward(*any, args);
    const auto* tensor = out.try_get<at::Tensor>();
    TORCH_CHECK(tensor != nullptr, "AnyModule ", any->ptr()->name(),
                " returned a value that is not a tensor; wrap the module in a callable model that returns a tensor");
    return *tensor;
  };
  *this = Model(std::move(forward), module.ptr());
}

Model::Model(const torch::jit::Module& module) : impl_(std::make_shared<Impl>()) {
  auto script = std::make_shared<torch::jit::Module>(module);  // shares the module's object
  impl_->forward = [script](const ModelInput& input) {
    torch::jit::Kwargs kwargs(input.kwargs().begin(), input.kwargs().end());
    return script->forward(input.args(), kwargs);
  };
  impl_->name = module.type()->name() ? module.type()->name()->name() : "ScriptModule";
  impl_->script_module = module;
}

c10::IValue Model::operator()(const ModelInput& input) const {
  TORCH_CHECK(impl_ && impl_->forward, "gradcache::Model: called an empty model");
  return impl_->forward(input);
}

std::vector<at::Tensor> Model::parameters() const {
  std::vector<at::Tensor> out;
  if (!impl_) return out;
  if (impl_->module) return impl_->module->parameters(/*recurse=*/true);
  if (impl_->script_module) {
    for (const auto& p : impl_->script_module->parameters(/*recurse=*/true)) out.push_back(p);
  }
  return out;
}

std::vector<at::Tensor> Model::buffers() const {
  std::vector<at::Tensor> out;
  if (!impl_) return out;
  if (impl_->module) return impl_->module->buffers(/*recurse=*/true);
  if (impl_->script_module) {
    for (const auto& b : impl_->script_module->buffers(/*recurse=*/true)) out.push_back(b);
  }
  return out;
}

Model& Model::with_state_of(std::shared_ptr<torch::nn::Module> module) {
  TORCH_CHECK(impl_, "gradcache::Model::with_state_of: the model is empty");
  TORCH_CHECK(module, "gradcache::Model::with_state_of: the module is null");
  auto impl = std::make_shared<Impl>(*impl_);  // copies made before keep their own state
  impl->module = std::move(module);
  impl->script_module.reset();
  impl_ = std::move(impl);
  return *this;
}

Model& Model::with_state_of(const torch::jit::Module& module) {
  TORCH_CHECK(impl_, "gradcache::Model::with_state_of: the model is empty");
  auto impl = std::make_shared<Impl>(*impl_);
  impl->module.reset();
  impl->script_module = module;
  impl_ = std::move(impl);
  return *this;
}

const std::string& Model::name() const {
  static const std::string empty = "empty model";
  return impl_ ? impl_->name : empty;
}

const void* Model::identity() const {
  if (!impl_) return nullptr;
  if (impl_->module) return impl_->module.get();
  if (impl_->script_module) return impl_->script_module->_ivalue().get();
  return impl_.get();
}

}  // namespace gradcache
