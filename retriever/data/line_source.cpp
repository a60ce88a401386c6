#include "retriever/data/line_source.h"

#include "files/atomic_file.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace gradcache::retriever::lines {
namespace {

constexpr std::string_view kWhitespace = " \t\r\n\v\f";

}  // namespace

std::string location(const std::string& path, size_t line) {
  return line == 0 ? path : path + ":" + std::to_string(line);
}

std::string_view trim(std::string_view s) {
  const size_t begin = s.find_first_not_of(kWhitespace);
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(kWhitespace) - begin + 1);
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t pos; (pos = s.find(sep, start)) != std::string_view::npos; start = pos + 1)
    parts.push_back(s.substr(start, pos - start));
  parts.push_back(s.substr(start));
  return parts;
}

std::vector<std::string_view> split_whitespace(std::string_view s) {
  std::vector<std::string_view> parts;
  size_t pos = 0;
  while ((pos = s.find_first_not_of(kWhitespace, pos)) != std::string_view::npos) {
    const size_t end = std::min(s.find_first_of(kWhitespace, pos), s.size());
    parts.push_back(s.substr(pos, end - pos));
    pos = end;
  }
  return parts;
}

std::string_view cut(std::string_view s, size_t limit) {
  if (s.size() <= limit) return s;
  size_t end = limit;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  return s.substr(0, end);
}

std::string shown(std::string_view s) {
  constexpr size_t kMax = 60;
  if (s.size() <= kMax) return "'" + printable_utf8(s) + "'";
  return "'" + printable_utf8(cut(s, kMax)) + "...'";
}

Format format_of(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  if (ext == ".jsonl" || ext == ".json") return Format::Jsonl;
  if (ext == ".tsv" || ext == ".txt") return Format::Tsv;
  throw DataError(path, 0,
                  "unknown format " + (ext.empty() ? std::string("(no extension)") : shown(ext)) +
                      "; use .jsonl (one JSON object per line) or .tsv (tab-separated)");
}

LineSource::LineSource(const std::string& path, OnBadLine on_bad, ReadStats& stats)
    : path_(path), on_bad_(on_bad), stats_(stats) {
  stats_ = ReadStats{};
  // A pipe or device reads once, and data files are read more than once (tokenizer, examples,
  // fingerprint): a FIFO's second open would wait forever. Checked before opening (which blocks).
  if (const auto problem = files::regular_file_problem(path); !problem.empty()) throw DataError(path, 0, "cannot read: " + problem);
  file_.open(path, std::ios::binary);
  if (!file_) throw DataError(path, 0, std::string("cannot open: ") + std::strerror(errno));
}

void LineSource::check_text(const std::string& line) {
  if (const auto bad = find_invalid_utf8(line))
    throw BadLine{"invalid UTF-8 at byte " + std::to_string(*bad + 1) + " of the line"};
  // NUL is valid UTF-8, but no text holds it; the JSON parser would read it as the end of the
  // input and report that instead.
  if (const size_t nul = line.find('\0'); nul != std::string::npos)
    throw BadLine{"the line contains NUL bytes at byte " + std::to_string(nul + 1) + " (binary data?)"};
}

void LineSource::skip(size_t number, const BadLine& bad) {
  if (on_bad_ == OnBadLine::Error)
    throw DataError(path_, number, bad.reason + " (use --on-bad-line skip to skip such lines)");
  ++stats_.skipped;
  if (stats_.skipped_examples.size() < ReadStats::kMaxSkippedExamples)
    stats_.skipped_examples.push_back(location(path_, number) + ": " + bad.reason);
}

void LineSource::finish() const {
  if (file_.bad()) throw DataError(path_, 0, std::string("read error: ") + std::strerror(errno));
}

DataError nothing_read(const std::string& path, const std::string& what, const ReadStats& stats) {
  std::string message = "no " + what + " in the file";
  if (stats.skipped > 0)
    message += " (all " + std::to_string(stats.skipped) + " non-blank lines were skipped; first: " +
               stats.skipped_examples.front() + ")";
  return DataError(path, 0, message);
}

}  // namespace gradcache::retriever::lines
