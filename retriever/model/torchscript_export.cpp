#include "retriever/model/torchscript_export.h"

#include <torch/torch.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>

namespace gradcache {
namespace retriever {
namespace {

using torch::jit::Module;

// One pre-LN layer: TransformerLayerImpl::forward, op for op.
constexpr const char* kLayerSource = R"TS(
def forward(self, x: Tensor, key_mask: Tensor) -> Tensor:
    b = x.size(0)
    t = x.size(1)
    d = x.size(2)
    dh = d // self.heads
    qkv = torch.linear(torch.layer_norm(x, [d], self.norm1.weight, self.norm1.bias, 1e-05),
                       self.qkv.weight, self.qkv.bias)
    qkv = qkv.view([b, t, 3, self.heads, dh]).permute([2, 0, 3, 1, 4])
    q = qkv[0]
    k = qkv[1]
    v = qkv[2]
    scores = torch.matmul(q, k.transpose(-2, -1)) / self.sqrt_head_dim
    scores = scores.masked_fill(key_mask.logical_not().view([b, 1, 1, t]), float("-inf"))
    attn = torch.dropout(torch.softmax(scores, -1), self.dropout, self.training)
    h = torch.matmul(attn, v).transpose(1, 2).reshape([b, t, d])
    y = x + torch.dropout(torch.linear(h, self.out.weight, self.out.bias), self.dropout, self.training)
    f = torch.linear(torch.layer_norm(y, [d], self.norm2.weight, self.norm2.bias, 1e-05), self.ffn1.weight,
                     self.ffn1.bias)
    f = torch.dropout(torch.gelu(f), self.dropout, self.training)
    f = torch.linear(f, self.ffn2.weight, self.ffn2.bias)
    return y + torch.dropout(f, self.dropout, self.training)
)TS";

// TransformerEncoderImpl::forward up to the layers; LAYERS and the tail are filled in.
constexpr const char* kEncoderHead = R"TS(
def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
    assert input_ids.dim() == 2 and input_ids.size() == attention_mask.size(), "encoder: input_ids and attention_mask must be [B, T] of the same shape"
    assert input_ids.size(1) <= self.max_len, "encoder: sequences exceed the encoder's positions (max_len)"
    mask = attention_mask != 0
    positions = torch.arange(input_ids.size(1), dtype=input_ids.dtype, device=input_ids.device)
    x = torch.embedding(self.tokens.weight, input_ids, 0) + torch.embedding(self.positions.weight, positions).unsqueeze(0)
)TS";

constexpr const char* kEncoderTail = R"TS(
    x = torch.layer_norm(x, [x.size(2)], self.final_norm.weight, self.final_norm.bias, 1e-05)
    m = mask.to(x.dtype).unsqueeze(-1)
    pooled = (x * m).sum(1) / m.sum(1).clamp_min(1)
)TS";

class ScriptBuilder {
 public:
  explicit ScriptBuilder(TransformerEncoderImpl& encoder) {
    for (const auto& p : encoder.named_parameters()) weights_[p.key()] = p.value();
  }

  // A module of the given class holding the weights named "<prefix>.weight" and "<prefix>.bias".
  Module weights_of(const std::string& prefix) {
    Module m = new_module("Weights");
    for (const char* name : {"weight", "bias"}) {
      const auto it = weights_.find(prefix + "." + name);
      if (it != weights_.end()) m.register_parameter(name, it->second.detach().clone().requires_grad_(true), false);
    }
    return m;
  }

  Module layer(const std::string& prefix, const EncoderOptions& options) {
    Module m = new_module("TransformerLayer");
    for (const char* part : {"norm1", "norm2", "qkv", "out", "ffn1", "ffn2"})
      m.register_module(part, weights_of(prefix + "." + part));
    m.register_attribute("heads", c10::IntType::get(), options.heads());
    m.register_attribute("dropout", c10::FloatType::get(), options.dropout());
    m.register_attribute("sqrt_head_dim", c10::FloatType::get(),
                         std::sqrt(static_cast<double>(options.dim() / options.heads())));
    m.define(kLayerSource);
    return m;
  }

  Module new_module(const std::string& name) {
    Module m(c10::QualifiedName("__torch__.gradcache." + name), unit_, /*shouldMangle=*/true);
    m.register_attribute("training", c10::BoolType::get(), true);
    return m;
  }

 private:
  std::shared_ptr<torch::jit::CompilationUnit> unit_ = std::make_shared<torch::jit::CompilationUnit>();
  std::map<std::string, at::Tensor> weights_;
};

}  // namespace

torch::jit::Module script_encoder(TransformerEncoderImpl& encoder) {
  const EncoderOptions& options = encoder.options();
  ScriptBuilder builder(encoder);
  Module m = builder.new_module("TransformerEncoder");
  m.register_module("tokens", builder.weights_of("tokens"));
  m.register_module("positions", builder.weights_of("positions"));
  std::string source = kEncoderHead;
  for (int64_t i = 0; i < options.layers(); ++i) {
    const std::string name = "layer" + std::to_string(i);
    m.register_module(name, builder.layer(name, options));
    source += "    x = self." + name + ".forward(x, mask)\n";
  }
  m.register_module("final_norm", builder.weights_of("final_norm"));
  source += kEncoderTail;
  if (options.projection_dim() > 0) {
    m.register_module("projection", builder.weights_of("projection"));
    source += "    pooled = torch.linear(pooled, self.projection.weight, self.projection.bias)\n";
  }
  if (options.normalize()) source += "    pooled = pooled / pooled.norm(2, [1], True).clamp_min(1e-12)\n";
  source += "    return pooled\n";
  m.register_attribute("max_len", c10::IntType::get(), options.max_len());
  m.define(source);
  m.eval();
  return m;
}

}  // namespace retriever
}  // namespace gradcache
