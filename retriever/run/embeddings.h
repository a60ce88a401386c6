// Directories of embeddings written by `gradcache encode` and read back by later commands (hard
// negative mining):
//
//   DIR/manifest.json          {"format": "gradcache-embeddings", "version": 1, "rows": N, "dim": d,
//                               "dtype": "float32" | "float16", "shards": [{"embeddings":
//                               "embeddings_00000.npy", "ids": "ids_00000.txt", "rows": n}, ...],
//                               and what wrote them: "side", "normalize", "max_len", "model", "corpus"}
//   DIR/embeddings_00000.npy   NumPy .npy (format 1.0), shape (n, d), '<f4' or '<f2', C order
//   DIR/ids_00000.txt          the n ids of those rows, one per line, in the same order
//
// Shards hold consecutive rows of the corpus in file order; concatenated they are the corpus.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace gradcache {
namespace retriever {

/// An embeddings directory that cannot be read: the message names the file and what is wrong.
class EmbeddingsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Writes the shards and the manifest of an embeddings directory into `dir`, an existing
/// directory (a StagedDirectory's partial one: nothing here is atomic as a whole).
class EmbeddingsWriter {
 public:
  /// `dtype`: how the vectors are stored, kFloat32 or kFloat16.
  EmbeddingsWriter(std::string dir, c10::ScalarType dtype);
  /// Writes the next shard: one id per row of `vectors` [n, d] (any floating type and device;
  /// converted to the storage type). Throws std::invalid_argument on a dimension other than
  /// the first shard's, a count mismatch, or an id holding a line break (ids files are one id
  /// per line).
  void add_shard(const std::vector<std::string>& ids, const at::Tensor& vectors);
  /// Writes manifest.json: the layout above, with the keys of `about` (a JSON object) added.
  /// Returns the manifest.
  nlohmann::json finish(const nlohmann::json& about);
  int64_t rows() const { return rows_; }

 private:
  std::string dir_;
  c10::ScalarType dtype_;
  int64_t rows_ = 0, dim_ = -1;
  nlohmann::json shards_ = nlohmann::json::array();
};

/// The name of the storage type in manifests: "float32" or "float16".
std::string dtype_name(c10::ScalarType dtype);

/// A whole embeddings directory in memory.
struct Embeddings {
  at::Tensor vectors;            ///< [N, d] float32 on the CPU (float16 files are widened)
  std::vector<std::string> ids;  ///< N ids, row order
  nlohmann::json manifest;       ///< as written (side, normalize, model, ...)
};

/// Reads an embeddings directory. Throws EmbeddingsError naming the file for a missing or
/// malformed manifest.json (not written by gradcache encode, or an encode that did not
/// finish), a missing or malformed shard, or a shard whose rows, dimension or type disagree
/// with the manifest or whose ids file has another number of lines.
Embeddings read_embeddings(const std::string& dir);

}  // namespace retriever
}  // namespace gradcache
