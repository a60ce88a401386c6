#include "retriever/data/text_data.h"

#include "retriever/data/line_source.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <utility>

namespace gradcache::retriever {

using namespace lines;  // NOLINT(google-build-using-namespace): the line loop and text helpers these readers share

namespace {

using nlohmann::json;

// ---- JSON helpers ----------------------------------------------------------------------------

json parse_json_object(const std::string& line) {
  json value;
  try {
    value = json::parse(line);
  } catch (const json::exception& e) {
    // Not only parse_error: a number too large for a double ("1e99999") is out_of_range.406,
    // and it must be a bad line like any other, not an exception that ends the program.
    // nlohmann's message reads "[json.exception.parse_error.101] parse error at line 1, column 5:
    // ..."; the tag and the JSON-internal line number mean nothing to the user.
    std::string message = e.what();
    if (const size_t tag_end = message.find("] "); tag_end != std::string::npos) message.erase(0, tag_end + 2);
    if (const size_t at = message.find("line 1, column"); at != std::string::npos) message.replace(at, 14, "column");
    // "last read: '<token>'" quotes the token being read, which can be a whole (long) string, or
    // part of a UTF-8 sequence when the error is at a non-ASCII byte outside a string.
    const std::string_view tag = "last read: '";
    if (const size_t at = message.find(tag); at != std::string::npos) {
      const size_t begin = at + tag.size();
      // The message ends "'" or "'; expected ..." after the token.
      size_t end = message.rfind("'; expected ");
      if ((end == std::string::npos || end < begin) && !message.empty() && message.back() == '\'')
        end = message.size() - 1;
      if (end != std::string::npos && end >= begin) {
        const std::string token = message.substr(begin, end - begin);
        message.replace(at, end + 1 - at, "last read: " + shown(token));
      }
    }
    constexpr size_t kMaxMessage = 300;  // a number token is quoted whole, however long
    if (message.size() > kMaxMessage) message = std::string(cut(message, kMaxMessage)) + "...";
    throw BadLine{"malformed JSON: " + printable_utf8(message)};
  }
  if (!value.is_object())
    throw BadLine{std::string("expected one JSON object per line (JSONL), got a JSON ") + value.type_name()};
  return value;
}

const json* find_key(const json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// The value of whichever of two equivalent keys is present (our name or Tevatron's); both is
// ambiguous. Returns nullptr when neither is there.
const json* find_either(const json& object, const char* key, const char* alias, const char** used) {
  const json* a = find_key(object, key);
  const json* b = find_key(object, alias);
  if (a && b)
    throw BadLine{std::string("has both \"") + key + "\" and \"" + alias + "\"; keep one"};
  *used = a ? key : alias;
  return a ? a : b;
}

// A non-empty trimmed string from a JSON value, or a BadLine naming `what`.
std::string nonempty_string(const json& value, const std::string& what) {
  if (!value.is_string()) throw BadLine{what + " must be a string, got " + value.type_name()};
  const std::string_view text = trim(value.get_ref<const std::string&>());
  if (text.empty()) throw BadLine{what + " is empty"};
  return std::string(text);
}

// Joins an optional title in front of a text, as "title text".
std::string with_title(std::string_view title, std::string text) {
  title = trim(title);
  if (title.empty()) return text;
  return std::string(title) + " " + text;
}

// The text of a passage given as a string or an object {"text": str, "title": str?}.
std::string passage_text(const json& item, const std::string& what) {
  if (item.is_string()) return nonempty_string(item, what);
  if (!item.is_object())
    throw BadLine{what + " must be a string or an object with \"text\", got " + item.type_name()};
  const json* text = find_key(item, "text");
  if (!text) throw BadLine{what + " has no \"text\""};
  std::string body = nonempty_string(*text, what + ".text");
  const json* title = find_key(item, "title");
  if (!title || title->is_null()) return body;
  if (!title->is_string()) throw BadLine{what + ".title must be a string, got " + title->type_name()};
  return with_title(title->get_ref<const std::string&>(), std::move(body));
}

// An optional id under the first of `keys` present: a string or an integer; "" when none.
std::string optional_id(const json& object, std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    const json* id = find_key(object, key);
    if (!id || id->is_null()) continue;
    if (id->is_number_integer()) return id->dump();
    if (!id->is_string())
      throw BadLine{std::string("\"") + key + "\" must be a string or an integer, got " + id->type_name()};
    return std::string(trim(id->get_ref<const std::string&>()));
  }
  return "";
}

// The texts of a list of passages and, when `ids` is given, their ids ("" where absent).
std::vector<std::string> passage_list(const json& list, const char* key, std::vector<std::string>* ids = nullptr) {
  if (!list.is_array()) throw BadLine{std::string("\"") + key + "\" must be a list, got " + list.type_name()};
  std::vector<std::string> texts;
  texts.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    texts.push_back(passage_text(list[i], std::string("\"") + key + "\"[" + std::to_string(i) + "]"));
    if (ids) ids->push_back(list[i].is_object() ? optional_id(list[i], {"docid", "id"}) : "");
  }
  return texts;
}

// sentence-transformers' column names, in the order tried: an anchor (the query) and its positive,
// one string each; negatives under "negative" (a string or a list) and "negative_1", "negative_2", ...
constexpr std::pair<const char*, const char*> kSentenceTransformersPairs[] = {
    {"anchor", "positive"}, {"query", "positive"}, {"query", "answer"}, {"question", "answer"}, {"sentence1", "sentence2"}};

std::optional<TrainExample> sentence_transformers_example(const json& object) {
  for (const auto& [query_key, positive_key] : kSentenceTransformersPairs) {
    const json* query = find_key(object, query_key);
    const json* positive = find_key(object, positive_key);
    if (!query || !positive) continue;
    TrainExample example;
    example.query = nonempty_string(*query, std::string("\"") + query_key + "\"");
    example.positives.push_back(nonempty_string(*positive, std::string("\"") + positive_key + "\""));
    example.positive_ids.emplace_back();
    if (const json* negative = find_key(object, "negative")) {
      if (negative->is_array()) {
        example.negatives = passage_list(*negative, "negative");
      } else {
        example.negatives.push_back(nonempty_string(*negative, "\"negative\""));
      }
    }
    for (int i = 1;; ++i) {
      const std::string key = "negative_" + std::to_string(i);
      const json* negative = find_key(object, key.c_str());
      if (!negative) break;
      example.negatives.push_back(nonempty_string(*negative, "\"" + key + "\""));
    }
    return example;
  }
  return std::nullopt;
}

TrainExample train_example_from_json(const std::string& line) {
  const json object = parse_json_object(line);
  if (!find_key(object, "positives") && !find_key(object, "positive_passages")) {
    if (auto example = sentence_transformers_example(object)) return std::move(*example);
  }
  TrainExample example;
  const json* query = find_key(object, "query");
  if (!query)
    throw BadLine{"missing \"query\" (or sentence-transformers' \"anchor\" and \"positive\", \"query\" and "
                  "\"answer\", \"sentence1\" and \"sentence2\")"};
  example.query = nonempty_string(*query, "\"query\"");
  example.query_id = optional_id(object, {"query_id", "qid"});

  const char* key = nullptr;
  const json* positives = find_either(object, "positives", "positive_passages", &key);
  if (!positives)
    throw BadLine{"missing \"positives\" (or \"positive_passages\"; or sentence-transformers' \"anchor\" and "
                  "\"positive\", \"query\" and \"answer\", \"sentence1\" and \"sentence2\")"};
  example.positives = passage_list(*positives, key, &example.positive_ids);
  if (example.positives.empty()) throw BadLine{std::string("no positives: \"") + key + "\" is empty"};

  if (const json* negatives = find_either(object, "negatives", "negative_passages", &key))
    example.negatives = passage_list(*negatives, key);
  return example;
}

TrainExample train_example_from_tsv(std::string_view line) {
  const auto fields = split(line, '\t');
  if (fields.size() < 2)
    throw BadLine{"expected query<TAB>positive[<TAB>negative...], got 1 field (no tab in the line)"};
  auto field = [&](size_t i, const char* what) {
    const std::string_view text = trim(fields[i]);
    if (text.empty()) throw BadLine{std::string(what) + " (field " + std::to_string(i + 1) + ") is empty"};
    return std::string(text);
  };
  TrainExample example;
  example.query = field(0, "the query");
  example.positives.push_back(field(1, "the positive"));
  example.positive_ids.emplace_back();
  for (size_t i = 2; i < fields.size(); ++i) example.negatives.push_back(field(i, "a negative"));
  return example;
}

}  // namespace

