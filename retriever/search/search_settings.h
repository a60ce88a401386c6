// The search settings commands share (eval, mine): --index and its FAISS parameters, and the
// BM25 index's directory and parameters, declared once for any settings struct with the members
// `DenseIndexOptions index`, `std::string bm25_index`, `double bm25_k1, bm25_b`.
#pragma once

#include "retriever/config/settings_table.h"
#include "retriever/search/dense_index.h"

namespace gradcache::retriever {

/// --index, --hnsw-m, --ef-construction, --ef-search, --nlist, --nprobe, --pq-m, --pq-bits.
template <class Config>
void add_index_settings(SettingsTable<Config>& t) {
  using D = DenseIndexOptions;
  auto index = [](const char* key, int64_t D::*member, const char* flag, const char* help) {
    return nested_field(key, &Config::index, member, flag, help).in_group("Search");
  };
  t.add(nested_field("index", &Config::index, &D::type, "--index",
                     "Dense search: exact (the faster exact method), flat (FAISS), blocked, hnsw or ivfpq")
            .in_group("Search")
            .checked(one_of({"exact", "flat", "blocked", "hnsw", "ivfpq"})));
  t.add(index("hnsw_m", &D::hnsw_m, "--hnsw-m", "HNSW: neighbours per node").checked(at_least(2)));
  t.add(index("ef_construction", &D::ef_construction, "--ef-construction", "HNSW: candidates while building")
            .checked(positive()));
  t.add(index("ef_search", &D::ef_search, "--ef-search", "HNSW: candidates while searching").checked(positive()));
  t.add(index("nlist", &D::nlist, "--nlist", "IVF-PQ: clusters (0: about sqrt(passages))").checked(at_least(0)));
  t.add(index("nprobe", &D::nprobe, "--nprobe", "IVF-PQ: clusters visited per query").checked(positive()));
  t.add(index("pq_m", &D::pq_m, "--pq-m", "IVF-PQ: sub-quantizers, dividing the embedding size (0: auto)")
            .checked(at_least(0)));
  t.add(index("pq_bits", &D::pq_bits, "--pq-bits", "IVF-PQ: bits per code").checked(positive()));
}

/// --bm25-index, --bm25-k1, --bm25-b.
template <class Config>
void add_bm25_settings(SettingsTable<Config>& t) {
  t.add(field("bm25_index", &Config::bm25_index, "--bm25-index",
              "BM25 index directory, reused when it holds the same corpus (default: a temporary one)")
            .in_group("Search"));
  t.add(field("bm25_k1", &Config::bm25_k1, "--bm25-k1", "BM25 k1").in_group("Search").checked(at_least(0)));
  t.add(field("bm25_b", &Config::bm25_b, "--bm25-b", "BM25 b").in_group("Search").checked(at_least(0)));
}

}  // namespace gradcache::retriever
