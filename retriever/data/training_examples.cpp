#include "retriever/data/training_examples.h"

#include "retriever/data/arrow_data.h"
#include "retriever/data/line_source.h"
#include "retriever/files/scratch.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <utility>

namespace gradcache {
namespace retriever {
namespace {

std::optional<size_t> first_without_negatives_of(size_t n, const std::function<bool(size_t)>& has_negatives) {
  for (size_t i = 0; i < n; ++i)
    if (!has_negatives(i)) return i;
  return std::nullopt;
}

class InMemory final : public TrainingExamples {
 public:
  explicit InMemory(std::shared_ptr<const std::vector<TrainExample>> all, std::vector<size_t> rows)
      : all_(std::move(all)), rows_(std::move(rows)) {
    first_without_ = first_without_negatives_of(rows_.size(), [&](size_t i) { return !at_row(i).negatives.empty(); });
  }
  size_t size() const override { return rows_.size(); }
  TrainExample at(size_t i) const override { return at_row(i); }
  std::shared_ptr<const TrainingExamples> subset(const std::vector<size_t>& rows) const override {
    std::vector<size_t> picked;
    picked.reserve(rows.size());
    for (const size_t r : rows) picked.push_back(rows_.at(r));
    return std::make_shared<InMemory>(all_, std::move(picked));
  }
  std::optional<size_t> first_without_negatives() const override { return first_without_; }
  std::string source() const override { return "in memory"; }

 private:
  const TrainExample& at_row(size_t i) const { return (*all_)[rows_.at(i)]; }

  std::shared_ptr<const std::vector<TrainExample>> all_;
  std::vector<size_t> rows_;
  std::optional<size_t> first_without_;
};

// An open file descriptor, closed with its last user; pread needs no shared position, so the
// prefetch thread and the others read at once. The file's size and modification time when it
// was indexed: a file written to since is refused (one replaced by a rename is not: the
// descriptor still reads the indexed one).
struct OpenFile {
  int fd = -1;
  off_t size = 0;
  struct timespec modified {};
  ~OpenFile() {
    if (fd >= 0) ::close(fd);
  }
};

// Where each record of an indexed file starts, 8 bytes a record. The first kHeld are held; the
// rest go to a scratch file as they are found (unlinked at once: the descriptor keeps it) and are
// read back 8 bytes at a time, so that the process does not grow with its data (5·10^7 records:
// 400 MB of offsets on disk, 512 KB in memory).
class RecordOffsets {
 public:
  static constexpr size_t kHeld = size_t{1} << 16;

  RecordOffsets() = default;
  explicit RecordOffsets(std::vector<uint64_t> held) : held_(std::move(held)) {}

  // While indexing.
  void push_back(uint64_t offset) {
    if (held_.size() < kHeld) {
      held_.push_back(offset);
      return;
    }
    if (!spilled_) spilled_ = open_scratch();
    pending_.push_back(offset);
    if (pending_.size() == kPendingWrite) flush();
  }
  void flush() {
    if (pending_.empty()) return;
    const size_t bytes = pending_.size() * sizeof(uint64_t);
    const char* data = reinterpret_cast<const char*>(pending_.data());
    for (size_t done = 0; done < bytes;) {
      const ssize_t wrote = ::pwrite(spilled_->fd, data + done, bytes - done,
                                     static_cast<off_t>(spilled_count_ * sizeof(uint64_t) + done));
      if (wrote < 0 && errno == EINTR) continue;
      if (wrote <= 0)
        throw std::runtime_error(std::string("cannot write the training file's index to the temporary directory: ") +
                                 std::strerror(errno) + " (8 bytes a record; set TMPDIR to a disk with room)");
      done += static_cast<size_t>(wrote);
    }
    spilled_count_ += pending_.size();
    pending_.clear();
  }

