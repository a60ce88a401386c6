#include "retriever/model/encoders.h"

#include "files/atomic_file.h"

#include <torch/torch.h>

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <fstream>
#include <stdexcept>
#include <sstream>

namespace gradcache {
namespace retriever {

TransformerLayerImpl::TransformerLayerImpl(int64_t dim, int64_t heads, int64_t ffn_dim, double dropout)
    : heads_(heads) {
  TORCH_CHECK(heads > 0 && dim % heads == 0, "encoder: the dimension (", dim, ") must be a multiple of the heads (",
              heads, ")");
  norm1_ = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
  norm2_ = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
  qkv_ = register_module("qkv", torch::nn::Linear(dim, 3 * dim));
  out_ = register_module("out", torch::nn::Linear(dim, dim));
  ffn1_ = register_module("ffn1", torch::nn::Linear(dim, ffn_dim));
  ffn2_ = register_module("ffn2", torch::nn::Linear(ffn_dim, dim));
  attn_drop_ = register_module("attn_drop", FastDropout(dropout));
  drop_ = register_module("drop", FastDropout(dropout));
}

torch::Tensor TransformerLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& key_mask) {
  const auto b = x.size(0), t = x.size(1), d = x.size(2), dh = d / heads_;
  // [B, T, 3, H, dh] -> three [B, H, T, dh]
  auto qkv = qkv_(norm1_(x)).view({b, t, 3, heads_, dh}).permute({2, 0, 3, 1, 4});
  auto q = qkv[0], k = qkv[1], v = qkv[2];
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(dh));
  scores = scores.masked_fill(key_mask.logical_not().view({b, 1, 1, t}), -std::numeric_limits<float>::infinity());
  auto attn = attn_drop_(torch::softmax(scores, -1));
  auto h = torch::matmul(attn, v).transpose(1, 2).reshape({b, t, d});
  auto y = x + drop_(out_(h));
  return y + drop_(ffn2_(drop_(torch::gelu(ffn1_(norm2_(y))))));
}

