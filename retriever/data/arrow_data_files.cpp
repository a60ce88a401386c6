// Which files Arrow-family training data are (arrow_data.h): no Arrow needed to list them, so
// the fingerprint of a run's data and the format checks work in every build.
#include "retriever/data/arrow_data.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace gradcache::retriever {
namespace {

namespace fs = std::filesystem;

std::string lower_extension(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

bool is_arrow_file_name(const fs::path& path) {
  const std::string ext = lower_extension(path);
  return ext == ".parquet" || ext == ".arrow" || ext == ".feather";
}

bool is_directory(const std::string& path) {
  std::error_code error;
  return fs::is_directory(path, error);
}

// The directory's .parquet/.arrow/.feather files, sorted by name (shards "...-00000-of-00004").
std::vector<std::string> shard_files(const std::string& dir) {
  std::vector<std::string> shards;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    if (is_arrow_file_name(it->path()) && it->is_regular_file(error)) shards.push_back(it->path().string());
  }
  if (error) throw DataError(dir, 0, "cannot list the directory: " + error.message());
  std::sort(shards.begin(), shards.end());
  return shards;
}

// state.json's "_data_files", in order, checked to be plain names of files in `dir`.
std::vector<std::string> state_json_files(const std::string& dir) {
  const std::string state = (fs::path(dir) / "state.json").string();
  std::ifstream in(state);
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw DataError(state, 0, std::string("not the state.json of datasets' save_to_disk: ") + e.what());
  }
  const auto* data_files = json.is_object() && json.contains("_data_files") ? &json["_data_files"] : nullptr;
  if (!data_files || !data_files->is_array() || data_files->empty())
    throw DataError(state, 0, "no \"_data_files\" list: not the state.json of datasets' save_to_disk");
  std::vector<std::string> files;
  for (const auto& entry : *data_files) {
    const auto* name = entry.is_object() && entry.contains("filename") ? &entry["filename"] : nullptr;
    if (!name || !name->is_string())
      throw DataError(state, 0, "an entry of \"_data_files\" has no \"filename\" string: " + entry.dump());
    const fs::path file(name->get<std::string>());
    if (file.empty() || file.has_parent_path() || file.is_absolute() || file == "." || file == "..")
      throw DataError(state, 0, "\"_data_files\" names " + file.string() + ", not a file of this directory");
    files.push_back((fs::path(dir) / file).string());
  }
  return files;
}

}  // namespace

bool is_arrow_data(const std::string& path) {
  if (!is_directory(path)) return is_arrow_file_name(path);
  std::error_code error;
  if (fs::exists(fs::path(path) / "state.json", error) || fs::exists(fs::path(path) / "dataset_dict.json", error))
    return true;
  try {
    return !shard_files(path).empty();
  } catch (const DataError&) {
    return false;  // arrow_data_files says why
  }
}

std::vector<std::string> arrow_data_files(const std::string& path) {
  if (!is_directory(path)) return {path};
  std::error_code error;
  if (fs::exists(fs::path(path) / "dataset_dict.json", error) && !fs::exists(fs::path(path) / "state.json", error))
    throw DataError(path, 0,
                    "a DatasetDict saved by datasets' save_to_disk, which holds several splits: give the directory of "
                    "one, e.g. " + (fs::path(path) / "train").string());
  std::vector<std::string> files =
      fs::exists(fs::path(path) / "state.json", error) ? state_json_files(path) : shard_files(path);
  if (files.empty())
    throw DataError(path, 0, "no .parquet, .arrow or .feather file in the directory, and no datasets state.json");
  for (const auto& file : files) {
    if (!fs::is_regular_file(file, error))
      throw DataError(file, 0, "a shard of " + path + " is missing or not a regular file");
  }
  return files;
}

#ifndef GRADCACHE_WITH_ARROW
// A build without pyarrow's C++ libraries (CMake found none) says so when such data are given.
size_t write_arrow_examples_as_jsonl(const std::string& path, const std::vector<std::string>&, OnBadLine, ReadStats&,
                                     std::FILE*) {
  throw DataError(path, 0,
                  "this gradcache was built without Apache Arrow (pyarrow's C++ libraries were not found): run "
                  "scripts/setup.sh and build again, or give the data as JSONL");
}
#endif

}  // namespace gradcache::retriever