  size_t size() const { return held_.size() + spilled_count_ + pending_.size(); }
  uint64_t at(size_t i) const {
    if (i < held_.size()) return held_[i];
    if (i >= size()) throw std::out_of_range("record " + std::to_string(i) + " of " + std::to_string(size()));
    uint64_t offset = 0;
    const off_t at = static_cast<off_t>((i - held_.size()) * sizeof(uint64_t));
    for (ssize_t got; (got = ::pread(spilled_->fd, &offset, sizeof offset, at)) != sizeof offset;) {
      if (got < 0 && errno == EINTR) continue;
      throw std::runtime_error(std::string("cannot read the training file's index back: ") +
                               (got < 0 ? std::strerror(errno) : "it is shorter than written"));
    }
    return offset;
  }

 private:
  static constexpr size_t kPendingWrite = 1 << 16;

  static std::shared_ptr<OpenFile> open_scratch() {
    static std::atomic<int> made{0};
    const std::string path = scratch_file_path("index-" + std::to_string(made++));
    auto file = std::make_shared<OpenFile>();
    file->fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (file->fd < 0)
      throw std::runtime_error("cannot make " + path + " for the training file's index: " + std::strerror(errno) +
                               " (set TMPDIR to a writable disk)");
    ::unlink(path.c_str());
    return file;
  }

  std::vector<uint64_t> held_;
  std::shared_ptr<OpenFile> spilled_;
  size_t spilled_count_ = 0;
  std::vector<uint64_t> pending_;
};

class IndexedFile final : public TrainingExamples {
 public:
  IndexedFile(std::string path, std::string shown, lines::Format format, std::shared_ptr<const OpenFile> file,
              RecordOffsets offsets, std::optional<size_t> first_without)
      : path_(std::move(path)), shown_(std::move(shown)), format_(format), file_(std::move(file)),
        offsets_(std::move(offsets)), first_without_(first_without) {}
  size_t size() const override { return offsets_.size(); }
  TrainExample at(size_t i) const override;
  std::shared_ptr<const TrainingExamples> subset(const std::vector<size_t>& rows) const override {
    std::vector<uint64_t> picked;
    picked.reserve(rows.size());
    for (const size_t r : rows) picked.push_back(offsets_.at(r));  // rows beyond size() throw out_of_range
    // Which of the subset lacks negatives is found by reading it: subsets are small (--quick).
    auto sub = std::make_shared<IndexedFile>(path_, shown_, format_, file_, RecordOffsets(std::move(picked)),
                                             std::nullopt);
    sub->first_without_ = first_without_negatives_of(sub->size(), [&](size_t i) { return !sub->at(i).negatives.empty(); });
    return sub;
  }
  std::optional<size_t> first_without_negatives() const override { return first_without_; }
  std::string source() const override { return "indexed in " + shown_ + " (read per batch)"; }

 private:
  std::string line_at(uint64_t offset) const;

