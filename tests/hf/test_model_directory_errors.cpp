// A model directory that cannot be used: each problem is one ModelFileError naming the file and
// saying what is wrong.
#include "model_test_util.h"

namespace hf = gradcache::hf;

namespace {

// The ModelFileError loading `dir` throws: its file() must be `file` and its message hold `words`.
void expect_error(const std::string& dir, const std::string& file, const std::string& words) {
  try {
    hf::load_sentence_transformer(dir);
    ADD_FAILURE() << "no error; expected " << file << ": ..." << words;
  } catch (const hf::ModelFileError& error) {
    EXPECT_EQ(error.file(), file) << error.what();
    EXPECT_NE(std::string(error.what()).find(words), std::string::npos) << error.what();
  }
}

std::string modules_with(const std::string& extra_type) {
  return R"([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
             {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
             {"idx": 2, "name": "2", "path": "2_Dense", "type": ")" +
         extra_type + R"("}])";
}

}  // namespace

TEST(ModelDirectoryErrors, MissingThings) {
  const std::string scratch = hftest::scratch_dir();
  expect_error(scratch + "/nothing", scratch + "/nothing", "not a directory");
  const std::string dir = hftest::copy_of_tiny_model(scratch);
  hftest::fs::remove(dir + "/model.safetensors");
  expect_error(dir, dir, "has no weights: model.safetensors");
  hftest::fs::remove(dir + "/config.json");
  expect_error(dir, dir + "/config.json", "missing");
  const std::string no_pooling = hftest::copy_of_tiny_model(scratch + "/b");
  hftest::fs::remove_all(no_pooling + "/1_Pooling");
  expect_error(no_pooling, no_pooling + "/1_Pooling/config.json", "missing");
}

TEST(ModelDirectoryErrors, UnsupportedModules) {
  const std::string dir = hftest::copy_of_tiny_model(hftest::scratch_dir());
  hftest::write_text(dir + "/modules.json", modules_with("sentence_transformers.models.LayerNorm"));
  expect_error(dir, dir + "/modules.json",
               "module \"sentence_transformers.models.LayerNorm\" is not supported (supported: sentence_transformers' "
               "Transformer, Pooling, Dense and Normalize)");
  hftest::write_text(dir + "/modules.json", modules_with("my_package.Normalize"));
  expect_error(dir, dir + "/modules.json", "is not supported");
  hftest::write_text(dir + "/modules.json", R"([{"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])");
  expect_error(dir, dir + "/modules.json",
               "modules are [Pooling]; supported: Transformer, Pooling, up to 8 Dense and optionally Normalize");
  hftest::write_text(dir + "/modules.json",
                     R"([{"path": "../elsewhere", "type": "sentence_transformers.models.Transformer"},
                         {"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])");
  expect_error(dir, dir + "/modules.json", "leaves the model directory");
  hftest::write_text(dir + "/modules.json", "{\"not\": \"a list\"}");
  expect_error(dir, dir + "/modules.json", "must be a JSON list");
}

TEST(ModelDirectoryErrors, ConfigurationThatDisagrees) {
  const std::string dir = hftest::copy_of_tiny_model(hftest::scratch_dir());
  hftest::write_text(dir + "/1_Pooling/config.json", R"({"embedding_dimension": 64, "pooling_mode": "mean"})");
  expect_error(dir, dir + "/1_Pooling/config.json", "embedding dimension 64 differs from the transformer's hidden_size 32");
  hftest::fs::copy_file(hftest::tiny_model_dir() + "/1_Pooling/config.json", dir + "/1_Pooling/config.json",
                        hftest::fs::copy_options::overwrite_existing);
  auto config = nlohmann::json::parse(std::ifstream(hftest::tiny_model_dir() + "/config.json"));
  config["intermediate_size"] = 36;  // smaller: the file holds enough numbers, in the wrong shapes
  hftest::write_text(dir + "/config.json", config.dump());
  expect_error(dir, dir + "/model.safetensors",
               "tensor \"encoder.layer.0.intermediate.dense.weight\" has shape [37, 32] but config.json gives the model [36, 32]");
  config["intermediate_size"] = 37;
  config["hidden_size"] = 64;  // larger: refused before anything is allocated
  hftest::write_text(dir + "/config.json", config.dump());
  expect_error(dir, dir + "/config.json", "weights but " + dir + "/model.safetensors holds");
  config["hidden_size"] = 32;
  config["model_type"] = "t5";
  hftest::write_text(dir + "/config.json", config.dump());
  expect_error(dir, dir + "/config.json", "model_type \"t5\" is not supported (supported: bert, ");
}

TEST(ModelDirectoryErrors, OtherConfigFiles) {
  const std::string dir = hftest::copy_of_tiny_model(hftest::scratch_dir());
  hftest::write_text(dir + "/sentence_bert_config.json", R"({"max_seq_length": "long"})");
  expect_error(dir, dir + "/sentence_bert_config.json", "\"max_seq_length\" must be an integer, not a string");
  hftest::write_text(dir + "/sentence_bert_config.json", R"({"max_seq_length": 100})");
  EXPECT_EQ(hf::load_sentence_transformer(dir)->options().max_seq_length(), 64);  // capped at the positions
  hftest::write_text(dir + "/config_sentence_transformers.json", R"({"model_type": "CrossEncoder"})");
  expect_error(dir, dir + "/config_sentence_transformers.json", "is not a SentenceTransformer");
  hftest::write_text(dir + "/config_sentence_transformers.json", R"({"similarity_fn_name": "jaccard"})");
  expect_error(dir, dir + "/config_sentence_transformers.json", "not one of cosine, dot, euclidean, manhattan");
  hftest::fs::remove(dir + "/config_sentence_transformers.json");
  hftest::write_text(dir + "/2_Normalize/config.json", R"({"module_input_name": "token_embeddings"})");
  expect_error(dir, dir + "/2_Normalize/config.json", "only normalising the sentence embedding");
}

