#include "retriever/search/dense_index.h"
#include "retriever/search/tensor_shape.h"

#include "retriever/model/encode_all.h"

#include "retriever/launch/threads.h"

#include <ATen/ATen.h>
#include <faiss/IndexFlat.h>
#include <faiss/IndexHNSW.h>
#include <faiss/IndexIVFPQ.h>
#include <faiss/impl/FaissException.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace gradcache::retriever {
namespace {

// Measured on the WordNet test split (docs/figures/search.json, bench/search_bench.cpp): FAISS's
// IndexFlatIP is the faster exact search on the CPU.
constexpr const char* kFasterExactOnCpu = "flat";

void check_matrix(const at::Tensor& t, const char* name) {
  if (!t.defined() || t.dim() != 2 || !t.is_floating_point()) {
    throw std::invalid_argument(std::string("dense index: ") + name + " must be a 2-d floating-point tensor, got " +
                                (t.defined() ? shape_of(t) + " " + std::string(c10::toString(t.scalar_type()))
                                             : std::string("an undefined tensor")));
  }
  if (!t.isfinite().all().item<bool>()) {
    throw std::invalid_argument(std::string("dense index: ") + name +
                                " contain NaN or Inf (a diverged encoder?); scores would be meaningless");
  }
}

void require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument("dense index: " + message);
}

/// Runs a FAISS call; its exceptions (file, line and function in what()) become one line.
template <class Fn>
auto faiss_call(const char* what, Fn&& fn) {
  try {
    return fn();
  } catch (const faiss::FaissException& e) {
    throw std::runtime_error(std::string("FAISS could not ") + what + ": " + e.msg);
  }
}

/// OpenMP and OpenBLAS threads for FAISS (0: leave as set).
void use_threads(int64_t threads) {
  if (threads <= 0) return;
  omp_set_num_threads(static_cast<int>(threads));
  set_blas_threads(static_cast<int>(threads));
}

at::Tensor cpu_float(const at::Tensor& t) { return t.to(at::kCPU, at::kFloat).contiguous(); }

/// Each row ordered by (score descending, document ascending): stable sorts, by document then score.
TopK sort_rows(at::Tensor scores, at::Tensor indices) {
  const at::Tensor by_index = std::get<1>(indices.sort(/*stable=*/true, 1, /*descending=*/false));
  scores = scores.gather(1, by_index);
  indices = indices.gather(1, by_index);
  const at::Tensor by_score = std::get<1>(scores.sort(/*stable=*/true, 1, /*descending=*/true));
  return {scores.gather(1, by_score), indices.gather(1, by_score)};
}

constexpr int64_t kBlockRows = 4096;  // documents added, or queries searched, between two looks at the stop flag
constexpr int64_t kMaxHnswM = 512;          // links per node: 4 KB per document at level 0
constexpr int64_t kMaxHnswEf = int64_t{1} << 16;  // candidate lists: FAISS allocates them per search

int64_t default_pq_m(int64_t d) {
  for (int64_t m = std::max<int64_t>(1, d / 4); m > 1; --m) {
    if (d % m == 0) return m;
  }
  return 1;
}

}  // namespace

bool is_dense_index_type(const std::string& type) {
  return type == "exact" || type == "flat" || type == "blocked" || type == "hnsw" || type == "ivfpq";
}

bool is_exact_index_type(const std::string& type) { return type == "exact" || type == "flat" || type == "blocked"; }

struct DenseIndex::Impl {
  DenseIndexOptions options;
  std::string type;
  int64_t size = 0, dimension = 0;
  at::Tensor docs;                                // "blocked": the embeddings as given
  std::unique_ptr<faiss::IndexFlatIP> quantizer;  // ivfpq's coarse quantizer (declared first: freed last)
  std::unique_ptr<faiss::Index> index;            // FAISS types

  void build_ivfpq(const at::Tensor& docs);
  TopK search_flat(const at::Tensor& queries, int64_t k) const;
  TopK search_faiss(const at::Tensor& queries, int64_t k) const;
};