  std::string path_;
  std::string shown_;  // what source() names: the user's file, or the data a scratch file holds
  lines::Format format_;
  std::shared_ptr<const OpenFile> file_;
  RecordOffsets offsets_;
  std::optional<size_t> first_without_;
};

// The line that starts at `offset`, without its line end (and, on the first line, its byte
// order mark), as LineSource gave it.
std::string IndexedFile::line_at(uint64_t offset) const {
  std::string line;
  char buffer[8192];
  for (uint64_t at = offset;;) {
    const ssize_t got = ::pread(file_->fd, buffer, sizeof buffer, static_cast<off_t>(at));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw DataError(path_, 0, std::string("read error: ") + std::strerror(errno));
    }
    const char* end = static_cast<const char*>(std::memchr(buffer, '\n', static_cast<size_t>(got)));
    line.append(buffer, end ? static_cast<size_t>(end - buffer) : static_cast<size_t>(got));
    if (end || got == 0) break;
    at += static_cast<uint64_t>(got);
  }
  lines::without_line_end_or_mark(line, offset == 0);
  return line;
}

TrainExample IndexedFile::at(size_t i) const {
  const uint64_t offset = offsets_.at(i);
  struct stat now {};
  if (::fstat(file_->fd, &now) != 0 || now.st_size != file_->size || now.st_mtim.tv_sec != file_->modified.tv_sec ||
      now.st_mtim.tv_nsec != file_->modified.tv_nsec) {
    throw DataError(path_, 0, "the file changed while this run was training on it (its size or modification time "
                              "is not what it was when indexed); give the run its data unchanged");
  }
  const std::string line = line_at(offset);
  try {
    lines::LineSource::check_text(line);
    return lines::train_example_from_line(format_, line);
  } catch (const lines::BadLine& bad) {
    throw DataError(path_, 0,
                    "the record at byte " + std::to_string(offset) + " no longer reads (" + bad.reason +
                        "): the file changed since this run indexed it; give the run its data unchanged");
  }
}

class Concatenated final : public TrainingExamples {
 public:
  Concatenated(std::vector<std::shared_ptr<const TrainingExamples>> parts, std::vector<std::string> names)
      : parts_(std::move(parts)), names_(std::move(names)) {
    if (parts_.size() != names_.size()) throw std::invalid_argument("concatenated_examples: one name per part");
    for (const auto& part : parts_) {
      offsets_.push_back(size_);
      size_ += part->size();
    }
  }
  size_t size() const override { return size_; }
  TrainExample at(size_t i) const override {
    const size_t p = part_of(i);
    return parts_[p]->at(i - offsets_[p]);
  }
  std::shared_ptr<const TrainingExamples> subset(const std::vector<size_t>& rows) const override {
    std::vector<std::vector<size_t>> picked(parts_.size());
    for (const size_t r : rows) {
      const size_t p = part_of(r);
      picked[p].push_back(r - offsets_[p]);
    }
    std::vector<std::shared_ptr<const TrainingExamples>> parts;
    std::vector<std::string> names;
    for (size_t p = 0; p < parts_.size(); ++p) {
      if (picked[p].empty()) continue;
      parts.push_back(parts_[p]->subset(picked[p]));
      names.push_back(names_[p]);
    }
    return std::make_shared<Concatenated>(std::move(parts), std::move(names));
  }
  std::optional<size_t> first_without_negatives() const override {
    for (size_t p = 0; p < parts_.size(); ++p)
      if (const auto first = parts_[p]->first_without_negatives()) return offsets_[p] + *first;
    return std::nullopt;
  }
  std::string source() const override {
    std::string told = "from " + std::to_string(parts_.size()) + " data sets:";
    for (size_t p = 0; p < parts_.size(); ++p)
      told += (p ? "; " : " ") + names_[p] + ", " + std::to_string(parts_[p]->size()) + " " + parts_[p]->source();
    return told;
  }
  std::vector<ExamplesPart> parts() const override {
    std::vector<ExamplesPart> parts;
    for (size_t p = 0; p < parts_.size(); ++p) parts.push_back({names_[p], parts_[p]->size()});
    return parts;
  }

 private:
  size_t part_of(size_t i) const {
    if (i >= size_) throw std::out_of_range("example " + std::to_string(i) + " of " + std::to_string(size_));
    return static_cast<size_t>(std::upper_bound(offsets_.begin(), offsets_.end(), i) - offsets_.begin()) - 1;
  }

