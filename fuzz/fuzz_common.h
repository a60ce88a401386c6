// Shared by the libFuzzer targets: check() and check_message() by all; scratch files and the
// format choice by those of the text readers (retriever/data/text_data.h), which take a path, so
// each input is written to a scratch file with the extension that selects the format.
//
// Besides "no crash, no hang, no leak" (the sanitizers and libFuzzer check those), every target
// checks the readers' documented contract on every input:
// - the only exception is DataError (anything else escapes and is reported as a crash);
// - a DataError's message and every skip reason are valid UTF-8 (they are shown to users, and
//   programs put them in JSON reports);
// - records are what the documentation promises (non-empty, trimmed texts; stats add up).
#pragma once

#include "retriever/data/text_data.h"
#include "retriever/files/plain_file_name.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace fuzz {

/// A scratch file per process and extension, in /dev/shm when there is one (no disk writes).
inline const std::string& scratch_path(const std::string& extension) {
  static std::string paths[8];
  static std::string extensions[8];
  for (int i = 0; i < 8; ++i) {
    if (extensions[i] == extension) return paths[i];
    if (extensions[i].empty()) {
      const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
      extensions[i] = extension;
      paths[i] = std::string(dir) + "/gradcache_fuzz_" + std::to_string(getpid()) + "_" + std::to_string(i) + extension;
      return paths[i];
    }
  }
  std::abort();
}

inline const std::string& write_input(const uint8_t* data, size_t size, const std::string& extension) {
  const std::string& path = scratch_path(extension);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) std::abort();
  return path;
}

/// A scratch directory per process (in /dev/shm when there is one), emptied, holding the files
/// an input describes: entries of [1 byte: name length][name][4 bytes, little-endian: size]
/// [bytes], to the end of the input (a truncated entry keeps what there is). Entries whose name
/// is not a plain file name are skipped; a later entry of the same name replaces an earlier one.
/// fuzz/pack_directory.py packs a real directory so (the seeds of the directory targets).
inline const std::string& write_directory(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  static const std::string dir = [] {
    const std::string path = scratch_path(".dir");
    fs::create_directories(path);
    return path;
  }();
  for (const auto& entry : fs::directory_iterator(dir)) fs::remove_all(entry.path());
  size_t at = 0;
  while (at < size) {
    const size_t declared = data[at++];
    const size_t name_size = std::min(declared, size - at);
    std::string name(reinterpret_cast<const char*>(data + at), name_size);
    at += name_size;
    uint32_t bytes = 0;
    for (int i = 0; i < 4 && at < size; ++i) bytes |= static_cast<uint32_t>(data[at++]) << (8 * i);
    const size_t length = std::min<size_t>(bytes, size - at);
    if (gradcache::retriever::is_plain_file_name(name)) {
      std::ofstream out(fs::path(dir) / name, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(data + at), static_cast<std::streamsize>(length));
      if (!out) std::abort();
    }
    at += length;
  }
  return dir;
}

/// Aborts (a libFuzzer crash, with the input saved) when `condition` is false.
inline void check(bool condition, const char* what, std::string_view detail = {}) {
  if (condition) return;
  std::fprintf(stderr, "contract violated: %s: %.*s\n", what, static_cast<int>(detail.size()), detail.data());
  std::abort();
}

inline void check_message(std::string_view message) {
  check(!gradcache::retriever::find_invalid_utf8(message).has_value(), "message is not valid UTF-8", message);
}

inline void check_text(std::string_view text, const char* what) {
  check(!text.empty(), what, "empty");
  check(!gradcache::retriever::find_invalid_utf8(text).has_value(), what, "invalid UTF-8");
  constexpr std::string_view kWhitespace = " \t\r\n\v\f";
  check(kWhitespace.find(text.front()) == std::string_view::npos &&
            kWhitespace.find(text.back()) == std::string_view::npos,
        what, "not trimmed");
}

/// A training example as every reader must give it: trimmed non-empty texts, a positive.
inline void check_train_example(const gradcache::retriever::TrainExample& example) {
  check_text(example.query, "query");
  check(!example.positives.empty(), "at least one positive");
  for (const std::string& text : example.positives) check_text(text, "positive");
  for (const std::string& text : example.negatives) check_text(text, "negative");
}
inline void check_stats(const gradcache::retriever::ReadStats& stats, gradcache::retriever::OnBadLine on_bad) {
  check(stats.records + stats.skipped <= stats.lines, "records + skipped <= lines");
  check(stats.skipped_examples.size() == std::min(stats.skipped, gradcache::retriever::ReadStats::kMaxSkippedExamples),
        "skipped_examples size");
  if (on_bad == gradcache::retriever::OnBadLine::Error) check(stats.skipped == 0, "no skips with OnBadLine::Error");
  for (const std::string& reason : stats.skipped_examples) check_message(reason);
}

/// The first input byte picks the format (bit 0) and the bad-line policy (bit 1); the rest is
/// the file.
struct Choice {
  bool jsonl;
  gradcache::retriever::OnBadLine on_bad;
  const uint8_t* data;
  size_t size;
};

inline Choice choose(const uint8_t* data, size_t size) {
  if (size == 0) return {true, gradcache::retriever::OnBadLine::Skip, data, 0};
  return {(data[0] & 1) == 0,
          (data[0] & 2) ? gradcache::retriever::OnBadLine::Error : gradcache::retriever::OnBadLine::Skip, data + 1,
          size - 1};
}

}  // namespace fuzz
