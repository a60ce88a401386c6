#include "retriever/run/embeddings.h"

#include "files/atomic_file.h"
#include "retriever/data/text_data.h"
#include "retriever/files/npy.h"
#include "retriever/files/plain_file_name.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <utility>

namespace gradcache {
namespace retriever {
namespace {
namespace fs = std::filesystem;

constexpr const char* kEmbeddingsFormat = "gradcache-embeddings";
constexpr int kEmbeddingsVersion = 1;

std::string shard_name(const char* stem, size_t index, const char* extension) {
  char name[64];
  std::snprintf(name, sizeof name, "%s_%05zu.%s", stem, index, extension);
  return name;
}

[[noreturn]] void fail_embeddings(const std::string& where, const std::string& what) {
  throw EmbeddingsError(where + ": " + what);
}

void check_manifest(const nlohmann::json& manifest, const std::string& path);

nlohmann::json read_manifest(const std::string& dir) {
  const std::string path = (fs::path(dir) / "manifest.json").string();
  std::error_code error;
  if (!fs::is_directory(dir, error)) fail_embeddings(dir, "no such embeddings directory");
  if (!fs::exists(path, error))
    fail_embeddings(dir, "no manifest.json: not an embeddings directory written by gradcache encode (or the encode did not "
              "finish)");
  nlohmann::json manifest;
  try {
    manifest = nlohmann::json::parse(files::read_file(path));
  } catch (const nlohmann::json::exception& e) {
    fail_embeddings(path, "malformed JSON: " + printable_utf8(e.what()));  // JSON errors quote the input
  }
  try {
    check_manifest(manifest, path);
  } catch (const nlohmann::json::exception& e) {  // a key of the wrong type
    fail_embeddings(path, "not a manifest of gradcache embeddings: " + printable_utf8(e.what()));
  }
  return manifest;
}

// A shard's file: a plain name in the directory (a manifest cannot send the reader elsewhere).
std::string shard_file(const std::string& dir, const nlohmann::json& name, const std::string& manifest) {
  const std::string file = name.get<std::string>();
  if (!is_plain_file_name(file))
    fail_embeddings(manifest, "shard file " + quoted_file_name(file) + " is not a file name in the directory");
  return (fs::path(dir) / file).string();
}

// The manifest's layout (embeddings.h), with sizes that fit in memory's arithmetic.
void check_manifest(const nlohmann::json& manifest, const std::string& path) {
  if (!manifest.is_object() || manifest.value("format", "") != kEmbeddingsFormat)
    fail_embeddings(path, std::string("not a manifest of gradcache embeddings (\"format\" is not \"") + kEmbeddingsFormat + "\")");
  if (manifest.value("version", 0) != kEmbeddingsVersion)
    fail_embeddings(path, "version " + manifest.value("version", nlohmann::json()).dump() + " is not supported (expected " +
                   std::to_string(kEmbeddingsVersion) + ")");
  // At most 2^40 rows and 2^20 dimensions: their products and sums cannot overflow.
  auto count = [&](const nlohmann::json& object, const char* key, const std::string& where, int64_t most) {
    const auto it = object.find(key);
    if (it == object.end() || !it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > most)
      fail_embeddings(where, std::string("\"") + key + "\" must be an integer from 0 to " + std::to_string(most));
    return it->get<int64_t>();
  };
  constexpr int64_t kMostRows = int64_t{1} << 40, kMostDim = int64_t{1} << 20;
  count(manifest, "rows", path, kMostRows);
  count(manifest, "dim", path, kMostDim);
  const auto dtype = manifest.value("dtype", "");
  if (dtype != "float32" && dtype != "float16") fail_embeddings(path, "\"dtype\" must be \"float32\" or \"float16\"");
  if (!manifest.contains("shards") || !manifest["shards"].is_array()) fail_embeddings(path, "\"shards\" must be a list");
  int64_t rows = 0;
  for (const auto& shard : manifest["shards"]) {
    if (!shard.is_object() || !shard.value("embeddings", nlohmann::json()).is_string() ||
        !shard.value("ids", nlohmann::json()).is_string())
      fail_embeddings(path, "each shard must be {\"embeddings\": file, \"ids\": file, \"rows\": n}");
    rows += count(shard, "rows", path, kMostRows);
    if (rows > kMostRows) fail_embeddings(path, "the shards hold more than " + std::to_string(kMostRows) + " rows");
  }
  if (rows != manifest["rows"].get<int64_t>())
    fail_embeddings(path, "the shards hold " + std::to_string(rows) + " rows, but \"rows\" says " + manifest["rows"].dump());
}

std::vector<std::string> read_ids(const std::string& path) {
  std::vector<std::string> ids;
  std::istringstream lines(files::read_file(path));
  for (std::string line; std::getline(lines, line);) ids.push_back(std::move(line));
  return ids;
}

}  // namespace

std::string dtype_name(c10::ScalarType dtype) {
  if (dtype == torch::kFloat32) return "float32";
  if (dtype == torch::kFloat16) return "float16";
  throw std::invalid_argument("embeddings are stored as float32 or float16");
}

EmbeddingsWriter::EmbeddingsWriter(std::string dir, c10::ScalarType dtype) : dir_(std::move(dir)), dtype_(dtype) {
  dtype_name(dtype);  // checks it
}

void EmbeddingsWriter::add_shard(const std::vector<std::string>& ids, const at::Tensor& vectors) {
  if (vectors.dim() != 2 || vectors.size(0) != static_cast<int64_t>(ids.size()))
    throw std::invalid_argument("embeddings shard: expected one id per row of a [n, d] matrix");
  if (dim_ >= 0 && vectors.size(1) != dim_)
    throw std::invalid_argument("embeddings shard: dimension " + std::to_string(vectors.size(1)) +
                                " differs from the first shard's " + std::to_string(dim_));
  std::string id_lines;
  for (const auto& id : ids) {
    if (id.find_first_of("\r\n") != std::string::npos)
      throw std::invalid_argument("id '" + id + "' holds a line break; ids files hold one id per line");
    id_lines += id + "\n";
  }
  const size_t index = shards_.size();
  const auto npy = shard_name("embeddings", index, "npy"), id_file = shard_name("ids", index, "txt");
  write_npy((fs::path(dir_) / npy).string(), vectors.detach().to(torch::kCPU, dtype_));
  files::write_file_atomic((fs::path(dir_) / id_file).string(), id_lines);
  shards_.push_back({{"embeddings", npy}, {"ids", id_file}, {"rows", vectors.size(0)}});
  dim_ = vectors.size(1);
  rows_ += vectors.size(0);
}

nlohmann::json EmbeddingsWriter::finish(const nlohmann::json& about) {
  nlohmann::json manifest = {{"format", kEmbeddingsFormat}, {"version", kEmbeddingsVersion},       {"rows", rows_},
                             {"dim", std::max<int64_t>(dim_, 0)}, {"dtype", dtype_name(dtype_)}, {"shards", shards_}};
  for (const auto& item : about.items()) manifest[item.key()] = item.value();
  files::write_file_atomic((fs::path(dir_) / "manifest.json").string(), manifest.dump(2) + "\n");
  return manifest;
}

Embeddings read_embeddings(const std::string& dir) {
  Embeddings out;
  out.manifest = read_manifest(dir);
  const int64_t rows = out.manifest["rows"], dim = out.manifest["dim"];
  const auto dtype = out.manifest["dtype"] == "float16" ? torch::kFloat16 : torch::kFloat32;
  const std::string manifest_path = (fs::path(dir) / "manifest.json").string();
  // Memory is taken only for what the shard files can hold: a manifest that claims more rows
  // than its files have bytes for is refused before anything is allocated.
  std::vector<std::string> npy_files;
  for (const auto& shard : out.manifest["shards"]) {
    const std::string& npy = npy_files.emplace_back(shard_file(dir, shard["embeddings"], manifest_path));
    std::error_code error;
    const auto bytes = fs::file_size(npy, error);
    const int64_t needed = shard["rows"].get<int64_t>() * dim * (dtype == torch::kFloat16 ? 2 : 4);
    if (error) fail_embeddings(npy, "cannot be read (" + error.message() + "): the embeddings directory is incomplete");
    if (static_cast<uintmax_t>(needed) > bytes)
      fail_embeddings(npy, std::to_string(bytes) + " bytes cannot hold the " + shard["rows"].dump() + " x " +
                    std::to_string(dim) + " " + dtype_name(dtype) + " values manifest.json says it has");
  }
  out.vectors = torch::empty({rows, dim}, torch::kFloat32);
  out.ids.reserve(static_cast<size_t>(std::min<int64_t>(rows, 1 << 20)));
  int64_t row = 0;
  for (size_t i = 0; i < npy_files.size(); ++i) {
    const auto& shard = out.manifest["shards"][i];
    const std::string& npy = npy_files[i];
    const std::string id_file = shard_file(dir, shard["ids"], manifest_path);
    const int64_t n = shard["rows"];
    at::Tensor vectors;
    try {
      vectors = read_npy(npy);
    } catch (const NpyError& e) {
      throw EmbeddingsError(e.what());
    }
    if (vectors.size(0) != n || vectors.size(1) != dim || vectors.scalar_type() != dtype)
      fail_embeddings(npy, "holds " + std::to_string(vectors.size(0)) + " x " + std::to_string(vectors.size(1)) + " " +
                    dtype_name(vectors.scalar_type()) + " values, but manifest.json says " + std::to_string(n) +
                    " x " + std::to_string(dim) + " " + dtype_name(dtype));
    std::vector<std::string> ids;
    try {
      ids = read_ids(id_file);
    } catch (const std::runtime_error& e) {
      throw EmbeddingsError(e.what());
    }
    if (static_cast<int64_t>(ids.size()) != n)
      fail_embeddings(id_file, "holds " + std::to_string(ids.size()) + " ids for " + std::to_string(n) + " rows");
    out.vectors.narrow(0, row, n).copy_(vectors);
    for (auto& id : ids) out.ids.push_back(std::move(id));
    row += n;
  }
  return out;
}

}  // namespace retriever
}  // namespace gradcache
