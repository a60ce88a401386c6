// What a run's training data were, recorded in its checkpoints: a resumed run must read the
// same data, or its saved position in the data means nothing.
#pragma once

#include "retriever/data/data_settings.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace gradcache {
namespace retriever {

/// One file the training batches come from.
struct FileFingerprint {
  std::string source;  ///< what the file is to the run: "--train-file", "WordNet data.noun", ...
  std::string path;
  uint64_t size = 0;
  uint32_t crc32 = 0;  ///< zlib's CRC-32 of the whole file
};
using DataFingerprint = std::vector<FileFingerprint>;

/// Size and CRC-32 of every file the training batches come from: --train-file, or else the
/// WordNet data files in --wordnet-dir. Reads each file once. Throws std::runtime_error naming
/// a file that cannot be read.
DataFingerprint fingerprint_training_data(const DataSettings& data);

nlohmann::json fingerprint_to_json(const DataFingerprint& fingerprint);
/// Throws std::exception on JSON that fingerprint_to_json did not write.
DataFingerprint fingerprint_from_json(const nlohmann::json& json);

/// Refuses (std::invalid_argument) to resume `checkpoint` on data that differ from those it was
/// trained on (`saved`): names each file that changed, with its size and CRC-32 then and now,
/// and says what to do.
void check_same_training_data(const DataFingerprint& saved, const DataFingerprint& now, const std::string& checkpoint);

}  // namespace retriever
}  // namespace gradcache
