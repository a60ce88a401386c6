#include <gradcache/split.h>

#include "detail/ivalue_walk.h"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

namespace gradcache {
namespace {

// Splits `value` into `n` chunks of `chunk_size` rows, keeping its structure.
std::vector<c10::IValue> split_value(const c10::IValue& value, int64_t chunk_size, size_t n, const std::string& path) {
  std::vector<c10::IValue> out;
  out.reserve(n);
  if (value.isTensor()) {
    for (auto& part : value.toTensor().split(chunk_size, 0)) out.emplace_back(std::move(part));
  } else if (value.isTuple()) {
    const auto& elements = value.toTupleRef().elements();
    std::vector<std::vector<c10::IValue>> parts(n);
    for (size_t i = 0; i < elements.size(); ++i) {
      auto split = split_value(elements[i], chunk_size, n, path + "[" + std::to_string(i) + "]");
      for (size_t c = 0; c < n; ++c) parts[c].push_back(std::move(split[c]));
    }
    for (auto& p : parts) out.emplace_back(c10::ivalue::Tuple::create(std::move(p)));
  } else if (value.isTensorList()) {
    const auto list = value.toTensorList();
    std::vector<c10::List<at::Tensor>> parts(n);
    for (size_t i = 0; i < list.size(); ++i) {
      auto split = static_cast<at::Tensor>(list.get(i)).split(chunk_size, 0);
      for (size_t c = 0; c < n; ++c) parts[c].push_back(split[c]);
    }
    for (auto& p : parts) out.emplace_back(std::move(p));
  } else if (value.isList()) {
    const auto list = value.toList();
    std::vector<c10::impl::GenericList> parts;  // lists share storage when copied: build each
    for (size_t c = 0; c < n; ++c) parts.emplace_back(list.elementType());
    for (size_t i = 0; i < list.size(); ++i) {
      auto split = split_value(list.get(i), chunk_size, n, path + "[" + std::to_string(i) + "]");
      for (size_t c = 0; c < n; ++c) parts[c].push_back(std::move(split[c]));
    }
    for (auto& p : parts) out.emplace_back(std::move(p));
  } else if (value.isGenericDict()) {
    const auto dict = value.toGenericDict();
    std::vector<c10::impl::GenericDict> parts;
    for (size_t c = 0; c < n; ++c) parts.emplace_back(dict.keyType(), dict.valueType());
    for (const auto& kv : dict) {
      const auto& key = kv.key();
      auto split = split_value(kv.value(), chunk_size, n,
                               path + "['" + (key.isString() ? key.toStringRef() : key.tagKind()) + "']");
      for (size_t c = 0; c < n; ++c) parts[c].insert(key, std::move(split[c]));
    }
    for (auto& p : parts) out.emplace_back(std::move(p));
  } else {
    TORCH_CHECK(false, "split_input: cannot split the input's ", path, ", a value of type ", value.tagKind(),
                ", along dim 0; only tensors and tuples/lists/dicts of tensors split by themselves. "
                "Pass a split function (GradCacheOptions().split_input_fn(...)) for this input");
  }
  TORCH_INTERNAL_ASSERT(out.size() == n, "split_input: ", path, " gave ", out.size(), " chunks, expected ", n);
  return out;
}

}  // namespace

std::vector<ModelInput> split_input(const ModelInput& input, int64_t chunk_size) {
  TORCH_CHECK(chunk_size > 0, "split_input: chunk size must be positive, got ", chunk_size);
  const auto rows = input.batch_size();
  TORCH_CHECK(rows.has_value(), "split_input: the input holds no tensor, so it has no batch dimension to split; ",
              "pass a split function (GradCacheOptions().split_input_fn(...)) for this kind of input");
  TORCH_CHECK(*rows > 0, "split_input: the input is empty (0 rows); a step needs at least one example per model");
  const auto n = static_cast<size_t>((*rows + chunk_size - 1) / chunk_size);

  std::vector<std::vector<c10::IValue>> args(n);
  for (size_t i = 0; i < input.args().size(); ++i) {
    auto split = split_value(input.args()[i], chunk_size, n, detail::arg_path(i));
    for (size_t c = 0; c < n; ++c) args[c].push_back(std::move(split[c]));
  }
  std::vector<ModelInput::Kwargs> kwargs(n);
  for (const auto& [name, value] : input.kwargs()) {
    auto split = split_value(value, chunk_size, n, detail::kwarg_path(name));
    for (size_t c = 0; c < n; ++c) kwargs[c].emplace(name, std::move(split[c]));
  }
  std::vector<ModelInput> chunks;
  chunks.reserve(n);
  for (size_t c = 0; c < n; ++c) chunks.push_back(ModelInput::call(std::move(args[c]), std::move(kwargs[c])));
  return chunks;
}

}  // namespace gradcache
