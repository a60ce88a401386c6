#include <gradcache/hf/sentence_transformer.h>

#include "files/atomic_file.h"
#include "files/staged_directory.h"
#include "hf/model_json.h"
#include "hf/unicode.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

namespace gradcache {
namespace hf {
namespace {

namespace fs = std::filesystem;

// Files of a Hugging Face tokenizer that Python's AutoTokenizer reads, copied on save.
constexpr const char* kTokenizerFiles[] = {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                                           "vocab.txt", "added_tokens.json"};

at::Tensor batch_tensor(const std::map<std::string, at::Tensor>& batch, const char* key) {
  auto it = batch.find(key);
  return it == batch.end() ? at::Tensor() : it->second;
}

// F.normalize(x, p=2, dim=-1): x / max(|x|, 1e-12).
at::Tensor l2_normalize(const at::Tensor& x) { return x / x.norm(2, -1, /*keepdim=*/true).clamp_min(1e-12).expand_as(x); }

std::string path_in(const std::string& dir, const std::string& relative, const std::string& name) {
  return ((fs::path(dir) / relative) / name).lexically_normal().string();
}

// sentence_bert_config.json's settings as sentence-transformers settles them: max_seq_length
// from it, else the tokenizer's model_max_length, else the model's positions, and never more
// positions than the model has. A plain Hugging Face directory has no such file.
TransformerSettings transformer_settings(const std::string& transformer_dir, bool with_modules,
                                         const TransformerBackbone& model) {
  TransformerSettings settings;
  const std::string st_config = path_in(transformer_dir, "", "sentence_bert_config.json");
  if (with_modules && fs::exists(st_config))
    settings = parse_sentence_bert_config(detail::read_text_file(st_config), st_config);
  const std::string tokenizer_config = path_in(transformer_dir, "", "tokenizer_config.json");
  if (!settings.max_seq_length && fs::exists(tokenizer_config))
    settings.max_seq_length = tokenizer_max_length(detail::read_text_file(tokenizer_config), tokenizer_config);
  settings.max_seq_length =
      std::min(settings.max_seq_length.value_or(model.max_tokens()), model.max_tokens());
  return settings;
}

PoolingOptions read_pooling(const std::string& dir, const ModuleSpec& spec, const TransformerBackbone& model) {
  const std::string file = path_in(dir, spec.path, "config.json");
  PoolingOptions pooling = parse_pooling_config(detail::read_text_file(file), file);
  if (pooling.embedding_dimension() != model.hidden_size())
    throw ModelFileError(file, "embedding dimension " + std::to_string(pooling.embedding_dimension()) +
                                   " differs from the transformer's hidden_size " + std::to_string(model.hidden_size()));
  return pooling;
}

// What AutoTokenizer needs beside tokenizer.json: the class, the pad token and side, the length.
std::string tokenizer_config_json(const Tokenizer& tokenizer, int64_t max_seq_length) {
  detail::Json config = {{"tokenizer_class", "PreTrainedTokenizerFast"},
                         {"padding_side", tokenizer.padding_side() == Side::kLeft ? "left" : "right"},
                         {"model_max_length", tokenizer.model_max_length().value_or(static_cast<size_t>(max_seq_length))}};
  if (tokenizer.pad_id() >= 0) {
    if (const auto token = tokenizer.id_to_token(tokenizer.pad_id())) config["pad_token"] = *token;
  }
  return config.dump(2) + "\n";
}

}  // namespace

SentenceTransformerImpl::SentenceTransformerImpl(std::shared_ptr<TransformerBackbone> transformer,
                                                 SentenceTransformerOptions options)
    : transformer_(std::move(transformer)), options_(std::move(options)) {
  TORCH_CHECK(transformer_ != nullptr, "SentenceTransformer: no transformer");
  if (options_.pooling().embedding_dimension() == 0) options_.pooling().embedding_dimension(transformer_->hidden_size());
  TORCH_CHECK(options_.pooling().embedding_dimension() == transformer_->hidden_size(), "SentenceTransformer: pooling of ",
              options_.pooling().embedding_dimension(), "-dimensional tokens over a transformer of hidden size ",
              transformer_->hidden_size());
  TORCH_CHECK(options_.max_seq_length() >= 1 && options_.max_seq_length() <= transformer_->max_tokens(),
              "SentenceTransformer: max_seq_length ", options_.max_seq_length(), " must be from 1 to the model's ",
              transformer_->max_tokens(), " positions");
  register_module("transformer", transformer_);
  int64_t size = pooled_dimension(options_.pooling());
  for (size_t i = 0; i < options_.dense().size(); ++i) {
    const DenseOptions& dense = options_.dense()[i];
    TORCH_CHECK(dense.in_features() == size, "SentenceTransformer: Dense module ", i, " takes ", dense.in_features(),
                " features where the module before it gives ", size);
    dense_.push_back(register_module("dense_" + std::to_string(i), Dense(dense)));
    size = dense.out_features();
  }
}

int64_t SentenceTransformerImpl::embedding_dimension() const {
  return dense_.empty() ? pooled_dimension(options_.pooling()) : dense_.back()->options().out_features();
}

at::Tensor SentenceTransformerImpl::embed(const std::map<std::string, at::Tensor>& batch, bool with_pooler,
                                          TransformerOutput* out) {
  at::Tensor ids = batch_tensor(batch, "input_ids");
  TORCH_CHECK(ids.defined() && ids.dim() == 2, "SentenceTransformer: the batch needs \"input_ids\" [batch, tokens]");
  at::Tensor mask = batch_tensor(batch, "attention_mask");
  if (!mask.defined()) mask = at::ones_like(ids);
  TORCH_CHECK(mask.sizes() == ids.sizes(), "SentenceTransformer: attention_mask ", mask.sizes(), " does not match input_ids ",
              ids.sizes());
  at::Tensor types = batch_tensor(batch, "token_type_ids");
  // Columns after every row's last real token change nothing (masked keys, never pooled): a
  // chunk of a batch padded to its longest text drops them, as sentence-transformers' cached
  // losses do with each mini-batch.
  const int64_t columns = ids.size(1);
  const int64_t used = columns == 0 ? 0
                                    : (mask.ne(0).any(0).to(at::kLong) * at::arange(1, columns + 1, ids.options().dtype(at::kLong)))
                                          .max()
                                          .item<int64_t>();
  if (used > 0 && used < columns) {
    ids = ids.narrow(1, 0, used);
    mask = mask.narrow(1, 0, used);
    if (types.defined()) types = types.narrow(1, 0, used);
  }
  const at::Tensor prompt = batch_tensor(batch, "prompt_length");
  const int64_t prompt_length = prompt.defined() && prompt.numel() > 0 ? prompt.flatten()[0].item<int64_t>() : 0;
  *out = transformer_->encode(ids, mask, types, with_pooler);
  at::Tensor sentence = pool(out->last_hidden_state, mask, options_.pooling(), prompt_length);
  for (auto& dense : dense_) sentence = dense->forward(sentence);
  return options_.normalize() ? l2_normalize(sentence) : sentence;
}

at::Tensor SentenceTransformerImpl::forward(const std::map<std::string, at::Tensor>& batch) {
  TransformerOutput out;
  // No pooler: sentence-transformers does not use it (and its weights then get no gradient).
  return embed(batch, /*with_pooler=*/false, &out);
}

c10::Dict<std::string, at::Tensor> SentenceTransformerImpl::features(const std::map<std::string, at::Tensor>& batch) {
  TransformerOutput out;
  const at::Tensor sentence = embed(batch, transformer_->has_pooler(), &out);
  c10::Dict<std::string, at::Tensor> result;
  result.insert("token_embeddings", out.last_hidden_state);
  result.insert("sentence_embedding", sentence);
  if (out.pooler_output.defined()) result.insert("pooler_output", out.pooler_output);
  return result;
}

std::string SentenceTransformerImpl::prompt(const std::string& name) const {
  if (name.empty()) return "";
  const auto& prompts = options_.settings().prompts;
  auto it = prompts.find(name);
  if (it != prompts.end()) return it->second;
  std::string known;
  for (const auto& entry : prompts) known += (known.empty() ? "" : ", ") + entry.first;
  throw std::invalid_argument("SentenceTransformer: no prompt named \"" + name + "\" (the model has: " +
                              (known.empty() ? "none" : known) + ")");
}

void SentenceTransformerImpl::set_prompt(const std::string& name, const std::string& text) {
  options_.settings().prompts[name] = text;
}

const Tokenizer& SentenceTransformerImpl::tokenizer() const {
  if (options_.tokenizer() == nullptr)
    throw std::logic_error("SentenceTransformer: this model has no tokenizer (its directory had no tokenizer.json or vocab.txt)");
  return *options_.tokenizer();
}

std::map<std::string, at::Tensor> SentenceTransformerImpl::tokenize(const std::vector<std::string>& texts,
                                                                    const std::optional<std::string>& prompt_text) const {
  const Tokenizer& tokens = tokenizer();
  const std::string prefix = prompt_text ? *prompt_text : prompt(options_.settings().default_prompt_name);
  auto prepare = [&](const std::string& text) { return options_.do_lower_case() ? lower_case(text) : text; };
  const auto max_len = static_cast<size_t>(options_.max_seq_length());
  std::vector<std::vector<int64_t>> ids;
  ids.reserve(texts.size());
  for (const std::string& text : texts) ids.push_back(tokens.encode(prepare(prefix + text), max_len));
  // Decoder embedders (Qwen3-Embedding, ...) pad on the left, as their tokenizer_config.json says.
  auto batch = pad_batch(ids, std::max<int64_t>(tokens.pad_id(), 0), tokens.padding_side() == Side::kLeft);
  if (!options_.pooling().include_prompt() && !prefix.empty()) {
    // As sentence-transformers: the prompt's own ids, without a trailing special token ([SEP]).
    const std::vector<int64_t> prompt_ids = tokens.encode(prepare(prefix), max_len);
    auto length = static_cast<int64_t>(prompt_ids.size());
    if (length > 0 && prompt_ids.back() == tokens.sep_id()) --length;
    batch["prompt_length"] = at::full({static_cast<int64_t>(texts.size())}, length, at::kLong);
  }
  return batch;
}

void SentenceTransformerImpl::save(const std::string& dir) const {
  files::StagedDirectory staged(dir, "config.json", /*overwrite=*/true, "SentenceTransformer::save directory");
  save_transformer(*transformer_, staged.partial());
  files::write_file_atomic(staged.path("modules.json"), modules_json(dense_.size(), options_.normalize()));
  fs::create_directories(staged.path("1_Pooling"));
  files::write_file_atomic(staged.path("1_Pooling/config.json"), pooling_config_json(options_.pooling()));
  for (size_t i = 0; i < dense_.size(); ++i) {
    const std::string folder = staged.path(module_folder(2 + i, ModuleKind::Dense));
    fs::create_directories(folder);
    save_dense(dense_[i], folder);
  }
  if (options_.normalize()) fs::create_directories(staged.path(module_folder(2 + dense_.size(), ModuleKind::Normalize)));
  files::write_file_atomic(staged.path("sentence_bert_config.json"),
                            sentence_bert_config_json(options_.max_seq_length(), options_.do_lower_case()));
  files::write_file_atomic(staged.path("config_sentence_transformers.json"), model_settings_json(options_.settings()));
  if (!options_.tokenizer_dir().empty()) {
    for (const char* name : kTokenizerFiles) {
      const fs::path source = fs::path(options_.tokenizer_dir()) / name;
      if (fs::exists(source)) fs::copy_file(source, staged.path(name), fs::copy_options::overwrite_existing);
    }
  }
  // A tokenizer read from vocab.txt (or given in code, or kept by a checkpoint) gets its
  // tokenizer.json too, and the tokenizer_config.json transformers needs to pad with it.
  if (options_.tokenizer() != nullptr && !fs::exists(staged.path("tokenizer.json")))
    files::write_file_atomic(staged.path("tokenizer.json"), options_.tokenizer()->to_json());
  if (options_.tokenizer() != nullptr && !fs::exists(staged.path("tokenizer_config.json")))
    files::write_file_atomic(staged.path("tokenizer_config.json"),
                                         tokenizer_config_json(*options_.tokenizer(), options_.max_seq_length()));
  staged.commit();
}

SentenceTransformer load_sentence_transformer(const std::string& dir) {
  if (!fs::is_directory(dir)) throw ModelFileError(dir, "not a directory (expected a sentence-transformers or Hugging Face model)");
  const std::string modules_file = path_in(dir, "", "modules.json");
  const bool with_modules = fs::exists(modules_file);
  std::vector<ModuleSpec> specs;
  if (with_modules) specs = parse_modules_json(detail::read_text_file(modules_file), modules_file);
  const std::string transformer_dir =
      with_modules && !specs[0].path.empty() ? (fs::path(dir) / specs[0].path).lexically_normal().string() : dir;
  std::shared_ptr<TransformerBackbone> transformer = load_transformer(transformer_dir);

  SentenceTransformerOptions options;
  std::vector<Dense> dense;  // with their weights
  const TransformerSettings settings = transformer_settings(transformer_dir, with_modules, *transformer);
  options.max_seq_length(*settings.max_seq_length);
  options.do_lower_case(settings.do_lower_case);
  if (with_modules) {
    options.pooling(read_pooling(dir, specs[1], *transformer));
    int64_t size = pooled_dimension(options.pooling());
    for (size_t i = 2; i < specs.size() && specs[i].kind == ModuleKind::Dense; ++i) {
      dense.push_back(load_dense(path_in(dir, specs[i].path, "")));
      const int64_t in = dense.back()->options().in_features();
      if (in != size)
        throw ModelFileError(path_in(dir, specs[i].path, "config.json"), "in_features " + std::to_string(in) +
                                 " differs from the " + std::to_string(size) + " features of the module before it");
      size = dense.back()->options().out_features();
    }
    for (const Dense& module : dense) options.dense().push_back(module->options());
    options.normalize(specs.back().kind == ModuleKind::Normalize);
    const std::string normalize_file = options.normalize() ? path_in(dir, specs.back().path, "config.json") : "";
    if (!normalize_file.empty() && fs::exists(normalize_file))
      check_normalize_config(detail::read_text_file(normalize_file), normalize_file);
    const std::string settings_file = path_in(dir, "", "config_sentence_transformers.json");
    if (fs::exists(settings_file)) options.settings(parse_model_settings(detail::read_text_file(settings_file), settings_file));
  } else {
    options.pooling(PoolingOptions().embedding_dimension(transformer->hidden_size()));  // mean, as sentence-transformers
  }
  const bool has_tokenizer = std::any_of(std::begin(kTokenizerFiles), std::end(kTokenizerFiles), [&](const char* name) {
    return fs::exists(fs::path(transformer_dir) / name);
  });
  if (has_tokenizer) {
    options.tokenizer_dir(transformer_dir);
    if (fs::exists(fs::path(transformer_dir) / "tokenizer.json") || fs::exists(fs::path(transformer_dir) / "vocab.txt"))
      options.tokenizer(std::make_shared<const Tokenizer>(Tokenizer::from_directory(transformer_dir)));
  }
  SentenceTransformer model(transformer, options);  // checks that the Dense sizes chain
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < dense.size(); ++i) {
    auto loaded = dense[i]->named_parameters();
    for (auto& item : model->dense()[i]->named_parameters()) item.value().copy_(loaded[item.key()]);
  }
  model->eval();
  return model;
}

std::map<std::string, at::Tensor> pad_batch(const std::vector<std::vector<int64_t>>& ids, int64_t pad_id, bool pad_left) {
  size_t longest = 0;
  for (const auto& row : ids) longest = std::max(longest, row.size());
  const auto rows = static_cast<int64_t>(ids.size()), columns = static_cast<int64_t>(longest);
  at::Tensor input_ids = at::full({rows, columns}, pad_id, at::kLong);
  at::Tensor mask = at::zeros({rows, columns}, at::kLong);
  auto id_access = input_ids.accessor<int64_t, 2>();
  auto mask_access = mask.accessor<int64_t, 2>();
  for (int64_t r = 0; r < rows; ++r) {
    const auto& row = ids[static_cast<size_t>(r)];
    const int64_t start = pad_left ? columns - static_cast<int64_t>(row.size()) : 0;
    for (size_t c = 0; c < row.size(); ++c) {
      id_access[r][start + static_cast<int64_t>(c)] = row[c];
      mask_access[r][start + static_cast<int64_t>(c)] = 1;
    }
  }
  return {{"input_ids", input_ids}, {"attention_mask", mask}};
}

}  // namespace hf
}  // namespace gradcache
