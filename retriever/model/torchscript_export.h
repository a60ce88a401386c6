// The built-in encoder as TorchScript: what `gradcache export` saves, so that a trained model
// runs without this library (torch.jit.load in Python, torch::jit::load in C++) and can be
// trained further as a TorchScript model (gradcache train --model).
#pragma once

#include "retriever/model/encoders.h"

#include <torch/script.h>

namespace gradcache {
namespace retriever {

/// A self-contained TorchScript module computing what `encoder` computes:
/// forward(input_ids [B, T] int64, attention_mask [B, T] (non-zero = token)) -> [B, d], i.e.
/// token + position embeddings, pre-LN layers with masked attention, the final norm, mean
/// pooling over the mask, the projection and L2 normalisation when the encoder has them. It
/// holds copies of the weights as parameters (requiring grad) under the encoder's own names
/// ("layer0.qkv.weight", ...), and dropout follows the module's training mode
/// (torch.dropout(x, p, self.training)), so further training has dropout as before. Built
/// from TorchScript source (model/torchscript_export.cpp) that mirrors TransformerEncoderImpl::forward
/// op for op; tests check that both give the same embeddings. Returned in eval mode.
torch::jit::Module script_encoder(TransformerEncoderImpl& encoder);

}  // namespace retriever
}  // namespace gradcache