TrainExample lines::train_example_from_line(Format format, const std::string& line) {
  return format == Format::Jsonl ? train_example_from_json(line) : train_example_from_tsv(line);
}

namespace {

// The id of a collection record: a string or an integer under the first key present.
std::string record_id(const json& object) {
  for (const char* key : {"id", "_id", "docid", "query_id", "qid"}) {
    const json* id = find_key(object, key);
    if (!id) continue;
    const std::string what = std::string("\"") + key + "\"";
    if (id->is_number_integer()) return id->dump();
    if (!id->is_string()) throw BadLine{what + " must be a string or an integer, got " + id->type_name()};
    return nonempty_string(*id, what);
  }
  throw BadLine{"missing an id (one of \"id\", \"_id\", \"docid\", \"query_id\", \"qid\")"};
}

std::optional<int> parse_int(std::string_view s) {
  int value = 0;
  const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (error != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

}  // namespace

DataError::DataError(std::string path, size_t line, const std::string& message)
    : std::runtime_error(location(path, line) + ": " + message), path_(std::move(path)), line_(line) {}

std::vector<TrainExample> read_train_examples(const std::string& path, OnBadLine on_bad, ReadStats* stats) {
  const Format format = format_of(path);
  ReadStats local;
  ReadStats& seen = stats ? *stats : local;
  std::vector<TrainExample> examples;
  for_each_line(path, on_bad, seen, [&](const std::string& line) {
    examples.push_back(train_example_from_line(format, line));
    return true;
  });
  if (examples.empty()) throw nothing_read(path, "training examples", seen);
  return examples;
}

void TextCollection::add(std::string id, std::string text) {
  const auto [it, inserted] = index.try_emplace(id, ids.size());
  if (!inserted)
    throw std::invalid_argument("duplicate id " + shown(id) + " (first at record " + std::to_string(it->second + 1) + ")");
  ids.push_back(std::move(id));
  texts.push_back(std::move(text));
}

namespace {

// The id and text of a collection line (read_collection's formats).
std::pair<std::string, std::string> collection_record(Format format, const std::string& line) {
  std::string id, text;
  if (format == Format::Jsonl) {
    const json object = parse_json_object(line);
    id = record_id(object);
    const char* key = nullptr;
    const json* body = find_either(object, "text", "query", &key);
    if (!body) throw BadLine{"missing \"text\""};
    text = nonempty_string(*body, std::string("\"") + key + "\"");
    if (const json* title = find_key(object, "title"); title && !title->is_null()) {
      if (!title->is_string()) throw BadLine{std::string("\"title\" must be a string, got ") + title->type_name()};
      text = with_title(title->get_ref<const std::string&>(), std::move(text));
    }
    return {std::move(id), std::move(text)};
  }
  const auto fields = split(line, '\t');
  if (fields.size() < 2 || fields.size() > 3)
    throw BadLine{"expected id<TAB>text[<TAB>title], got " + std::to_string(fields.size()) + " field" +
                  (fields.size() == 1 ? " (no tab in the line)" : "s")};
  id = std::string(trim(fields[0]));
  if (id.empty()) throw BadLine{"the id (field 1) is empty"};
  text = std::string(trim(fields[1]));
  if (text.empty()) throw BadLine{"the text (field 2) is empty"};
  if (fields.size() == 3) text = with_title(fields[2], std::move(text));
  return {std::move(id), std::move(text)};
}

BadLine duplicate_id(const std::string& id, size_t first_line) {
  return BadLine{"duplicate id " + shown(id) + " (first on line " + std::to_string(first_line) + ")"};
}

}  // namespace

TextCollection read_collection(const std::string& path, OnBadLine on_bad, ReadStats* stats) {
  const Format format = format_of(path);
  ReadStats local;
  ReadStats& seen = stats ? *stats : local;
  TextCollection collection;
  std::vector<size_t> line_of;  // the line of each record, for duplicate-id messages
  for_each_line(path, on_bad, seen, [&](const std::string& line) {
    auto [id, text] = collection_record(format, line);
    if (const auto it = collection.index.find(id); it != collection.index.end())
      throw duplicate_id(id, line_of[it->second]);
    collection.add(std::move(id), std::move(text));
    line_of.push_back(seen.lines);
    return true;
  });
  if (collection.size() == 0) throw nothing_read(path, "records", seen);
  return collection;
}

struct CollectionReader::State {
  State(const std::string& path, OnBadLine on_bad)
      : path(path), format(format_of(path)), source(path, on_bad, stats), size(file_size(path)) {}
  static uint64_t file_size(const std::string& path) {
    std::error_code error;
    const auto size = std::filesystem::file_size(path, error);
    return error ? 0 : size;
  }
  std::string path;
  Format format;
  ReadStats stats;
  LineSource source;
  uint64_t size;
  std::unordered_map<std::string, size_t> first_line;  // id -> line, for duplicate ids
};

CollectionReader::CollectionReader(const std::string& path, OnBadLine on_bad)
    : state_(std::make_unique<State>(path, on_bad)) {}

CollectionReader::~CollectionReader() = default;

TextCollection CollectionReader::next(size_t max_records) {
  State& s = *state_;
  TextCollection shard;
  auto keep = [&](const std::string& line) {
    auto [id, text] = collection_record(s.format, line);
    const auto [it, inserted] = s.first_line.try_emplace(id, s.stats.lines);
    if (!inserted) throw duplicate_id(id, it->second);
    shard.add(std::move(id), std::move(text));
    return true;
  };
  while (shard.size() < max_records && s.source.next(keep)) {
  }
  if (shard.size() == 0 && s.stats.records == 0) throw nothing_read(s.path, "records", s.stats);
  return shard;
}

const ReadStats& CollectionReader::stats() const { return state_->stats; }
uint64_t CollectionReader::bytes_read() const { return state_->source.bytes_read(); }
uint64_t CollectionReader::file_size() const { return state_->size; }

Qrels read_qrels(const std::string& path, OnBadLine on_bad, ReadStats* stats) {
  ReadStats local;
  ReadStats& seen = stats ? *stats : local;
  Qrels qrels;
  size_t field_count = 0;  // 0 until the first data line fixes the format: 4 = TREC, 3 = BEIR
  bool first = true;
  for_each_line(path, on_bad, seen, [&](const std::string& line) {
    const bool is_first = std::exchange(first, false);
    const auto fields = split_whitespace(line);
    if (field_count == 0) {
      if (fields.size() != 3 && fields.size() != 4)
        throw BadLine{"expected 4 fields (TREC: qid iter docid rel) or 3 (BEIR: query-id corpus-id score), got " +
                      std::to_string(fields.size())};
      field_count = fields.size();
    } else if (fields.size() != field_count) {
      throw BadLine{"expected " + std::to_string(field_count) + " fields like the first line (" +
                    (field_count == 4 ? "TREC: qid iter docid rel" : "BEIR: query-id corpus-id score") + "), got " +
                    std::to_string(fields.size())};
    }
    const std::string_view grade_text = fields.back();
    const auto grade = parse_int(grade_text);
    if (!grade) {
      // BEIR's header "query-id corpus-id score"; any other first line whose grade is not a
      // number is a mistake (`q1 0 d1`: a TREC line missing its grade), not a header to skip.
      if (is_first && field_count == 3 && grade_text == "score") return false;
      throw BadLine{"the relevance grade " + shown(grade_text) + " is not an integer" +
                    (field_count == 3 ? std::string(" (3 fields are read as BEIR's query-id corpus-id score; a TREC "
                                                    "line has 4: qid 0 docid rel)")
                                      : std::string())};
    }
    const std::string_view query = fields[0];
    const std::string_view doc = field_count == 4 ? fields[2] : fields[1];
    auto& judged = qrels[std::string(query)];
    if (!judged.emplace(std::string(doc), *grade).second)
      throw BadLine{"duplicate judgement for query " + shown(query) + " and document " + shown(doc)};
    return true;
  });
  if (qrels.empty()) throw nothing_read(path, "judgements", seen);
  return qrels;
}

}  // namespace gradcache::retriever
