// The lines of a data file, as every reader of retrieval data reads them: one record a line,
// blank lines skipped, CRLF and a byte order mark tolerated, invalid UTF-8 and NUL bytes
// refused, and a bad line (BadLine) either an error naming PATH:LINE or a skip counted in
// ReadStats (--on-bad-line). With the small text helpers the line parsers share. Private to
// the data readers (data/*.cpp).
#pragma once

#include "retriever/data/text_data.h"

#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace gradcache::retriever::lines {

/// "PATH:LINE", or PATH for line 0 (the file as a whole).
std::string location(const std::string& path, size_t line);

/// Thrown by a line parser to reject the current line; the line loop turns it into a DataError
/// or a skip, so parsers need not know the path, the line number or the policy.
struct BadLine {
  std::string reason;
};

/// Without leading and trailing whitespace.
std::string_view trim(std::string_view s);
/// The fields between each `sep` (n separators give n + 1 fields).
std::vector<std::string_view> split(std::string_view s, char sep);
/// The runs of non-whitespace.
std::vector<std::string_view> split_whitespace(std::string_view s);
/// The first `limit` bytes of `s` or fewer: a cut never splits a UTF-8 sequence.
std::string_view cut(std::string_view s, size_t limit);
/// Quotes a value for a message, shortened so that a huge field does not flood the terminal.
std::string shown(std::string_view s);

enum class Format { Jsonl, Tsv };
/// The format follows the extension; it is checked before opening so that a typo in the name
/// is reported as such rather than as a parse error on line 1.
Format format_of(const std::string& path);

/// Drops a Windows line end ("\r" left by getline) and, on a file's first line, a UTF-8 byte
/// order mark: what every reader of a line does before parsing it.
inline void without_line_end_or_mark(std::string& line, bool first_line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (first_line && line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);
}

/// A line of a training-pairs file in `format` (read_train_examples' rules); throws BadLine.
/// Defined with the other line parsers in text_data.cpp; the indexed training file
/// (training_examples.cpp) parses its lines again with it when a batch needs them.
TrainExample train_example_from_line(Format format, const std::string& line);

/// Reads `path` line by line: next(parse) calls `parse(line)` on the following non-blank, valid
/// UTF-8 lines until it keeps a record (returns true: next returns true) or the file ends (next
/// returns false). `parse` returns false for a line it ignores (such as a header) or throws
/// BadLine. Handles the bad-line policy and fills `stats`. A directory, a pipe or a device is
/// refused before opening (data files are read more than once; a FIFO's second open would wait
/// forever).
class LineSource {
 public:
  LineSource(const std::string& path, OnBadLine on_bad, ReadStats& stats);

  template <class Parse>
  bool next(Parse&& parse) {
    std::string line;
    while (std::getline(file_, line)) {
      line_offset_ = bytes_read_;
      bytes_read_ += line.size() + 1;
      const size_t number = ++stats_.lines;
      without_line_end_or_mark(line, number == 1);
      if (trim(line).empty()) continue;
      try {
        check_text(line);
        if (parse(line)) {
          ++stats_.records;
          return true;
        }
      } catch (const BadLine& bad) {
        skip(number, bad);
      }
    }
    finish();
    return false;
  }

  /// Bytes of the file consumed so far (for progress).
  uint64_t bytes_read() const { return bytes_read_; }
  /// Where the line last given to `parse` starts in the file (its byte order mark included).
  uint64_t line_offset() const { return line_offset_; }

  /// BadLine for invalid UTF-8 or a NUL byte.
  static void check_text(const std::string& line);

 private:
  void skip(size_t number, const BadLine& bad);
  // DataError if the file could not be read to its end.
  void finish() const;

  std::string path_;
  OnBadLine on_bad_;
  ReadStats& stats_;
  std::ifstream file_;
  uint64_t bytes_read_ = 0, line_offset_ = 0;
};

/// Every record of `path`: parse as in LineSource::next.
template <class Parse>
void for_each_line(const std::string& path, OnBadLine on_bad, ReadStats& stats, Parse&& parse) {
  LineSource source(path, on_bad, stats);
  while (source.next(parse)) {
  }
}

/// The DataError for a file that held nothing usable, with the first skip reason as a hint.
DataError nothing_read(const std::string& path, const std::string& what, const ReadStats& stats);

}  // namespace gradcache::retriever::lines
