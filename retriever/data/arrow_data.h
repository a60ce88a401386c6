// Training pairs in Apache Arrow's formats: Parquet files, Arrow IPC files and streams (.arrow,
// .feather), Hugging Face `datasets` directories written by save_to_disk (state.json and its
// .arrow shards), and directories of .parquet or .arrow shards.
//
// They are read with the Arrow and Parquet C++ libraries of the pyarrow wheel, one record batch
// at a time, and each row is turned into the JSONL record of read_train_examples and checked by
// exactly that line's rules (trimming, empty texts, UTF-8). index_train_file writes those lines to
// a scratch file and indexes it like any --train-file, so a data set larger than memory trains in
// flat memory, Parquet's compressed row groups are decoded once rather than per batch, and the
// same data train the same batches whatever their format. (datasets itself caches Parquet as
// Arrow files the same way.)
//
// Which columns are the query, the positives and the negatives:
// - `columns` given (--columns QUERY,POSITIVE[,NEGATIVE...]): those, in that order;
// - else Tevatron's and this program's names: "query" with "positive_passages" or "positives"
//   (and "negative_passages" or "negatives", "query_id" or "qid" when present);
// - else sentence-transformers' rule: the columns in order, the first the anchor, the second the
//   positive, the others negatives ("label" and "score" columns left out).
// A column holds strings, lists of strings, or lists of {text, title, docid} structs (Tevatron).
#pragma once

#include "retriever/data/text_data.h"

#include <cstdio>
#include <string>
#include <vector>

namespace gradcache::retriever {

/// Whether `path` is Arrow-family data: a .parquet, .arrow or .feather file, a directory with
/// datasets' state.json, or a directory holding .parquet or .arrow files.
bool is_arrow_data(const std::string& path);

/// The data files of `path`, in reading order: the file itself; state.json's "_data_files" (in
/// the directory); or the directory's .parquet/.arrow files sorted by name. Throws DataError
/// naming a listed file that is missing, a state.json that does not read, or an empty directory.
std::vector<std::string> arrow_data_files(const std::string& path);

/// Writes each row of `path`'s files as one JSONL line (read_train_examples' layout) to `out`,
/// in order. A bad row (a null or empty text, invalid UTF-8, no positive) is a DataError naming
/// the file and row (1-based, counted over that file), or counted and skipped with
/// OnBadLine::Skip; `stats` counts rows as lines. A file that Arrow cannot read (truncated,
/// corrupt, another format), a missing column or one of a type that holds no text throws
/// DataError naming the file, the columns found and --columns; so does a build without
/// pyarrow's C++ libraries, saying so. Returns the rows written.
size_t write_arrow_examples_as_jsonl(const std::string& path, const std::vector<std::string>& columns,
                                     OnBadLine on_bad, ReadStats& stats, std::FILE* out);

}  // namespace gradcache::retriever
