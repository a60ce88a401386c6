#include "retriever/data/wordnet.h"

#include "files/atomic_file.h"
#include "retriever/data/line_source.h"
#include "retriever/files/fnv1a.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace gradcache::retriever {
namespace {

using lines::trim;

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool all_of_chars(std::string_view s, const char* allowed) {
  return !s.empty() && s.find_first_not_of(allowed) == std::string_view::npos;
}

// The whole file at once: the four files are ~22 MB together, and parsing in memory keeps loading
// well under a second.
std::string read_data_file(const std::string& path) {
  if (const auto problem = files::regular_file_problem(path); !problem.empty()) throw DataError(path, 0, "cannot read: " + problem);
  std::ifstream file(path, std::ios::binary);
  if (!file)
    throw DataError(path, 0,
                    std::string("cannot open: ") + std::strerror(errno) +
                        "; install the Debian package wordnet-base (apt-get install wordnet-base), or set the "
                        "WordNet directory to one holding WordNet 3.0's data.noun, data.verb, data.adj, data.adv");
  file.seekg(0, std::ios::end);
  std::string contents(static_cast<size_t>(file.tellg()), '\0');
  file.seekg(0);
  file.read(contents.data(), static_cast<std::streamsize>(contents.size()));
  if (!file) throw DataError(path, 0, std::string("read error: ") + std::strerror(errno));
  return contents;
}

// Appends a word as written to `out`: underscores for spaces, and in data.adj a syntactic marker
// glued to the end ("galore(ip)", "trompe-l'oeil(a)") dropped, as it is not part of the word.
void append_word(std::string_view word, std::string& out) {
  for (std::string_view marker : {"(a)", "(p)", "(ip)"}) {
    if (ends_with(word, marker)) {
      word.remove_suffix(marker.size());
      break;
    }
  }
  for (const char c : word) out += c == '_' ? ' ' : c;
}

// Cuts an example sentence glued to the end of a definition part: a quoted segment that ends
// the part (`restrict or confine, "I limit you to two visits"`, `necessary:"long on brains"`,
// `reach a goal, e.g., "make the first team"`), with the punctuation and connector words that
// introduce it. Examples matter because they usually contain the very words to be retrieved.
std::string_view cut_trailing_example(std::string_view part) {
  if (part.size() < 2 || part.back() != '"') return part;
  const size_t open = part.find_last_of('"', part.size() - 2);
  if (open == std::string_view::npos) return part;
  const std::string_view before = trim(part.substr(0, open));
  // "especially in the phrase \"make strides\"" names a phrase, it is no example.
  if (ends_with(before, "phrase") || ends_with(before, "expression")) return part;
  part = before;
  for (bool changed = true; changed;) {
    changed = false;
    for (std::string_view connector : {",", ":", "e.g.", "i.e.", "as in"}) {
      if (ends_with(part, connector)) {
        part = trim(part.substr(0, part.size() - connector.size()));
        changed = true;
      }
    }
  }
  return part;
}

// The definition of a gloss "definition; definition; \"example\"; \"example\"": the ";"-separated
// parts before the first one that starts with a double quote, each without a trailing example,
// joined by "; ".
std::string definition_of(std::string_view gloss) {
  std::string definition;
  size_t start = 0;
  while (start <= gloss.size()) {
    size_t end = gloss.find(';', start);
    if (end == std::string_view::npos) end = gloss.size();
    const std::string_view raw = trim(gloss.substr(start, end - start));
    start = end + 1;
    if (starts_with(raw, "\"")) break;
    const std::string_view part = cut_trailing_example(raw);
    if (!part.empty()) {
      if (!definition.empty()) definition += "; ";
      definition += part;
    }
    if (part.size() != raw.size()) break;  // examples follow
  }
  return definition;
}

// The space-separated tokens of a line, one at a time: only the first few of a synset line are
// needed, not its dozens of pointers.
class Tokens {
 public:
  explicit Tokens(std::string_view text) : text_(text) {}
  // The next token, or an empty view at the end.
  std::string_view next() {
    const size_t begin = text_.find_first_not_of(' ', pos_);
    if (begin == std::string_view::npos) return {};
    pos_ = std::min(text_.find(' ', begin), text_.size());
    return text_.substr(begin, pos_ - begin);
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

struct Synset {
  std::string_view offset;  // into the parsed line
  std::string key;          // pos letter + offset, e.g. "n00001740"
  std::string passage;      // "word, word, ..."
  std::string definition;   // may be empty
};

// Parses one synset line "offset lex_filenum ss_type w_cnt word lex_id [...] p_cnt [...] | gloss"
// of the data file for `pos`; throws a message (without location) when it is malformed.
Synset parse_synset(std::string_view line, char pos) {
  const size_t bar = line.find(" | ");
  if (bar == std::string_view::npos) throw std::runtime_error("no \" | \" before the gloss");
  Tokens tokens(line.substr(0, bar));
  const std::string_view offset = tokens.next(), lex_filenum = tokens.next(), ss_type = tokens.next(),
                         w_cnt = tokens.next();
  if (w_cnt.empty()) throw std::runtime_error("too few fields before the gloss");
  if (offset.size() != 8 || !all_of_chars(offset, "0123456789"))
    throw std::runtime_error("synset_offset '" + std::string(offset) + "' is not 8 digits");
  if (!all_of_chars(lex_filenum, "0123456789"))
    throw std::runtime_error("lex_filenum '" + std::string(lex_filenum) + "' is not a number");
  const bool type_ok = ss_type.size() == 1 && (ss_type[0] == pos || (pos == 'a' && ss_type[0] == 's'));
  if (!type_ok)
    throw std::runtime_error("ss_type '" + std::string(ss_type) + "' does not belong in the data file for '" +
                             std::string(1, pos) + "'");
  if (w_cnt.size() != 2 || !all_of_chars(w_cnt, "0123456789abcdefABCDEF"))
    throw std::runtime_error("w_cnt '" + std::string(w_cnt) + "' is not a 2-digit hex number");
  const size_t words = std::stoul(std::string(w_cnt), nullptr, 16);
  if (words == 0) throw std::runtime_error("w_cnt is 0");

  Synset synset;
  synset.offset = offset;
  synset.key.reserve(1 + offset.size());
  synset.key += pos;
  synset.key += offset;
  for (size_t i = 0; i < words; ++i) {
    const std::string_view word = tokens.next(), lex_id = tokens.next();
    if (lex_id.empty())
      throw std::runtime_error("w_cnt says " + std::to_string(words) + " words but the line has fewer");
    if (i > 0) synset.passage += ", ";
    const size_t before = synset.passage.size();
    append_word(word, synset.passage);
    if (synset.passage.size() == before) throw std::runtime_error("word " + std::to_string(i + 1) + " is empty");
  }
  synset.definition = definition_of(line.substr(bar + 3));
  return synset;
}

void check_options(const WordNetOptions& options) {
  auto in_range = [](int percent) { return percent >= 0 && percent <= 100; };
  if (!in_range(options.train_percent) || !in_range(options.dev_percent) ||
      options.train_percent + options.dev_percent > 100)
    throw std::invalid_argument("WordNet split: train_percent (" + std::to_string(options.train_percent) +
                                ") and dev_percent (" + std::to_string(options.dev_percent) +
                                ") must each be in 0..100 and sum to at most 100; test gets the rest");
}

}  // namespace

int wordnet_bucket(const std::string& key) { return static_cast<int>(fnv1a64(key) % 100); }

RetrievalData load_wordnet(const WordNetOptions& options) {
  check_options(options);
  RetrievalData data;
  std::unordered_map<std::string, size_t> passage_ids;  // passage text -> corpus position
  passage_ids.reserve(1 << 17);
  data.corpus.ids.reserve(1 << 17);
  data.corpus.texts.reserve(1 << 17);
  data.corpus.index.reserve(1 << 17);

  const std::pair<const char*, char> files[] = {{"data.noun", 'n'}, {"data.verb", 'v'}, {"data.adj", 'a'}, {"data.adv", 'r'}};
  for (const auto& [name, pos] : files) {
    const std::string path = (std::filesystem::path(options.dir) / name).string();
    const std::string contents = read_data_file(path);
    const std::string_view text = contents;
    size_t line_number = 0;
    std::string_view previous_offset;  // offsets are byte positions, so they increase down the file
    for (size_t start = 0; start < text.size();) {
      size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      std::string_view line = text.substr(start, end - start);
      start = end + 1;
      ++line_number;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (starts_with(line, "  ") || trim(line).empty()) continue;  // license header

      Synset synset;
      try {
        synset = parse_synset(line, pos);
      } catch (const std::exception& e) {
        throw DataError(path, line_number, std::string("malformed synset line: ") + e.what());
      }
      // Equal-width decimal strings compare like numbers. A repeated offset would also repeat a query id.
      if (synset.offset <= previous_offset)
        throw DataError(path, line_number,
                        "malformed data file: synset offset " + std::string(synset.offset) +
                            " does not increase (previous synset: " + std::string(previous_offset) + ")");
      previous_offset = synset.offset;
      if (synset.definition.empty()) continue;

      const auto [it, is_new] = passage_ids.try_emplace(synset.passage, data.corpus.size());
      if (is_new) data.corpus.add("p" + std::to_string(data.corpus.size()), synset.passage);
      const std::string& passage_id = data.corpus.ids[it->second];

      const int bucket = wordnet_bucket(synset.key);
      if (bucket < options.train_percent) {
        TrainExample example;
        example.query = std::move(synset.definition);
        example.positives = {std::move(synset.passage)};
        example.query_id = synset.key;
        example.positive_ids = {passage_id};
        data.train.push_back(std::move(example));
      } else if (bucket < options.train_percent + options.dev_percent) {
        data.dev_qrels[synset.key][passage_id] = 1;
        data.dev_queries.add(std::move(synset.key), std::move(synset.definition));
      } else {
        data.test_qrels[synset.key][passage_id] = 1;
        data.test_queries.add(std::move(synset.key), std::move(synset.definition));
      }
    }
  }
  return data;
}

}  // namespace gradcache::retriever
