// How a chunk reaches a model and comes back as what the loss sees: the model call under
// autocast for the precision, the representation picked out of the output, cast to fp32.
// GradCache, DualGradCache, the functional API and find_chunk_size all go through here.
#pragma once

#include <gradcache/model.h>
#include <gradcache/model_input.h>
#include <gradcache/precision_kind.h>

#include <functional>
#include <vector>

namespace gradcache {

/// Picks the representation tensor out of a model's output (the reference's get_rep_fn).
using GetRepFn = std::function<at::Tensor(const c10::IValue& model_output)>;

/// Calls `model` on `chunk` under autocast for `precision`, on the devices of the model's
/// parameters and the chunk's tensors.
c10::IValue call_model(const Model& model, const ModelInput& chunk, Precision precision);
/// call_model for bf16 and fp16: under an AutocastScope (defined with it, in precision.cpp).
c10::IValue call_model_in_precision(const Model& model, const ModelInput& chunk, Precision precision);

/// The representation in a model's output: `get_rep(output)` if given, else the output,
/// which must then be a tensor.
at::Tensor pick_rep(const c10::IValue& model_output, const GetRepFn& get_rep);

/// What the loss sees of a chunk: pick_rep(call_model(...)) in fp32. The cast is
/// differentiable, so a replay's backward brings the fp32 cached gradient back to the
/// representation's own dtype.
at::Tensor chunk_representation(const Model& model, const ModelInput& chunk, Precision precision,
                                const GetRepFn& get_rep);

}  // namespace gradcache
