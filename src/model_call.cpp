#include <gradcache/model_call.h>

#include <c10/util/Exception.h>

namespace gradcache {

c10::IValue call_model(const Model& model, const ModelInput& chunk, Precision precision) {
  return precision == Precision::fp32 ? model(chunk) : call_model_in_precision(model, chunk, precision);
}

at::Tensor pick_rep(const c10::IValue& model_output, const GetRepFn& get_rep) {
  if (get_rep) return get_rep(model_output);
  TORCH_CHECK(model_output.isTensor(), "GradCache: the model returned a ", model_output.tagKind(),
              ", not a tensor; pass GradCacheOptions().get_rep_fn(...) to pick the representation out of it");
  return model_output.toTensor();
}

at::Tensor chunk_representation(const Model& model, const ModelInput& chunk, Precision precision,
                                const GetRepFn& get_rep) {
  return to_full_precision(pick_rep(call_model(model, chunk, precision), get_rep));
}

}  // namespace gradcache
