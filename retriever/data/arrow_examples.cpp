// Arrow-family training data row by row (arrow_data.h), with the Arrow and Parquet C++
// libraries of the pyarrow wheel. Compiled as C++20 (Arrow's headers need it), alone in
// gradcache_arrow; only arrow_data.h, which is C++17, is seen by the rest.
#include "retriever/data/arrow_data.h"
#include "retriever/data/line_source.h"
#include "retriever/files/utf8.h"

#include <arrow/api.h>
#include <arrow/io/file.h>
#include <arrow/ipc/reader.h>
#include <parquet/arrow/reader.h>
#include <parquet/properties.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>

namespace gradcache::retriever {
namespace {

using json = nlohmann::json;

// Parquet decodes this many rows at a time: what a file holds beyond them stays on disk.
constexpr int64_t kParquetRowsPerBatch = 1024;

// A DataError about `path`. Its message holds Arrow's words and the file's column names, which
// are the file's bytes: shown as valid UTF-8, control characters escaped.
DataError arrow_error(const std::string& path, const std::string& message) {
  return DataError(path, 0, printable_utf8(message));
}

template <class T>
T value_or_throw(arrow::Result<T> result, const std::string& path, const std::string& what) {
  if (!result.ok()) throw arrow_error(path, what + ": " + result.status().ToString());
  return std::move(result).ValueOrDie();
}

// One file's record batches, one at a time; `next` gives nullptr at the end.
struct BatchStream {
  std::shared_ptr<arrow::Schema> schema;
  std::function<arrow::Result<std::shared_ptr<arrow::RecordBatch>>()> next;
};

// Which format the file is by its first bytes, not its name: "PAR1" is Parquet, "ARROW1" an
// Arrow IPC file (Feather v2), anything else is read as an Arrow IPC stream (datasets' shards).
BatchStream open_batches(const std::string& path) {
  auto file = value_or_throw(arrow::io::ReadableFile::Open(path), path, "cannot open");
  const auto size = value_or_throw(file->GetSize(), path, "cannot open");
  std::string head(std::min<int64_t>(size, 6), '\0');
  if (value_or_throw(file->ReadAt(0, static_cast<int64_t>(head.size()), head.data()), path, "cannot read") !=
      static_cast<int64_t>(head.size()))
    throw arrow_error(path, "cannot read its first bytes");
  if (head.rfind("PAR1", 0) == 0) {
    parquet::arrow::FileReaderBuilder builder;
    const auto opened = builder.Open(file);
    if (!opened.ok()) throw arrow_error(path, "not a readable Parquet file: " + opened.ToString());
    parquet::ArrowReaderProperties properties;
    properties.set_batch_size(kParquetRowsPerBatch);
    std::shared_ptr<parquet::arrow::FileReader> reader =
        value_or_throw(builder.properties(properties)->Build(), path, "not a readable Parquet file");
    std::shared_ptr<arrow::RecordBatchReader> batches =
        value_or_throw(reader->GetRecordBatchReader(), path, "not a readable Parquet file");
    return {batches->schema(), [reader, batches]() { return batches->Next(); }};
  }
  if (head == "ARROW1") {
    auto reader = value_or_throw(arrow::ipc::RecordBatchFileReader::Open(file), path, "not a readable Arrow file");
    auto index = std::make_shared<int>(0);
    return {reader->schema(), [reader, index]() -> arrow::Result<std::shared_ptr<arrow::RecordBatch>> {
              if (*index >= reader->num_record_batches()) return std::shared_ptr<arrow::RecordBatch>();
              return reader->ReadRecordBatch((*index)++);
            }};
  }
  if (const auto rewound = file->Seek(0); !rewound.ok()) throw arrow_error(path, "cannot read: " + rewound.ToString());
  const std::string extension = std::filesystem::path(path).extension().string();
  const std::string what = extension == ".parquet" ? "not a Parquet file (it does not begin with PAR1)"
                                                   : "not a readable Arrow stream or file";
  std::shared_ptr<arrow::RecordBatchReader> reader =
      value_or_throw(arrow::ipc::RecordBatchStreamReader::Open(file), path, what);
  return {reader->schema(), [file, reader]() { return reader->Next(); }};
}

bool is_text_type(arrow::Type::type id) {
  return id == arrow::Type::STRING || id == arrow::Type::LARGE_STRING || id == arrow::Type::STRING_VIEW;
}
bool is_integer_type(arrow::Type::type id) { return arrow::is_integer(id); }
bool is_list_type(arrow::Type::type id) {
  return id == arrow::Type::LIST || id == arrow::Type::LARGE_LIST || id == arrow::Type::FIXED_SIZE_LIST ||
         id == arrow::Type::LIST_VIEW || id == arrow::Type::LARGE_LIST_VIEW;
}

// A struct of a passage: a "text" string field, optional "title" and an id (Tevatron's rows).
bool is_passage_struct(const arrow::DataType& type) {
  if (type.id() != arrow::Type::STRUCT) return false;
  const auto& fields = static_cast<const arrow::StructType&>(type);
  const auto text = fields.GetFieldByName("text");
  return text && is_text_type(text->type()->id());
}

// A column that holds passages: text, a passage struct, or a list of either.
bool holds_passages(const arrow::DataType& type) {
  if (is_text_type(type.id()) || is_passage_struct(type)) return true;
  if (!is_list_type(type.id())) return false;
  const auto& item = *static_cast<const arrow::BaseListType&>(type).value_type();
  return is_text_type(item.id()) || is_passage_struct(item);
}

// The same type with every string as binary: its array views the same buffers, so that
// ValidateFull checks the offsets but not the UTF-8, which each row then checks itself (and a
// row of invalid UTF-8 is one bad row, not an unreadable batch).
std::shared_ptr<arrow::DataType> as_binary(const std::shared_ptr<arrow::DataType>& type) {
  switch (type->id()) {
    case arrow::Type::STRING: return arrow::binary();
    case arrow::Type::LARGE_STRING: return arrow::large_binary();
    case arrow::Type::STRING_VIEW: return arrow::binary_view();
    case arrow::Type::LIST:
      return arrow::list(static_cast<const arrow::ListType&>(*type).value_field()->WithType(
          as_binary(static_cast<const arrow::ListType&>(*type).value_type())));
    case arrow::Type::LARGE_LIST:
      return arrow::large_list(static_cast<const arrow::LargeListType&>(*type).value_field()->WithType(
          as_binary(static_cast<const arrow::LargeListType&>(*type).value_type())));
    case arrow::Type::STRUCT: {
      arrow::FieldVector fields;
      for (const auto& field : type->fields()) fields.push_back(field->WithType(as_binary(field->type())));
      return arrow::struct_(fields);
    }
    default: return type;
  }
}

std::string text_of(const arrow::Array& array, int64_t row) {
  switch (array.type_id()) {
    case arrow::Type::STRING: return std::string(static_cast<const arrow::StringArray&>(array).GetView(row));
    case arrow::Type::LARGE_STRING: return std::string(static_cast<const arrow::LargeStringArray&>(array).GetView(row));
    default: return std::string(static_cast<const arrow::StringViewArray&>(array).GetView(row));
  }
}

// The items of one row of a list array: the values array and the row's range in it.
struct ListItems {
  std::shared_ptr<arrow::Array> values;
  int64_t begin = 0, end = 0;
};
template <class ListArray>
ListItems list_items(const arrow::Array& array, int64_t row) {
  const auto& list = static_cast<const ListArray&>(array);
  const auto begin = static_cast<int64_t>(list.value_offset(row));
  return {list.values(), begin, begin + static_cast<int64_t>(list.value_length(row))};
}

// A cell as the JSON value that a JSONL line would hold there.
json cell(const arrow::Array& array, int64_t row) {
  if (array.IsNull(row)) return nullptr;
  const auto id = array.type_id();
  if (is_text_type(id)) return text_of(array, row);
  switch (id) {
    case arrow::Type::INT8: return static_cast<const arrow::Int8Array&>(array).Value(row);
    case arrow::Type::INT16: return static_cast<const arrow::Int16Array&>(array).Value(row);
    case arrow::Type::INT32: return static_cast<const arrow::Int32Array&>(array).Value(row);
    case arrow::Type::INT64: return static_cast<const arrow::Int64Array&>(array).Value(row);
    case arrow::Type::UINT8: return static_cast<const arrow::UInt8Array&>(array).Value(row);
    case arrow::Type::UINT16: return static_cast<const arrow::UInt16Array&>(array).Value(row);
    case arrow::Type::UINT32: return static_cast<const arrow::UInt32Array&>(array).Value(row);
    case arrow::Type::UINT64: return static_cast<const arrow::UInt64Array&>(array).Value(row);
    default: break;
  }
  if (id == arrow::Type::STRUCT) {
    const auto& fields = static_cast<const arrow::StructArray&>(array);
    json object = json::object();
    for (int f = 0; f < fields.num_fields(); ++f) {
      const auto name = fields.struct_type()->field(f)->name();
      const auto field_id = fields.field(f)->type_id();
      if (is_text_type(field_id) || is_integer_type(field_id)) object[name] = cell(*fields.field(f), row);
    }
    return object;
  }
  if (is_list_type(id)) {
    const auto [items, begin, end] = id == arrow::Type::LIST              ? list_items<arrow::ListArray>(array, row)
                                     : id == arrow::Type::LARGE_LIST      ? list_items<arrow::LargeListArray>(array, row)
                                     : id == arrow::Type::FIXED_SIZE_LIST ? list_items<arrow::FixedSizeListArray>(array, row)
                                     : id == arrow::Type::LIST_VIEW       ? list_items<arrow::ListViewArray>(array, row)
                                                                          : list_items<arrow::LargeListViewArray>(array, row);
    json values = json::array();
    for (int64_t i = begin; i < end; ++i) values.push_back(cell(*items, i));
    return values;
  }
  return nullptr;  // the columns were checked to hold nothing else
}

// Which columns are which (arrow_data.h's rules), by index into the schema.
struct ColumnRoles {
  int query = -1, query_id = -1;
  std::vector<int> positives, negatives;
  std::string names;  ///< "query, positive_passages", for messages
  std::vector<int> all() const {
    std::vector<int> used{query};
    used.insert(used.end(), positives.begin(), positives.end());
    used.insert(used.end(), negatives.begin(), negatives.end());
    if (query_id >= 0) used.push_back(query_id);
    return used;
  }
};

std::string columns_found(const arrow::Schema& schema) {
  std::string found;
  for (const auto& field : schema.fields())
    found += (found.empty() ? "" : ", ") + field->name() + " (" + field->type()->ToString() + ")";
  return found.empty() ? "none" : found;
}

ColumnRoles column_roles(const std::string& path, const arrow::Schema& schema, const std::vector<std::string>& wanted) {
  const auto refuse = [&](const std::string& why) {
    throw arrow_error(path,
                      why + "; the columns found: " + columns_found(schema) +
                          ". Name the query, positive and negative columns with --columns QUERY,POSITIVE[,NEGATIVE...]");
  };
  const auto index_of = [&](const std::string& name) { return schema.GetFieldIndex(name); };
  ColumnRoles roles;
  std::vector<int> chosen;
  if (!wanted.empty()) {
    for (const auto& name : wanted) {
      const int i = index_of(name);
      if (i < 0) refuse("no column named " + lines::shown(name) + " (or more than one)");
      chosen.push_back(i);
    }
  } else if (index_of("query") >= 0 && (index_of("positive_passages") >= 0 || index_of("positives") >= 0)) {
    chosen.push_back(index_of("query"));
    chosen.push_back(index_of("positive_passages") >= 0 ? index_of("positive_passages") : index_of("positives"));
    for (const char* name : {"negative_passages", "negatives"}) {
      if (index_of(name) >= 0) {
        chosen.push_back(index_of(name));
        break;
      }
    }
    for (const char* name : {"query_id", "qid"}) {
      const int i = index_of(name);
      if (i >= 0 && (is_text_type(schema.field(i)->type()->id()) || is_integer_type(schema.field(i)->type()->id()))) {
        roles.query_id = i;
        break;
      }
    }
  } else {
    // sentence-transformers: every column by position but the labels a loss would take.
    for (int i = 0; i < schema.num_fields(); ++i) {
      const auto& name = schema.field(i)->name();
      if (name != "label" && name != "score" && name != "labels" && name != "scores") chosen.push_back(i);
    }
  }
  if (chosen.size() < 2) refuse("a query and a positive column are needed");
  if (!is_text_type(schema.field(chosen[0])->type()->id()))
    refuse("the query column " + schema.field(chosen[0])->name() + " holds " + schema.field(chosen[0])->type()->ToString() +
           ", not text");
  for (size_t c = 1; c < chosen.size(); ++c) {
    const auto& field = *schema.field(chosen[c]);
    if (!holds_passages(*field.type()))
      refuse("the column " + field.name() + " holds " + field.type()->ToString() +
             ", not text, a list of texts or of {text, title} passages");
  }
  roles.query = chosen[0];
  roles.positives = {chosen[1]};
  roles.negatives.assign(chosen.begin() + 2, chosen.end());
  for (const int i : chosen) roles.names += (roles.names.empty() ? "" : ", ") + schema.field(i)->name();
  return roles;
}

// Appends a cell's passages to `list`: a list's items, or its one text (a null text stays, for
// the JSONL parser to refuse as it refuses a null in a line); a null list adds none.
void add_passages(json& list, const arrow::Array& column, int64_t row) {
  if (column.IsNull(row) && is_list_type(column.type_id())) return;
  json value = cell(column, row);
  if (!value.is_array()) {
    list.push_back(std::move(value));
    return;
  }
  for (auto& item : value) list.push_back(std::move(item));
}

// The JSONL line of one row, checked by read_train_examples' own line parser.
std::string row_line(const arrow::RecordBatch& batch, const ColumnRoles& roles, int64_t row) {
  json object = json::object();
  object["query"] = cell(*batch.column(roles.query), row);
  if (roles.query_id >= 0) {
    json id = cell(*batch.column(roles.query_id), row);
    if (!id.is_null()) object["query_id"] = std::move(id);
  }
  json positives = json::array(), negatives = json::array();
  for (const int c : roles.positives) add_passages(positives, *batch.column(c), row);
  for (const int c : roles.negatives) add_passages(negatives, *batch.column(c), row);
  object["positives"] = std::move(positives);
  if (!negatives.empty()) object["negatives"] = std::move(negatives);
  std::string line;
  try {
    line = object.dump(-1, ' ', false, json::error_handler_t::strict);
  } catch (const json::type_error&) {
    throw lines::BadLine{"invalid UTF-8 in a text"};
  }
  lines::LineSource::check_text(line);
  lines::train_example_from_line(lines::Format::Jsonl, line);
  return line;
}

void write_line(std::FILE* out, const std::string& line) {
  if (std::fwrite(line.data(), 1, line.size(), out) != line.size() || std::fputc('\n', out) == EOF)
    throw std::runtime_error(std::string("cannot write the rows read: ") + std::strerror(errno));
}

size_t write_file_rows(const std::string& path, const std::vector<std::string>& columns, OnBadLine on_bad,
                       ReadStats& stats, std::FILE* out) {
  BatchStream batches = open_batches(path);
  const ColumnRoles roles = column_roles(path, *batches.schema, columns);
  size_t written = 0, rows = 0;
  for (;;) {
    std::shared_ptr<arrow::RecordBatch> batch;
    try {
      batch = value_or_throw(batches.next(), path, "cannot read the rows after row " + std::to_string(rows));
    } catch (const DataError&) {
      throw;
    } catch (const std::exception& e) {  // Parquet's decoders may throw rather than return a status
      throw arrow_error(path, "cannot read the rows after row " + std::to_string(rows) + ": " + e.what());
    }
    if (!batch) break;
    for (const int c : roles.all()) {
      const auto& column = batch->column(c);
      const auto view = column->View(as_binary(column->type()));
      const auto valid = view.ok() ? (*view)->ValidateFull() : view.status();
      if (!valid.ok())
        throw arrow_error(path, "the column " + batch->schema()->field(c)->name() + " of the rows after row " +
                                     std::to_string(rows) + " is corrupt: " + valid.ToString());
    }
    for (int64_t r = 0; r < batch->num_rows(); ++r) {
      ++rows;
      ++stats.lines;
      try {
        write_line(out, row_line(*batch, roles, r));
        ++stats.records;
        ++written;
      } catch (const lines::BadLine& bad) {
        const std::string where = "row " + std::to_string(rows) + " (columns " + roles.names + "): " + bad.reason;
        if (on_bad == OnBadLine::Error) throw arrow_error(path, where);
        ++stats.skipped;
        if (stats.skipped_examples.size() < ReadStats::kMaxSkippedExamples)
          stats.skipped_examples.push_back(path + ": " + printable_utf8(where));
      }
    }
  }
  return written;
}

}  // namespace

size_t write_arrow_examples_as_jsonl(const std::string& path, const std::vector<std::string>& columns,
                                     OnBadLine on_bad, ReadStats& stats, std::FILE* out) {
  size_t written = 0;
  for (const auto& file : arrow_data_files(path)) written += write_file_rows(file, columns, on_bad, stats, out);
  return written;
}

}  // namespace gradcache::retriever