  std::vector<std::shared_ptr<const TrainingExamples>> parts_;
  std::vector<std::string> names_;
  std::vector<size_t> offsets_;
  size_t size_ = 0;
};

}  // namespace

std::shared_ptr<const TrainingExamples> examples_in_memory(std::vector<TrainExample> examples) {
  std::vector<size_t> rows(examples.size());
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = i;
  return std::make_shared<InMemory>(std::make_shared<const std::vector<TrainExample>>(std::move(examples)),
                                    std::move(rows));
}

namespace {

// A JSONL or TSV file indexed (index_train_file's rules); `shown` is what source() names.
std::shared_ptr<const TrainingExamples> index_lines(const std::string& path, const std::string& shown,
                                                    lines::Format format, OnBadLine on_bad, ReadStats& seen) {
  // Opened once LineSource has refused what is not a regular file (an open could block on it);
  // the descriptor reads the file indexed below even if a rename replaces the path later.
  auto file = std::make_shared<OpenFile>();
  RecordOffsets offsets;
  std::optional<size_t> first_without;
  {
    lines::LineSource source(path, on_bad, seen);
    file->fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat indexed {};
    if (file->fd < 0 || ::fstat(file->fd, &indexed) != 0)
      throw DataError(path, 0, std::string("cannot open: ") + std::strerror(errno));
    file->size = indexed.st_size;
    file->modified = indexed.st_mtim;
    while (source.next([&](const std::string& line) {
      const TrainExample example = lines::train_example_from_line(format, line);
      if (example.negatives.empty() && !first_without) first_without = offsets.size();
      offsets.push_back(source.line_offset());
      return true;
    })) {
    }
  }
  if (offsets.size() == 0) throw lines::nothing_read(path, "training examples", seen);
  offsets.flush();
  return std::make_shared<IndexedFile>(path, shown, format, std::move(file), std::move(offsets), first_without);
}

// Arrow-family data (arrow_data.h): its rows written as JSONL lines to a scratch file, which is
// indexed and removed at once (the index's descriptor keeps it for the reads; a SIGKILLed
// process's is swept by the next scratch file made).
std::shared_ptr<const TrainingExamples> index_arrow_data(const std::string& path, const std::vector<std::string>& columns,
                                                         OnBadLine on_bad, ReadStats& seen) {
  static std::atomic<int> made{0};
  const std::string rows = scratch_file_path("train-rows-" + std::to_string(made++) + ".jsonl");
  const auto cannot_write = [&](int error) {
    return DataError(rows, 0,
                     "cannot write the rows of " + path + " here: " + std::strerror(error) +
                         " (they take about the data's uncompressed size; set TMPDIR to a disk with room)");
  };
  std::FILE* out = std::fopen(rows.c_str(), "wxe");
  if (!out) throw cannot_write(errno);
  struct RemovedAtEnd {
    std::string path;
    ~RemovedAtEnd() { ::unlink(path.c_str()); }
  } removed{rows};
  size_t written = 0;
  try {
    written = write_arrow_examples_as_jsonl(path, columns, on_bad, seen, out);
  } catch (const DataError&) {
    std::fclose(out);
    throw;
  } catch (const std::runtime_error&) {
    const int error = errno;
    std::fclose(out);
    throw cannot_write(error);
  }
  const bool flushed = std::fflush(out) == 0 && !std::ferror(out);
  const int error = errno;
  if (std::fclose(out) != 0 || !flushed) throw cannot_write(flushed ? errno : error);
  if (written == 0) throw lines::nothing_read(path, "training examples", seen);
  ReadStats converted;
  return index_lines(rows, path + " (its rows as JSONL in " + rows + ")", lines::Format::Jsonl, OnBadLine::Error,
                     converted);
}

}  // namespace

std::shared_ptr<const TrainingExamples> index_train_file(const std::string& path, OnBadLine on_bad, ReadStats* stats,
                                                         const std::vector<std::string>& columns) {
  ReadStats local;
  ReadStats& seen = stats ? *stats : local;
  if (is_arrow_data(path)) return index_arrow_data(path, columns, on_bad, seen);
  return index_lines(path, path, lines::format_of(path), on_bad, seen);
}

std::shared_ptr<const TrainingExamples> concatenated_examples(std::vector<std::shared_ptr<const TrainingExamples>> parts,
                                                              std::vector<std::string> names) {
  return std::make_shared<Concatenated>(std::move(parts), std::move(names));
}

std::vector<TrainExample> all_examples(const TrainingExamples& examples) {
  std::vector<TrainExample> all;
  all.reserve(examples.size());
  for (size_t i = 0; i < examples.size(); ++i) all.push_back(examples.at(i));
  return all;
}

}  // namespace retriever
}  // namespace gradcache
