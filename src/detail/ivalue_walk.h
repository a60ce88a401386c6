// Walking the values of a ModelInput, with a readable path for error messages.
#pragma once

#include <gradcache/model_input.h>

#include <string>

namespace gradcache {
namespace detail {

/// Path of positional argument i / keyword argument `name`, as shown in messages.
inline std::string arg_path(size_t i) { return "args[" + std::to_string(i) + "]"; }
inline std::string kwarg_path(const std::string& name) { return "kwargs['" + name + "']"; }

/// Calls fn(path, tensor) for every tensor inside `value`, depth first.
template <class Fn>
void for_each_tensor(const c10::IValue& value, const std::string& path, Fn&& fn) {
  if (value.isTensor()) {
    fn(path, value.toTensor());
  } else if (value.isTuple()) {
    const auto& elements = value.toTupleRef().elements();
    for (size_t i = 0; i < elements.size(); ++i) for_each_tensor(elements[i], path + "[" + std::to_string(i) + "]", fn);
  } else if (value.isList()) {
    const auto list = value.toList();
    for (size_t i = 0; i < list.size(); ++i) for_each_tensor(list.get(i), path + "[" + std::to_string(i) + "]", fn);
  } else if (value.isGenericDict()) {
    for (const auto& kv : value.toGenericDict()) {
      const auto& key = kv.key();
      for_each_tensor(kv.value(), path + "['" + (key.isString() ? key.toStringRef() : key.tagKind()) + "']", fn);
    }
  }
}

template <class Fn>
void for_each_tensor(const ModelInput& input, Fn&& fn) {
  for (size_t i = 0; i < input.args().size(); ++i) for_each_tensor(input.args()[i], arg_path(i), fn);
  for (const auto& [name, value] : input.kwargs()) for_each_tensor(value, kwarg_path(name), fn);
}

}  // namespace detail
}  // namespace gradcache