TransformerEncoderImpl::TransformerEncoderImpl(EncoderOptions options) : options_(options) {
  TORCH_CHECK(options.vocab_size() > 1, "encoder: vocabulary size must be > 1, got ", options.vocab_size());
  TORCH_CHECK(options.dim() > 0 && options.layers() >= 0 && options.max_len() > 0 && options.ffn_dim() > 0,
              "encoder: dim, ffn_dim and max_len must be positive and layers non-negative");
  TORCH_CHECK(options.dropout() >= 0 && options.dropout() < 1, "encoder: dropout must be in [0, 1), got ",
              options.dropout());
  tokens_ = register_module("tokens", torch::nn::Embedding(torch::nn::EmbeddingOptions(options.vocab_size(),
                                                                                         options.dim())
                                                                 .padding_idx(0)));
  positions_ = register_module("positions", torch::nn::Embedding(options.max_len(), options.dim()));
  for (int64_t i = 0; i < options.layers(); ++i) {
    layers_.push_back(register_module(
        "layer" + std::to_string(i),
        TransformerLayer(options.dim(), options.heads(), options.ffn_dim(), options.dropout())));
  }
  final_norm_ = register_module("final_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({options.dim()})));
  if (options.projection_dim() > 0) {
    projection_ = register_module("projection", torch::nn::Linear(options.dim(), options.projection_dim()));
  }
  // Small initial embeddings keep the residual stream well scaled (as BERT's 0.02).
  torch::NoGradGuard no_grad;
  tokens_->weight.normal_(0, 0.02);
  tokens_->weight[0].zero_();
  positions_->weight.normal_(0, 0.02);
}

torch::Tensor TransformerEncoderImpl::forward(const TokenBatch& batch) {
  auto ids_it = batch.find("input_ids");
  auto mask_it = batch.find("attention_mask");
  TORCH_CHECK(ids_it != batch.end() && mask_it != batch.end(),
              "encoder: the batch needs \"input_ids\" and \"attention_mask\"");
  const auto& ids = ids_it->second;
  const auto mask = mask_it->second.to(torch::kBool);
  TORCH_CHECK(ids.dim() == 2 && ids.sizes() == mask.sizes(), "encoder: input_ids and attention_mask must be [B, T] ",
              "of the same shape, got ", ids.sizes(), " and ", mask.sizes());
  TORCH_CHECK(ids.size(1) <= options_.max_len(), "encoder: sequences of ", ids.size(1),
              " tokens exceed the encoder's ", options_.max_len(), " positions");
  auto x = tokens_(ids) + positions_(torch::arange(ids.size(1), ids.options())).unsqueeze(0);
  for (auto& layer : layers_) x = layer(x, mask);
  auto pooled = mean_pool(final_norm_(x), mask);
  if (projection_) pooled = projection_(pooled);
  if (options_.normalize()) pooled = pooled / pooled.norm(2, 1, /*keepdim=*/true).clamp_min(1e-12);
  return pooled;
}

torch::Tensor mean_pool(const torch::Tensor& hidden, const torch::Tensor& mask) {
  auto m = mask.to(hidden.dtype()).unsqueeze(-1);
  return (hidden * m).sum(1) / m.sum(1).clamp_min(1);
}

torch::Tensor call_script_encoder(torch::jit::Module& module, const TokenBatch& batch) {
  const auto& ids = batch.at("input_ids");
  const auto& mask = batch.at("attention_mask");
  c10::IValue out;
  try {
    out = module.forward({ids, mask.to(torch::kLong)});
  } catch (const std::exception& e) {
    TORCH_CHECK(false, "TorchScript encoder: calling forward(input_ids, attention_mask) failed; the model must take ",
                "int64 input_ids [B, T] and attention_mask [B, T] (1 = token) and return [B, d] or [B, T, d]. ",
                "The error was: ", e.what());
  }
  if (out.isTuple() && !out.toTupleRef().elements().empty()) out = out.toTupleRef().elements()[0];  // HF: (last_hidden_state, ...)
  TORCH_CHECK(out.isTensor(), "TorchScript encoder: forward returned a ", out.tagKind(),
              "; it must return a tensor [B, d] or [B, T, d] (or a tuple whose first element is one)");
  auto rep = out.toTensor();
  TORCH_CHECK(rep.is_floating_point() && (rep.dim() == 2 || rep.dim() == 3) && rep.size(0) == ids.size(0) &&
                  (rep.dim() == 2 || rep.size(1) == ids.size(1)),
              "TorchScript encoder: forward returned shape ", rep.sizes(), " (", rep.scalar_type(), ") for input_ids ",
              ids.sizes(), "; it must return floating-point [B, d] or [B, T, d]");
  return rep.dim() == 3 ? mean_pool(rep, mask) : rep;
}

void check_script_vocabulary(torch::jit::Module& module, int64_t vocab_size, const std::string& model_name,
                             const std::string& tokenizer_name) {
  const bool training = module.is_training();
  module.train(false);
  auto takes = [&](int64_t id) {
    try {
      torch::NoGradGuard no_grad;
      module.forward({torch::full({1, 1}, id, torch::kLong), torch::ones({1, 1}, torch::kLong)});
      return true;
    } catch (const std::exception&) {
      return false;
    }
  };
  // Only a model that takes a small id but not the largest is refused for its tokenizer; one that
  // fails on both is wrong in another way, which its first call reports (call_script_encoder).
  const bool mismatch = !takes(vocab_size - 1) && takes(std::min<int64_t>(1, vocab_size - 1));
  module.train(training);
  if (mismatch)
    throw std::invalid_argument("the tokenizer " + tokenizer_name + " has " + std::to_string(vocab_size) +
                                " pieces, but the model " + model_name + " fails on token id " +
                                std::to_string(vocab_size - 1) +
                                " (its embedding has fewer rows?): use the tokenizer the model was trained or "
                                "exported with (gradcache export writes it beside the model as tokenizer.model)");
}

namespace {

gradcache::Model script_model(const std::shared_ptr<torch::jit::Module>& module) {
  return gradcache::Model([module](const TokenBatch& batch) { return call_script_encoder(*module, batch); })
      .with_state_of(*module);
}

std::shared_ptr<torch::jit::Module> load_script(std::istream& in, const std::string& what) {
  try {
    return std::make_shared<torch::jit::Module>(torch::jit::load(in));
  } catch (const std::exception& e) {
    TORCH_CHECK(false, "cannot load the TorchScript encoder ", what, ": ", e.what());
  }
}

}  // namespace

BiEncoder BiEncoder::builtin(const EncoderOptions& options, bool untie) {
  BiEncoder bi;
  bi.builtins_.emplace_back(options);
  if (untie) bi.builtins_.emplace_back(options);
  bi.query_ = gradcache::Model(bi.builtins_.front());
  bi.passage_ = gradcache::Model(bi.builtins_.back());
  return bi;
}

BiEncoder BiEncoder::pretrained(std::vector<hf::SentenceTransformer> encoders) {
  TORCH_CHECK(encoders.size() == 1 || encoders.size() == 2, "a pretrained bi-encoder has one or two encoders");
  BiEncoder bi;
  bi.pretrained_ = std::move(encoders);
  bi.query_ = gradcache::Model(bi.pretrained_.front());
  bi.passage_ = gradcache::Model(bi.pretrained_.back());
  return bi;
}

BiEncoder BiEncoder::torchscript(const std::string& path, bool untie) {
  const auto problem = files::regular_file_problem(path);
  TORCH_CHECK(problem.empty(), "the TorchScript encoder ", path, ": ", problem);
  std::ifstream file(path, std::ios::binary);
  TORCH_CHECK(file, "cannot open the TorchScript encoder ", path);
  std::stringstream bytes;
  bytes << file.rdbuf();
  std::vector<std::string> copies(untie ? 2 : 1, bytes.str());
  return torchscript_from_bytes(copies);
}

BiEncoder BiEncoder::torchscript_from_bytes(const std::vector<std::string>& bytes) {
  TORCH_CHECK(bytes.size() == 1 || bytes.size() == 2, "a TorchScript bi-encoder has one or two encoders");
  BiEncoder bi;
  for (const auto& b : bytes) {
    std::istringstream in(b);
    bi.scripts_.push_back(load_script(in, c10::str("(", b.size(), " bytes)")));
  }
  bi.query_ = script_model(bi.scripts_.front());
  bi.passage_ = script_model(bi.scripts_.back());
  bi.train(true);
  return bi;
}

std::vector<torch::Tensor> BiEncoder::parameters() const {
  std::vector<torch::Tensor> out;
  auto add = [&](const gradcache::Model& m) {
    for (auto& p : m.parameters()) {
      if (p.requires_grad()) out.push_back(p);
    }
  };
  add(query_);
  if (!tied()) add(passage_);
  if (similarity_) {
    for (auto& p : similarity_->parameters()) out.push_back(p);
  }
  return out;
}

std::vector<std::pair<std::string, torch::Tensor>> BiEncoder::named_state() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  auto add = [&](const std::string& prefix, size_t i) {
    if (!builtins_.empty() || !pretrained_.empty()) {
      const torch::nn::Module& m = builtins_.empty() ? static_cast<const torch::nn::Module&>(*pretrained_[i])
                                                     : static_cast<const torch::nn::Module&>(*builtins_[i]);
      for (const auto& kv : m.named_parameters()) out.emplace_back(prefix + kv.key(), kv.value());
      for (const auto& kv : m.named_buffers()) out.emplace_back(prefix + kv.key(), kv.value());
    } else {
      for (const auto& kv : scripts_[i]->named_parameters()) out.emplace_back(prefix + kv.name, kv.value);
      for (const auto& kv : scripts_[i]->named_buffers()) out.emplace_back(prefix + kv.name, kv.value);
    }
  };
  if (tied()) {
    add("", 0);
  } else {
    add("query.", 0);
    add("passage.", 1);
  }
  if (similarity_) {
    for (const auto& kv : similarity_->named_parameters()) out.emplace_back("similarity." + kv.key(), kv.value());
    for (const auto& kv : similarity_->named_buffers()) out.emplace_back("similarity." + kv.key(), kv.value());
  }
  return out;
}