void DenseIndex::Impl::build_ivfpq(const at::Tensor& x) {
  const int64_t d = dimension, n = size;
  const int64_t nlist = options.nlist > 0 ? options.nlist : std::max<int64_t>(1, std::lround(std::sqrt(n)));
  const int64_t m = options.pq_m > 0 ? options.pq_m : default_pq_m(d);
  require(nlist <= n, "--nlist " + std::to_string(nlist) + " exceeds the " + std::to_string(n) +
                          " documents (each cluster needs at least one); lower it");
  require(d % m == 0, "--pq-m " + std::to_string(m) + " must divide the embedding size " + std::to_string(d));
  require(options.pq_bits >= 1 && options.pq_bits <= 16,
          "--pq-bits must be in 1..16, got " + std::to_string(options.pq_bits));
  require(options.nprobe >= 1, "--nprobe must be >= 1, got " + std::to_string(options.nprobe));
  // FAISS's k-means asks for 39 points per centroid (it warns with fewer).
  const int64_t enough = std::max<int64_t>(64 * nlist, 39 * (int64_t{1} << std::min<int64_t>(options.pq_bits, 16)));
  const int64_t wanted = options.train_sample > 0 ? options.train_sample : std::min<int64_t>(65536, enough);
  const int64_t sample = std::min(n, wanted);
  const int64_t centroids = std::max<int64_t>(nlist, int64_t{1} << options.pq_bits);
  require(sample >= centroids, "IVF-PQ needs at least " + std::to_string(centroids) +
                                   " training documents (max of --nlist and 2^--pq-bits), has " +
                                   std::to_string(sample) + "; lower --nlist or --pq-bits");
  // Evenly spaced rows: deterministic, and spread over the corpus whatever its order.
  const at::Tensor rows = at::linspace(0, static_cast<double>(n - 1), sample, at::kDouble).round().to(at::kLong);
  const at::Tensor train = x.index_select(0, rows).contiguous();
  quantizer = std::make_unique<faiss::IndexFlatIP>(d);
  auto ivfpq = faiss_call("create the IVF-PQ index", [&] {
    return std::make_unique<faiss::IndexIVFPQ>(quantizer.get(), d, nlist, m, options.pq_bits,
                                               faiss::METRIC_INNER_PRODUCT);
  });
  ivfpq->cp.seed = 1234;
  ivfpq->verbose = false;
  faiss_call("train the IVF-PQ index", [&] { ivfpq->train(sample, train.data_ptr<float>()); });
  faiss_call("add documents to the IVF-PQ index", [&] { ivfpq->add(n, x.data_ptr<float>()); });
  ivfpq->nprobe = static_cast<size_t>(std::min(options.nprobe, nlist));
  options.nlist = nlist;
  options.pq_m = m;
  options.train_sample = sample;
  index = std::move(ivfpq);
}