TEST(ModelDirectoryErrors, DenseModules) {
  // The tiny model (32 dimensions, Normalize) with a Dense module before Normalize: a good one
  // loads, embeds through it and is written back; each broken file is named.
  const std::string scratch = hftest::scratch_dir();
  const std::string dir = hftest::copy_of_tiny_model(scratch);
  hftest::write_text(dir + "/modules.json",
                     R"([{"path": "", "type": "sentence_transformers.models.Transformer"},
                         {"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                         {"path": "2_Dense", "type": "sentence_transformers.models.Dense"},
                         {"path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])");
  hftest::fs::create_directories(dir + "/2_Dense");
  const std::string config = dir + "/2_Dense/config.json", weights = dir + "/2_Dense/model.safetensors";
  torch::manual_seed(3);
  const torch::Tensor w = torch::randn({12, 32}), b = torch::randn({12});
  hftest::write_text(config, R"({"in_features": 32, "out_features": 12, "bias": true,
                                 "activation_function": "torch.nn.modules.activation.Tanh"})");
  expect_error(dir, weights, "missing: the Dense module has no weights");
  hftest::write_text(dir + "/2_Dense/pytorch_model.bin", "pickled");
  expect_error(dir, weights, "save the model again with sentence-transformers");
  hf::save_safetensors(weights, {{"linear.weight", w}});
  expect_error(dir, weights, "has no tensor \"linear.bias\"");
  hf::save_safetensors(weights, {{"linear.weight", torch::randn({12, 31})}, {"linear.bias", b}});
  expect_error(dir, weights, "\"linear.weight\" has shape [12, 31] where config.json asks for [12, 32]");
  hf::save_safetensors(weights, {{"linear.weight", w}, {"linear.bias", b}, {"extra", b}});
  expect_error(dir, weights, "holds 3 tensors where the module has 2");
  hf::save_safetensors(weights, {{"linear.weight", w}, {"linear.bias", b}});

  auto model = hf::load_sentence_transformer(dir);
  EXPECT_EQ(model->embedding_dimension(), 12);
  const std::vector<std::string> texts = {"a red cat", "two"};
  torch::NoGradGuard no_grad;
  const auto batch = model->tokenize(texts);
  const auto pooled = model->features(batch);  // the sentence embedding, through Dense and Normalize
  const auto expected = torch::nn::functional::normalize(
      torch::tanh(torch::nn::functional::linear(
          hf::pool(model->transformer().encode(batch.at("input_ids"), batch.at("attention_mask")).last_hidden_state,
                   batch.at("attention_mask"), model->options().pooling()),
          w, b)),
      torch::nn::functional::NormalizeFuncOptions().dim(-1));
  EXPECT_LT(hftest::max_abs_diff(pooled.at("sentence_embedding"), expected), 1e-6);
  const std::string saved = scratch + "/saved";
  model->save(saved);
  EXPECT_TRUE(hftest::fs::exists(saved + "/2_Dense/model.safetensors"));
  EXPECT_TRUE(hftest::fs::is_directory(saved + "/3_Normalize"));
  EXPECT_TRUE(torch::equal(hf::load_sentence_transformer(saved)->forward(batch), model->forward(batch)));

  hftest::write_text(config, R"({"in_features": 16, "out_features": 12})");
  expect_error(dir, weights, "where config.json asks for [12, 16]");  // the weights are [12, 32]
  hf::save_safetensors(weights, {{"linear.weight", torch::randn({12, 16})}, {"linear.bias", b}});
  expect_error(dir, config, "in_features 16 differs from the 32 features of the module before it");
  hftest::write_text(config, R"({"in_features": 32, "out_features": 12, "activation_function": "torch.nn.Softmax"})");
  expect_error(dir, config, "activation_function \"torch.nn.Softmax\" is not supported (supported: torch.nn's Identity, Tanh");
  hftest::write_text(config, R"({"in_features": 32, "out_features": 12, "module_input_name": "token_embeddings"})");
  expect_error(dir, config, "only a Dense module on the sentence embedding");
  hftest::write_text(config, R"({"in_features": 32, "out_features": 2000000})");
  expect_error(dir, config, "out_features");
  hftest::write_text(dir + "/modules.json",
                     R"([{"path": "", "type": "sentence_transformers.models.Transformer"},
                         {"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                         {"path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
                         {"path": "2_Dense", "type": "sentence_transformers.models.Dense"}])");
  expect_error(dir, dir + "/modules.json", "modules are [Transformer, Pooling, Normalize, Dense]");
}

TEST(ModelDirectoryErrors, SaveNeverReplacesAnUnrelatedDirectory) {
  auto model = hf::load_sentence_transformer(hftest::tiny_model_dir());
  const std::string dir = hftest::scratch_dir() + "/photos";
  hftest::fs::create_directories(dir);
  hftest::write_text(dir + "/holiday.jpg", "not a model");
  EXPECT_THROW(model->save(dir), std::runtime_error);
  EXPECT_TRUE(hftest::fs::exists(dir + "/holiday.jpg"));
}
