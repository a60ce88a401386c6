#include "retriever/data/training_examples.h"

#include "retriever/data/line_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
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

class IndexedFile final : public TrainingExamples {
 public:
  IndexedFile(std::string path, lines::Format format, std::shared_ptr<const OpenFile> file, std::vector<uint64_t> offsets,
              std::optional<size_t> first_without)
      : path_(std::move(path)), format_(format), file_(std::move(file)), offsets_(std::move(offsets)),
        first_without_(first_without) {}
  size_t size() const override { return offsets_.size(); }
  TrainExample at(size_t i) const override;
  std::shared_ptr<const TrainingExamples> subset(const std::vector<size_t>& rows) const override {
    std::vector<uint64_t> picked;
    picked.reserve(rows.size());
    for (const size_t r : rows) picked.push_back(offsets_.at(r));
    // Which of the subset lacks negatives is found by reading it: subsets are small (--quick).
    auto sub = std::make_shared<IndexedFile>(path_, format_, file_, std::move(picked), std::nullopt);
    sub->first_without_ = first_without_negatives_of(sub->size(), [&](size_t i) { return !sub->at(i).negatives.empty(); });
    return sub;
  }
  std::optional<size_t> first_without_negatives() const override { return first_without_; }
  std::string source() const override { return "indexed in " + path_ + " (read per batch)"; }

 private:
  std::string line_at(uint64_t offset) const;

  std::string path_;
  lines::Format format_;
  std::shared_ptr<const OpenFile> file_;
  std::vector<uint64_t> offsets_;
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

}  // namespace

std::shared_ptr<const TrainingExamples> examples_in_memory(std::vector<TrainExample> examples) {
  std::vector<size_t> rows(examples.size());
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = i;
  return std::make_shared<InMemory>(std::make_shared<const std::vector<TrainExample>>(std::move(examples)),
                                    std::move(rows));
}

std::shared_ptr<const TrainingExamples> index_train_file(const std::string& path, OnBadLine on_bad, ReadStats* stats) {
  const lines::Format format = lines::format_of(path);
  ReadStats local;
  ReadStats& seen = stats ? *stats : local;
  // Opened once LineSource has refused what is not a regular file (an open could block on it);
  // the descriptor reads the file indexed below even if a rename replaces the path later.
  auto file = std::make_shared<OpenFile>();
  std::vector<uint64_t> offsets;
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
  if (offsets.empty()) throw lines::nothing_read(path, "training examples", seen);
  offsets.shrink_to_fit();
  return std::make_shared<IndexedFile>(path, format, std::move(file), std::move(offsets), first_without);
}

std::vector<TrainExample> all_examples(const TrainingExamples& examples) {
  std::vector<TrainExample> all;
  all.reserve(examples.size());
  for (size_t i = 0; i < examples.size(); ++i) all.push_back(examples.at(i));
  return all;
}

}  // namespace retriever
}  // namespace gradcache