DenseIndex::DenseIndex(const at::Tensor& docs, const DenseIndexOptions& options)
    : impl_(std::make_unique<Impl>()) {
  auto& s = *impl_;
  s.options = options;
  require(is_dense_index_type(options.type),
          "--index must be exact, flat, blocked, hnsw or ivfpq, got '" + options.type + "'");
  check_matrix(docs, "documents");
  require(docs.size(0) >= 1, "there are no documents to index");
  s.size = docs.size(0);
  s.dimension = docs.size(1);
  s.type = options.type == "exact" ? (docs.is_cpu() ? kFasterExactOnCpu : "blocked") : options.type;
  if (s.type == "blocked") {
    s.docs = docs;
    return;
  }
  use_threads(options.threads);
  const at::Tensor x = cpu_float(docs);
  const auto d = static_cast<int>(s.dimension);
  // Documents go in blocks, so that a signal stops a long build between two of them.
  auto add_in_blocks = [&](faiss::Index& index, const char* what) {
    for (int64_t start = 0; start < s.size; start += kBlockRows) {
      stop_if_signalled(options.stop);
      const int64_t rows = std::min(kBlockRows, s.size - start);
      faiss_call(what, [&] { index.add(rows, x.data_ptr<float>() + start * s.dimension); });
    }
  };
  if (s.type == "flat") {
    s.index = std::make_unique<faiss::IndexFlatIP>(d);
    add_in_blocks(*s.index, "add documents to the flat index");
  } else if (s.type == "hnsw") {
    require(options.hnsw_m >= 2, "--hnsw-m must be >= 2, got " + std::to_string(options.hnsw_m));
    require(options.ef_construction >= 1, "--ef-construction must be >= 1");
    require(options.ef_search >= 1, "--ef-search must be >= 1, got " + std::to_string(options.ef_search));
    // Bounds checked before FAISS allocates (issue 27: --hnsw-m 999999999999 on 50 documents
    // grew to 24 GB): each node keeps 2 M neighbour links at level 0, so M sizes n x 2M x 4
    // bytes; FAISS's own guidance is M of 4-64, and more than the documents links nothing new.
    const int64_t max_m = std::min<int64_t>(kMaxHnswM, std::max<int64_t>(2, s.size));
    require(options.hnsw_m <= max_m, "--hnsw-m must be at most " + std::to_string(max_m) + " (" +
                                         std::to_string(kMaxHnswM) + ", and no more than the " +
                                         std::to_string(s.size) + " documents), got " + std::to_string(options.hnsw_m));
    require(options.ef_construction <= kMaxHnswEf && options.ef_search <= kMaxHnswEf,
            "--ef-construction and --ef-search must be at most " + std::to_string(kMaxHnswEf) + ", got " +
                std::to_string(options.ef_construction) + " and " + std::to_string(options.ef_search));
    auto hnsw = faiss_call("create the HNSW index", [&] {
      return std::make_unique<faiss::IndexHNSWFlat>(d, static_cast<int>(options.hnsw_m), faiss::METRIC_INNER_PRODUCT);
    });
    hnsw->hnsw.efConstruction = static_cast<int>(options.ef_construction);
    add_in_blocks(*hnsw, "add documents to the HNSW index");
    s.index = std::move(hnsw);
  } else {
    s.build_ivfpq(x);
  }
}

DenseIndex::~DenseIndex() = default;
DenseIndex::DenseIndex(DenseIndex&&) noexcept = default;
DenseIndex& DenseIndex::operator=(DenseIndex&&) noexcept = default;

TopK DenseIndex::Impl::search_faiss(const at::Tensor& queries, int64_t k) const {
  const at::Tensor q = cpu_float(queries);
  const int64_t n = q.size(0);
  at::Tensor scores = at::empty({n, k}, at::kFloat);
  at::Tensor labels = at::empty({n, k}, at::kLong);
  if (auto* hnsw = dynamic_cast<faiss::IndexHNSW*>(index.get())) {
    hnsw->hnsw.efSearch = static_cast<int>(std::max(options.ef_search, k));
  }
  static_assert(sizeof(faiss::Index::idx_t) == sizeof(int64_t), "FAISS labels are 64-bit");
  faiss_call("search", [&] {
    index->search(n, q.data_ptr<float>(), k, scores.data_ptr<float>(),
                  reinterpret_cast<faiss::Index::idx_t*>(labels.data_ptr<int64_t>()));
  });
  // A missing result: label -1 and the lowest float; -inf says "no document" more plainly.
  scores.masked_fill_(labels.lt(0), -std::numeric_limits<float>::infinity());
  return sort_rows(scores, labels);
}

/// IndexFlatIP with exact_top_k's order: one more candidate than asked shows the rows where
/// equal scores straddle the k-th place (FAISS may keep any of them); those rows are searched
/// again with exact_top_k over the index's own copy of the documents.
TopK DenseIndex::Impl::search_flat(const at::Tensor& queries, int64_t k) const {
  const int64_t wide = std::min(k + 1, size);
  TopK found = search_faiss(queries, wide);
  if (wide == k) return found;
  const at::Tensor straddle = found.scores.select(1, k - 1).eq(found.scores.select(1, k));
  found.scores = found.scores.narrow(1, 0, k).contiguous();
  found.indices = found.indices.narrow(1, 0, k).contiguous();
  if (straddle.any().item<bool>()) {
    const auto* flat = static_cast<const faiss::IndexFlatIP*>(index.get());
    const at::Tensor all_docs = at::from_blob(const_cast<float*>(flat->get_xb()), {size, dimension}, at::kFloat);
    const at::Tensor rows = straddle.nonzero().select(1, 0);
    const TopK exact = exact_top_k(cpu_float(queries).index_select(0, rows), all_docs, k);
    found.scores.index_copy_(0, rows, exact.scores);
    found.indices.index_copy_(0, rows, exact.indices);
  }
  return found;
}

