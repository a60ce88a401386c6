#include "retriever/search/bm25.h"

#include "retriever/files/fnv1a.h"
#include "retriever/files/scratch.h"
#include "retriever/model/encode_all.h"

#include <ATen/ATen.h>
#include <xapian.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace gradcache::retriever {
namespace fs = std::filesystem;
namespace {

// The metadata key that marks a database as ours, and its value's format version: "v1 N FP".
constexpr const char* kSignatureKey = "gradcache.bm25";

/// What the index was built from: the analysis (version, stemmer) and the corpus (count and a
/// 64-bit FNV-1a of every id and text with their lengths).
std::string corpus_signature(const TextCollection& corpus) {
  uint64_t hash = 1469598103934665603ull;  // not FNV's basis (a digit short), kept: indexes on disk carry it
  auto mix = [&](const std::string& s) { hash = fnv1a64(std::to_string(s.size()) + ":" + s, hash); };
  for (size_t i = 0; i < corpus.size(); ++i) {
    mix(corpus.ids[i]);
    mix(corpus.texts[i]);
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return "v1 english-stem-all " + std::to_string(corpus.size()) + " " + hex;
}

Xapian::TermGenerator make_term_generator() {
  Xapian::TermGenerator generator;
  generator.set_stemmer(Xapian::Stem("english"));
  generator.set_stemming_strategy(Xapian::TermGenerator::STEM_ALL);  // stemmed terms only, no prefix
  return generator;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Writes the database of `corpus` in `path` (a new or empty directory); document row r is
/// Xapian document r + 1.
void write_database(const std::string& path, const TextCollection& corpus, const std::string& signature,
                    const std::atomic<int>* stop) {
  Xapian::WritableDatabase db(path, Xapian::DB_CREATE_OR_OVERWRITE | Xapian::DB_BACKEND_GLASS);
  Xapian::TermGenerator generator = make_term_generator();
  for (size_t row = 0; row < corpus.size(); ++row) {
    if (row % 1024 == 0) stop_if_signalled(stop);
    Xapian::Document doc;
    generator.set_document(doc);
    generator.index_text_without_positions(corpus.texts[row]);
    db.replace_document(static_cast<Xapian::docid>(row + 1), doc);
  }
  db.set_metadata(kSignatureKey, signature);
  db.commit();
  db.close();
}

/// What a named directory holds: nothing (absent or empty), our index of this corpus, our
/// index of another, or something else.
enum class Found { Nothing, Same, Other, Foreign };

Found inspect(const std::string& dir, const std::string& signature) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return Found::Nothing;
  if (fs::is_directory(dir, ec) && fs::is_empty(dir, ec)) return Found::Nothing;
  try {
    Xapian::Database db(dir);
    const std::string saved = db.get_metadata(kSignatureKey);
    if (saved.empty()) return Found::Foreign;
    return saved == signature ? Found::Same : Found::Other;
  } catch (const Xapian::Error&) {
    return Found::Foreign;
  }
}

}  // namespace

struct Bm25Index::Impl {
  Bm25Options options;
  std::string path;
  bool temporary = false, reused = false;
  double build_seconds = 0;
  size_t size = 0;
  Xapian::Database db;

  ~Impl() {
    db.close();
    std::error_code ignored;
    if (temporary) fs::remove_all(path, ignored);
  }
  // `announce` says that indexing starts (not said when an index is reused).
  void build_temporary(const TextCollection& corpus, const std::string& signature, const std::function<void()>& announce);
  void build_named(const TextCollection& corpus, const std::string& signature, const std::function<void()>& announce);
};

void Bm25Index::Impl::build_temporary(const TextCollection& corpus, const std::string& signature,
                                      const std::function<void()>& announce) {
  path = make_scratch_directory("bm25");
  temporary = true;  // removed with the index, also when the constructor throws
  announce();
  write_database(path, corpus, signature, options.stop);
}

// Rebuilt beside the directory and renamed over it: the directory always holds a whole index.
void Bm25Index::Impl::build_named(const TextCollection& corpus, const std::string& signature,
                                  const std::function<void()>& announce) {
  const Found found = inspect(path, signature);
  if (found == Found::Same) {
    reused = true;
    return;
  }
  std::error_code not_there;
  if (fs::exists(path, not_there) && !fs::is_directory(path, not_there)) {
    throw std::runtime_error("--bm25-index " + path + " is a file, not a directory: give a directory for the index "
                             "(a new or empty one, or one that holds a gradcache BM25 index)");
  }
  if (found == Found::Foreign) {
    throw std::runtime_error("--bm25-index " + path +
                             ": the directory holds something other than a gradcache BM25 index; "
                             "choose an empty or new directory");
  }
  const std::string building = path + ".building-" + std::to_string(getpid());
  std::error_code ec;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::create_directories(parent, ec) && ec) {
    throw std::runtime_error("--bm25-index " + path + ": cannot create " + parent.string() + ": " + ec.message());
  }
  fs::remove_all(building, ec);
  announce();
  try {
    write_database(building, corpus, signature, options.stop);
  } catch (...) {  // a signal or an error: no half-built index is left
    fs::remove_all(building, ec);
    throw;
  }
  fs::remove_all(path, ec);
  fs::rename(building, path, ec);
  if (ec) throw std::runtime_error("--bm25-index " + path + ": cannot move the new index in place: " + ec.message());
}

