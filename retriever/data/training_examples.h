// The training examples of a run, by number, read when a batch needs them: a list held in
// memory (WordNet's pairs, --dev-fraction's rest) or a training file indexed by where each of
// its records starts, whose lines are read and parsed again on demand, so that a file larger
// than memory trains (the index holds 8 bytes a record).
#pragma once

#include "retriever/data/text_data.h"

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gradcache {
namespace retriever {

/// One of the data sets a run's examples come from (several --train-file).
struct ExamplesPart {
  std::string name;  ///< the file's name without its extension (a directory's name), for metrics
  size_t size = 0;
};

class TrainingExamples {
 public:
  virtual ~TrainingExamples() = default;
  virtual size_t size() const = 0;
  /// Example i (0-based). Safe on several threads at once. An indexed file whose record no
  /// longer parses (the file changed since it was indexed) throws DataError naming the file.
  virtual TrainExample at(size_t i) const = 0;
  /// The examples `rows` (in that order) alone, sharing what these hold; throws
  /// std::out_of_range for a row not below size().
  virtual std::shared_ptr<const TrainingExamples> subset(const std::vector<size_t>& rows) const = 0;
  /// The first example without hard negatives, if any (--negatives needs them everywhere).
  virtual std::optional<size_t> first_without_negatives() const = 0;
  /// Where the examples are, for the log: "in memory", or "indexed in PATH (read per batch)".
  virtual std::string source() const = 0;
  /// The data sets the examples come from, in order: examples [0, parts()[0].size) are the
  /// first's, and so on. One, unnamed, unless concatenated_examples made them.
  virtual std::vector<ExamplesPart> parts() const { return {{"", size()}}; }
};

/// Examples held in memory.
std::shared_ptr<const TrainingExamples> examples_in_memory(std::vector<TrainExample> examples);

/// A training file (read_train_examples' formats and bad-line rules) indexed in one pass that
/// parses every line as read_train_examples does, so that its errors come before training; only
/// each record's offset is kept. Throws what read_train_examples throws. `stats`, when given, is
/// overwritten with what was read. Arrow-family data (Parquet, Arrow files, datasets'
/// save_to_disk directories: arrow_data.h) are read row by row with `columns` into a scratch
/// JSONL file that is indexed the same way.
std::shared_ptr<const TrainingExamples> index_train_file(const std::string& path, OnBadLine on_bad = OnBadLine::Error,
                                                         ReadStats* stats = nullptr,
                                                         const std::vector<std::string>& columns = {});

/// Several data sets' examples one after the other (each keeps its own numbering, offset by the
/// sizes before it), with their names for parts(). Its subset() keeps each part's rows in the
/// order given, the parts in theirs, and leaves out a part none of whose rows is taken.
std::shared_ptr<const TrainingExamples> concatenated_examples(std::vector<std::shared_ptr<const TrainingExamples>> parts,
                                                              std::vector<std::string> names);

/// Every example, in memory (what needs them all at once: --dev-fraction's corpus).
std::vector<TrainExample> all_examples(const TrainingExamples& examples);

}  // namespace retriever
}  // namespace gradcache