TopK DenseIndex::search(const at::Tensor& queries, int64_t k) const {
  const auto& s = *impl_;
  check_matrix(queries, "queries");
  require(queries.size(1) == s.dimension, "queries have " + std::to_string(queries.size(1)) +
                                              " dimensions but the index holds " + std::to_string(s.dimension) +
                                              "-dimensional documents; encode both with the same model");
  require(k >= 1, "k must be >= 1, got " + std::to_string(k));
  const int64_t kept = std::min(k, s.size);
  if (s.type != "blocked") {
    use_threads(s.options.threads);
    if (queries.size(0) == 0) return {at::empty({0, kept}, at::kFloat), at::empty({0, kept}, at::kLong)};
  }
  auto search_block = [&](const at::Tensor& block) {
    if (s.type == "blocked") return exact_top_k(block.to(s.docs.device(), s.docs.scalar_type()), s.docs, kept);
    return s.type == "flat" ? s.search_flat(block, kept) : s.search_faiss(block, kept);
  };
  // Queries go in blocks, so that a signal stops a long search between two of them.
  if (queries.size(0) <= kBlockRows) {
    stop_if_signalled(s.options.stop);
    return search_block(queries);
  }
  std::vector<at::Tensor> scores, indices;
  for (int64_t start = 0; start < queries.size(0); start += kBlockRows) {
    stop_if_signalled(s.options.stop);
    const TopK found = search_block(queries.narrow(0, start, std::min(kBlockRows, queries.size(0) - start)));
    scores.push_back(found.scores);
    indices.push_back(found.indices);
  }
  return {at::cat(scores, 0), at::cat(indices, 0)};
}

const std::string& DenseIndex::type() const { return impl_->type; }
int64_t DenseIndex::size() const { return impl_->size; }
int64_t DenseIndex::dimension() const { return impl_->dimension; }

std::string DenseIndex::describe() const {
  const auto& o = impl_->options;
  const auto& t = impl_->type;
  if (t == "hnsw") {
    return "hnsw M " + std::to_string(o.hnsw_m) + ", efConstruction " + std::to_string(o.ef_construction) +
           ", efSearch " + std::to_string(o.ef_search);
  }
  if (t == "ivfpq") {
    return "ivfpq nlist " + std::to_string(o.nlist) + ", nprobe " + std::to_string(o.nprobe) + ", PQ m " +
           std::to_string(o.pq_m) + " x " + std::to_string(o.pq_bits) + " bits, trained on " +
           std::to_string(o.train_sample);
  }
  return t == "flat" ? "exact (FAISS IndexFlatIP)" : "exact (blocked matrix products)";
}

double recall_against(const TopK& found, const TopK& exact, int64_t k) {
  if (found.indices.dim() != 2 || exact.indices.dim() != 2 || found.indices.size(0) != exact.indices.size(0) ||
      k < 1 || k > found.indices.size(1) || k > exact.indices.size(1)) {
    throw std::invalid_argument("recall_against: results " + shape_of(found.indices) + " and " +
                                shape_of(exact.indices) + " cannot be compared at k = " + std::to_string(k));
  }
  const at::Tensor a = found.indices.narrow(1, 0, k).to(at::kCPU).contiguous();
  const at::Tensor b = exact.indices.narrow(1, 0, k).to(at::kCPU).contiguous();
  const auto fa = a.accessor<int64_t, 2>();
  const auto ea = b.accessor<int64_t, 2>();
  const int64_t queries = a.size(0);
  if (queries == 0) return 1.0;
  double total = 0;
  std::vector<int64_t> row(static_cast<size_t>(k));
  for (int64_t q = 0; q < queries; ++q) {
    for (int64_t i = 0; i < k; ++i) row[i] = fa[q][i];
    std::sort(row.begin(), row.end());
    int64_t hits = 0;
    for (int64_t i = 0; i < k; ++i) hits += std::binary_search(row.begin(), row.end(), ea[q][i]) ? 1 : 0;
    total += static_cast<double>(hits) / static_cast<double>(k);
  }
  return total / static_cast<double>(queries);
}

}  // namespace gradcache::retriever