Bm25Index::Bm25Index(const TextCollection& corpus, const Bm25Options& options,
                     const std::function<void(const std::string&)>& log)
    : impl_(std::make_unique<Impl>()) {
  auto& s = *impl_;
  s.options = options;
  s.size = corpus.size();
  const std::string signature = corpus_signature(corpus);
  const auto start = std::chrono::steady_clock::now();
  // A line before a long indexing too, so that a log shows the phase the program is in.
  auto announce = [&] {
    if (log) log("BM25: indexing " + std::to_string(s.size) + " passages");
  };
  try {
    if (options.index_dir.empty()) {
      s.build_temporary(corpus, signature, announce);
    } else {
      s.path = options.index_dir;
      s.build_named(corpus, signature, announce);
    }
    s.db = Xapian::Database(s.path);
  } catch (const Xapian::Error& e) {
    throw std::runtime_error("BM25 index " + s.path + ": " + e.get_type() + ": " + e.get_msg());
  }
  s.build_seconds = s.reused ? 0 : seconds_since(start);
  if (log) {
    char line[160];
    std::snprintf(line, sizeof line, "BM25: %s %zu passages (%.1f s)", s.reused ? "reused the index of" : "indexed",
                  s.size, s.build_seconds);
    log(line + (options.index_dir.empty() ? std::string() : " in " + s.path));
  }
}

Bm25Index::~Bm25Index() = default;
Bm25Index::Bm25Index(Bm25Index&&) noexcept = default;
Bm25Index& Bm25Index::operator=(Bm25Index&&) noexcept = default;

TopK Bm25Index::search(const std::vector<std::string>& queries, int64_t k) const {
  if (k < 1) throw std::invalid_argument("BM25 search: k must be >= 1, got " + std::to_string(k));
  const auto& s = *impl_;
  const auto n = static_cast<int64_t>(queries.size());
  at::Tensor scores = at::full({n, k}, -std::numeric_limits<float>::infinity(), at::kFloat);
  at::Tensor rows = at::full({n, k}, -1, at::kLong);
  auto score_at = scores.accessor<float, 2>();
  auto row_at = rows.accessor<int64_t, 2>();
  Xapian::Enquire enquire(s.db);
  enquire.set_weighting_scheme(Xapian::BM25Weight(s.options.k1, 0, 1, s.options.b, 0.5));
  enquire.set_docid_order(Xapian::Enquire::ASCENDING);  // equal scores: lower row first
  Xapian::TermGenerator generator = make_term_generator();
  try {
    for (int64_t q = 0; q < n; ++q) {
      if (q % 64 == 0) stop_if_signalled(s.options.stop);
      // The query's own terms, analysed as the documents were; no query syntax at all.
      Xapian::Document terms;
      generator.set_document(terms);
      generator.index_text_without_positions(queries[static_cast<size_t>(q)]);
      std::vector<Xapian::Query> parts;
      for (auto t = terms.termlist_begin(); t != terms.termlist_end(); ++t) {
        parts.emplace_back(*t, t.get_wdf());
      }
      if (parts.empty()) continue;
      enquire.set_query(Xapian::Query(Xapian::Query::OP_OR, parts.begin(), parts.end()));
      const Xapian::MSet matches = enquire.get_mset(0, static_cast<Xapian::doccount>(k));
      int64_t i = 0;
      for (auto m = matches.begin(); m != matches.end() && i < k; ++m, ++i) {
        score_at[q][i] = static_cast<float>(m.get_weight());
        row_at[q][i] = static_cast<int64_t>(*m) - 1;
      }
    }
  } catch (const Xapian::Error& e) {
    throw std::runtime_error("BM25 search in " + s.path + ": " + e.get_type() + ": " + e.get_msg());
  }
  return {scores, rows};
}

size_t Bm25Index::size() const { return impl_->size; }
bool Bm25Index::reused() const { return impl_->reused; }
double Bm25Index::build_seconds() const { return impl_->build_seconds; }
const std::string& Bm25Index::path() const { return impl_->path; }

}  // namespace gradcache::retriever