void BiEncoder::train(bool on) {
  for (auto& m : builtins_) m->train(on);
  for (auto& m : pretrained_) m->train(on);
  for (auto& s : scripts_) s->train(on);
  if (similarity_) similarity_->train(on);
}

void BiEncoder::to(const c10::Device& device) {
  for (auto& m : builtins_) m->to(device);
  for (auto& m : pretrained_) m->to(device);
  for (auto& s : scripts_) s->to(device);
  if (similarity_) similarity_->to(device);
}

void BiEncoder::set_similarity(LearnedSimilarity phi) { similarity_ = std::move(phi); }

bool BiEncoder::is_training() const {
  if (!builtins_.empty()) return builtins_.front()->is_training();
  if (!pretrained_.empty()) return pretrained_.front()->is_training();
  return scripts_.front()->is_training();
}

int64_t BiEncoder::output_dim() const {
  if (!builtins_.empty()) {
    const auto& o = builtins_.front()->options();
    return o.projection_dim() > 0 ? o.projection_dim() : o.dim();
  }
  return pretrained_.empty() ? 0 : pretrained_.front()->embedding_dimension();
}

bool BiEncoder::normalizes() const {
  if (!builtins_.empty()) return builtins_.front()->options().normalize();
  return !pretrained_.empty() && pretrained_.front()->options().normalize();
}

std::vector<std::string> BiEncoder::torchscript_bytes() const {
  std::vector<std::string> out;
  for (const auto& s : scripts_) {
    std::ostringstream bytes;
    s->save(bytes);
    out.push_back(bytes.str());
  }
  return out;
}

std::string weights_digest(const BiEncoder& model) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto add = [&crc](const void* data, size_t size) {
    const auto* bytes = static_cast<const Bytef*>(data);
    for (size_t done = 0; done < size;) {  // crc32 takes at most 4 GiB at once
      const auto n = static_cast<uInt>(std::min<size_t>(size - done, 1u << 30));
      crc = crc32(crc, bytes + done, n);
      done += n;
    }
  };
  torch::NoGradGuard no_grad;
  for (const auto& [name, tensor] : model.named_state()) {
    const std::string header = name + " " + std::string(c10::toString(tensor.scalar_type())) + " " +
                               c10::str(tensor.sizes()) + "\n";
    add(header.data(), header.size());
    const auto bytes = tensor.detach().to(torch::kCPU).contiguous();
    add(bytes.data_ptr(), bytes.nbytes());
  }
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08lx", static_cast<unsigned long>(crc));
  return hex;
}

}  // namespace retriever
}  // namespace gradcache
