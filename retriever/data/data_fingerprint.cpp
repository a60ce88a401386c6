#include "retriever/data/data_fingerprint.h"

#include "files/atomic_file.h"
#include "retriever/data/arrow_data.h"
#include "retriever/data/data_files.h"

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace gradcache {
namespace retriever {
namespace {

FileFingerprint fingerprint_file(const std::string& source, const std::string& path) {
  if (const auto problem = files::regular_file_problem(path); !problem.empty())
    throw std::runtime_error("cannot read " + path + " (" + source + "): " + problem);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path + " (" + source + "): " + std::strerror(errno));
  FileFingerprint f{source, path, 0, static_cast<uint32_t>(crc32(0L, Z_NULL, 0))};
  std::vector<char> buffer(1 << 20);
  uLong crc = f.crc32;
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto n = static_cast<size_t>(in.gcount());
    crc = crc32(crc, reinterpret_cast<const Bytef*>(buffer.data()), static_cast<uInt>(n));
    f.size += n;
  }
  if (in.bad()) throw std::runtime_error("cannot read " + path + " (" + source + "): " + std::strerror(errno));
  f.crc32 = static_cast<uint32_t>(crc);
  return f;
}

std::string describe(const FileFingerprint& f) {
  char crc[16];
  std::snprintf(crc, sizeof crc, "0x%08x", static_cast<unsigned>(f.crc32));
  return std::to_string(f.size) + " bytes, CRC-32 " + crc;
}

}  // namespace

DataFingerprint fingerprint_training_data(const DataSettings& data) {
  if (!data.train_file.empty()) {
    // Resuming matches files by source: each is told apart, a data set by its name among
    // several (--mix), a dataset directory's shards by theirs.
    DataFingerprint fingerprint;
    const auto files = training_files(data.train_file);
    const auto names = training_file_names(files);
    for (size_t i = 0; i < files.size(); ++i) {
      const std::string source = files.size() == 1 ? "--train-file" : "--train-file " + names[i];
      if (!std::filesystem::is_directory(files[i])) {
        fingerprint.push_back(fingerprint_file(source, files[i]));
        continue;
      }
      for (const auto& shard : arrow_data_files(files[i]))
        fingerprint.push_back(fingerprint_file(source + " shard " + std::filesystem::path(shard).filename().string(), shard));
    }
    return fingerprint;
  }
  DataFingerprint fingerprint;
  for (const char* name : {"data.noun", "data.verb", "data.adj", "data.adv"}) {  // what load_wordnet reads
    const auto path = (std::filesystem::path(data.wordnet_dir) / name).string();
    fingerprint.push_back(fingerprint_file(std::string("WordNet ") + name, path));
  }
  return fingerprint;
}

nlohmann::json fingerprint_to_json(const DataFingerprint& fingerprint) {
  auto json = nlohmann::json::array();
  for (const auto& f : fingerprint) {
    json.push_back({{"source", f.source}, {"path", f.path}, {"size", f.size}, {"crc32", f.crc32}});
  }
  return json;
}

DataFingerprint fingerprint_from_json(const nlohmann::json& json) {
  DataFingerprint fingerprint;
  for (const auto& f : json) {
    fingerprint.push_back({f.at("source").get<std::string>(), f.at("path").get<std::string>(),
                           f.at("size").get<uint64_t>(), f.at("crc32").get<uint32_t>()});
  }
  return fingerprint;
}

void check_same_training_data(const DataFingerprint& saved, const DataFingerprint& now, const std::string& checkpoint) {
  std::string differences;
  for (const auto& before : saved) {
    const FileFingerprint* after = nullptr;
    for (const auto& f : now) after = f.source == before.source ? &f : after;
    if (!after) {
      differences += "\n  " + before.source + " " + before.path + ": read by the original run, not by this one";
    } else if (after->size != before.size || after->crc32 != before.crc32) {
      differences += "\n  " + before.source + " " + after->path + ": was " + describe(before) + ", now " +
                     describe(*after);
    }
  }
  for (const auto& f : now) {
    bool known = false;
    for (const auto& before : saved) known = known || before.source == f.source;
    if (!known) differences += "\n  " + f.source + " " + f.path + ": read by this run, not by the original one";
  }
  if (differences.empty()) return;
  throw std::invalid_argument("cannot resume " + checkpoint + ": the training data changed since it was saved:" +
                              differences +
                              "\nResume with the original data, or start a new run on these with --overwrite "
                              "(or another --output).");
}

}  // namespace retriever
}  // namespace gradcache
