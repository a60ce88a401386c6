// Reading retrieval data files: training pairs, corpora / query sets, and relevance judgements.
//
// Every reader works line by line, so a problem is reported as "PATH:LINE: reason"; with
// OnBadLine::Skip the bad lines are counted instead (ReadStats) and reading goes on.
#pragma once

#include "retriever/files/utf8.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gradcache::retriever {

/// An error in an input file. what() starts with "PATH:LINE: " (or "PATH: " when line == 0,
/// i.e. the file as a whole, e.g. cannot open).
class DataError : public std::runtime_error {
 public:
  DataError(std::string path, size_t line, const std::string& message);
  /// The file the error is about.
  const std::string& path() const { return path_; }
  /// The 1-based line, or 0 when the error concerns the whole file.
  size_t line() const { return line_; }

 private:
  std::string path_;
  size_t line_;
};

/// What a reader does with a bad line: throw a DataError, or count it and go on (--on-bad-line
/// error|skip, parsed by the settings tables: on_bad_line_names() in config/train_config.h).
enum class OnBadLine { Error, Skip };

/// What a reader saw: lines read (blank ones included), records kept, lines skipped (with
/// OnBadLine::Skip), and the first few skip reasons ("PATH:LINE: reason").
struct ReadStats {
  size_t lines = 0, records = 0, skipped = 0;
  std::vector<std::string> skipped_examples;  // at most kMaxSkippedExamples
  static constexpr size_t kMaxSkippedExamples = 5;
};

/// One training query with its relevant passages and (optional) hard negatives.
struct TrainExample {
  std::string query;
  std::vector<std::string> positives;  // at least one
  std::vector<std::string> negatives;  // hard negatives, may be empty
  /// Ids when the file gives them (JSONL "query_id"/"qid"; a passage object's "docid"/"id"),
  /// else "": mining matches judgements and corpus documents by them.
  std::string query_id;
  std::vector<std::string> positive_ids;  // one per positive
};

/// Training pairs from a file; the format follows the extension (case-insensitive):
/// - .jsonl / .json: one JSON object per line. Accepts {"query": str, "positives": [...],
///   "negatives": [...]} where list items are strings or objects {"text": str, "title": str
///   (optional)}, and Tevatron's own key names "positive_passages" / "negative_passages"
///   (objects with "docid", "title", "text"). A title, when non-empty, is joined as
///   "title text" (one space). "query_id" (or "qid") and the passages' "docid" (or "id"),
///   strings or integers, are kept when present. Other keys are ignored.
/// - .tsv / .txt: query<TAB>positive[<TAB>negative...]
/// Texts are trimmed of surrounding whitespace; a UTF-8 byte order mark and CR line ends are
/// accepted. Blank lines are ignored. Bad lines (malformed JSON, wrong types, missing query, no
/// positives, an empty query/passage text, invalid UTF-8, a TSV line with fewer than 2 fields)
/// throw DataError(path, line, reason) with OnBadLine::Error, or are counted and skipped with
/// Skip. A missing/unreadable file throws DataError(path, 0, "cannot open: <strerror>"); an
/// unknown extension throws DataError(path, 0, "unknown format ...; use .jsonl or .tsv"); a
/// file with no usable record throws DataError(path, 0, "no training examples ...").
/// `stats`, when given, is overwritten with what was read.
std::vector<TrainExample> read_train_examples(const std::string& path, OnBadLine on_bad = OnBadLine::Error,
                                              ReadStats* stats = nullptr);

/// A corpus or a query set: ids and texts in file order, and id -> position.
struct TextCollection {
  std::vector<std::string> ids;
  std::vector<std::string> texts;
  std::unordered_map<std::string, size_t> index;
  size_t size() const { return ids.size(); }
  /// Appends a record; throws std::invalid_argument on a duplicate id.
  void add(std::string id, std::string text);
};

/// A corpus or queries, by extension:
/// - .tsv / .txt: "id<TAB>text", optionally a third column "title" that is joined in front as
///   "title text" (more than 3 columns is a bad line).
/// - .jsonl / .json: {"id"|"_id"|"docid"|"query_id"|"qid": str or integer, "text": str,
///   "title": str?}; the first id key present in that order is used. "query" is accepted in
///   place of "text" (Tevatron's query files).
/// Same bad-line rules as read_train_examples; an empty id or text and a duplicate id are bad
/// lines. A file with no usable record throws DataError(path, 0, "no records ...").
TextCollection read_collection(const std::string& path, OnBadLine on_bad = OnBadLine::Error,
                               ReadStats* stats = nullptr);

/// A corpus or query set read a shard at a time (same formats and bad-line rules as
/// read_collection), so that a collection larger than memory can be encoded: only one shard's
/// texts are held. Duplicate ids are bad lines across the whole file, so the ids seen so far
/// are kept (memory grows with the ids, not the texts).
class CollectionReader {
 public:
  /// Opens `path`; throws DataError for an unknown extension or a file that cannot be opened.
  explicit CollectionReader(const std::string& path, OnBadLine on_bad = OnBadLine::Error);
  ~CollectionReader();
  /// The next records, at most `max_records` (> 0); empty once the file is read. Throws
  /// DataError on a bad line (OnBadLine::Error), and when the file has no record at all.
  TextCollection next(size_t max_records);
  /// What was read so far.
  const ReadStats& stats() const;
  /// Bytes of the file consumed so far and the file's size (for a progress bar).
  uint64_t bytes_read() const;
  uint64_t file_size() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// Relevance judgements: query id -> (doc id -> grade). Grades > 0 are relevant; entries with
/// grade <= 0 are kept.
using Qrels = std::map<std::string, std::map<std::string, int>>;

/// Judgements in either of two formats, whatever the extension:
/// - TREC qrels "qid iter docid rel" (whitespace separated, 4 fields);
/// - BEIR TSV "query-id<TAB>corpus-id<TAB>score" (3 fields; a first line that is a header,
///   i.e. whose score field is not an integer, is skipped).
/// The first data line fixes the format; a line with another field count, a grade that is not
/// an integer, or a second judgement of the same (query, doc) pair is a bad line (same rules as
/// read_train_examples). A file with no judgement throws DataError(path, 0, "no judgements ...").
Qrels read_qrels(const std::string& path, OnBadLine on_bad = OnBadLine::Error, ReadStats* stats = nullptr);

}  // namespace gradcache::retriever
