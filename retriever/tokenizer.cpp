#include "retriever/tokenizer.h"

// Only for sizes and ABI checks: no sentencepiece function is referenced at link time.
#include <sentencepiece_processor.h>

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <type_traits>
#include <unordered_map>
#include <utility>

// Why sentencepiece is loaded with dlopen rather than linked
// -----------------------------------------------------------
// Debian's libsentencepiece.so.0 contains its own copy of protobuf-lite (3.14) and exports its
// symbols; LibTorch pulls in the system libprotobuf.so.32 (3.21) through libonnx_proto. In one
// program the two copies interpose: with sentencepiece first, libprotobuf's start-up code runs
// sentencepiece's protobuf functions and crashes (SIGSEGV in ReflectionOps::FindInitialization-
// Errors before main); with libprotobuf first, sentencepiece fails protobuf's version check. So
// sentencepiece is opened with RTLD_LOCAL (its symbols stay out of the global scope, LibTorch
// keeps its protobuf) and RTLD_DEEPBIND (it resolves its own symbols first, keeping its
// protobuf), and its C++ entry points are called through dlsym. This relies on the Itanium C++
// ABI (a member function is a function taking `this` first; a class with a non-trivial
// destructor is returned through a hidden pointer) and on the 0.1.9x symbol names below; a
// missing symbol is reported when the library is loaded. Programs must not link -lsentencepiece
// (then the clash happens before main), and RTLD_DEEPBIND does not work under AddressSanitizer.

namespace gradcache::retriever {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// sentencepiece through dlopen

const char* const kProcessorLibrary = "libsentencepiece.so.0";
const char* const kTrainerLibrary = "libsentencepiece_train.so.0";

/// The ABI image of sentencepiece::util::Status: one pointer, null when OK. The user-provided
/// destructor makes it non-trivial for calls, so like the real class it is returned through a
/// hidden pointer.
class RawStatus {
 public:
  RawStatus() = default;
  RawStatus(const RawStatus&) = delete;
  RawStatus& operator=(const RawStatus&) = delete;
  ~RawStatus();
  bool ok() const { return rep_ == nullptr; }
  std::string message() const;

 private:
  void* rep_ = nullptr;
};
static_assert(sizeof(RawStatus) == sizeof(sentencepiece::util::Status), "sentencepiece::util::Status changed");

/// Same virtual functions, in the same order, as sentencepiece::SentenceIterator (so the same
/// vtable layout): the trainer calls them. Feeds the chosen texts straight from memory.
class TextIterator {
 public:
  TextIterator(const std::vector<std::string>& texts, const std::vector<size_t>& order)
      : texts_(texts), order_(order) {}
  virtual ~TextIterator() = default;
  virtual bool done() const { return position_ >= order_.size(); }
  virtual void Next() { ++position_; }
  virtual const std::string& value() const { return texts_[order_[position_]]; }
  virtual RawStatus status() const { return {}; }

 private:
  const std::vector<std::string>& texts_;
  const std::vector<size_t>& order_;
  size_t position_ = 0;
};

void* open_library(const char* name) {
  void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (handle == nullptr) {
    const char* reason = dlerror();
    throw std::runtime_error(std::string("cannot load the sentencepiece library ") + name + " (" +
                             (reason ? reason : "unknown error") +
                             "): install it (Debian/Ubuntu: apt-get install libsentencepiece0)");
  }
  return handle;
}

template <typename Function>
Function find_symbol(void* handle, const char* library, const char* name) {
  void* address = dlsym(handle, name);
  if (address == nullptr) {
    throw std::runtime_error(std::string("the sentencepiece library ") + library + " has no symbol " + name +
                             ": this tokenizer needs sentencepiece 0.1.9x (the libsentencepiece0 package of "
                             "Debian 12 / Ubuntu 22.04-24.04)");
  }
  return reinterpret_cast<Function>(address);
}

/// The entry points of libsentencepiece.so.0 that we use. Member functions take the object first.
struct ProcessorApi {
  void (*construct)(void* self);
  void (*destroy)(void* self);
  RawStatus (*load_from_serialized_proto)(void* self, std::string_view bytes);
  RawStatus (*encode)(const void* self, std::string_view text, std::vector<int>* ids);
  RawStatus (*decode)(const void* self, const std::vector<int>& ids, std::string* text);
  int (*piece_size)(const void* self);
  int (*pad_id)(const void* self);
  int (*unk_id)(const void* self);
  std::string (*serialized_model_proto)(const void* self);
  std::string (*status_to_string)(const RawStatus* self);
  void (*status_destroy)(RawStatus* self);

  /// Loaded on first use, then kept for the life of the process. Thread-safe.
  static const ProcessorApi& get() {
    static const ProcessorApi api = load();
    return api;
  }

 private:
  static ProcessorApi load() {
    void* lib = open_library(kProcessorLibrary);
    auto find = [lib](auto& function, const char* name) {
      function = find_symbol<std::remove_reference_t<decltype(function)>>(lib, kProcessorLibrary, name);
    };
    ProcessorApi api{};
    find(api.construct, "_ZN13sentencepiece22SentencePieceProcessorC1Ev");
    find(api.destroy, "_ZN13sentencepiece22SentencePieceProcessorD1Ev");
    find(api.load_from_serialized_proto,
         "_ZN13sentencepiece22SentencePieceProcessor23LoadFromSerializedProtoESt17basic_string_viewIcSt11char_"
         "traitsIcEE");
    find(api.encode,
         "_ZNK13sentencepiece22SentencePieceProcessor6EncodeESt17basic_string_viewIcSt11char_traitsIcEEPSt6vector"
         "IiSaIiEE");
    find(api.decode,
         "_ZNK13sentencepiece22SentencePieceProcessor6DecodeERKSt6vectorIiSaIiEEPNSt7__cxx1112basic_stringIcSt11"
         "char_traitsIcESaIcEEE");
    find(api.piece_size, "_ZNK13sentencepiece22SentencePieceProcessor12GetPieceSizeEv");
    find(api.pad_id, "_ZNK13sentencepiece22SentencePieceProcessor6pad_idEv");
    find(api.unk_id, "_ZNK13sentencepiece22SentencePieceProcessor6unk_idEv");
    find(api.serialized_model_proto, "_ZNK13sentencepiece22SentencePieceProcessor22serialized_model_protoB5cxx11Ev");
    find(api.status_to_string, "_ZNK13sentencepiece4util6Status8ToStringB5cxx11Ev");
    find(api.status_destroy, "_ZN13sentencepiece4util6StatusD1Ev");
    return api;
  }
};

/// SentencePieceTrainer::Train(const unordered_map<string, string>& kwargs, SentenceIterator*,
/// string* serialized_model_proto) from libsentencepiece_train.so.0.
using TrainFunction = RawStatus (*)(const std::unordered_map<std::string, std::string>& settings,
                                    TextIterator* sentences, std::string* model_bytes);

TrainFunction trainer_entry_point() {
  static const TrainFunction train = [] {
    ProcessorApi::get();  // the trainer needs libsentencepiece.so.0 in the same private scope
    void* lib = open_library(kTrainerLibrary);
    return find_symbol<TrainFunction>(
        lib, kTrainerLibrary,
        "_ZN13sentencepiece20SentencePieceTrainer5TrainERKSt13unordered_mapINSt7__cxx1112basic_stringIcSt11char_"
        "traitsIcESaIcEEES7_St4hashIS7_ESt8equal_toIS7_ESaISt4pairIKS7_S7_EEEPNS_16SentenceIteratorEPS7_");
  }();
  return train;
}

RawStatus::~RawStatus() {
  if (rep_ != nullptr) ProcessorApi::get().status_destroy(this);
}

std::string RawStatus::message() const { return ok() ? "OK" : ProcessorApi::get().status_to_string(this); }

// ---------------------------------------------------------------------------------------------
// Training and loading

/// splitmix64: a tiny generator with a fixed, platform-independent sequence (unlike
/// std::uniform_int_distribution, whose output differs between standard libraries).
uint64_t next_random(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// Indices of the non-empty texts; if there are more than `cap`, a fixed-seed random sample of
/// `cap` of them, kept in corpus order. We sample here rather than through sentencepiece's
/// input_sentence_size because its generator is a process-wide thread_local that is seeded once,
/// so a second training in the same thread would draw a different sample.
std::vector<size_t> choose_training_texts(const std::vector<std::string>& texts, size_t cap) {
  std::vector<size_t> order;
  order.reserve(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    if (!texts[i].empty()) order.push_back(i);
  }
  if (order.size() <= cap) return order;
  uint64_t state = 0x5EED5EED5EED5EEDULL;
  for (size_t i = 0; i < cap; ++i) {  // partial Fisher-Yates shuffle
    const uint64_t remaining = order.size() - i;
    const auto offset = static_cast<uint64_t>((static_cast<unsigned __int128>(next_random(state)) * remaining) >> 64);
    std::swap(order[i], order[i + offset]);
  }
  order.resize(cap);
  std::sort(order.begin(), order.end());
  return order;
}

/// Turns sentencepiece's vocabulary-size failures into errors that say what to change.
[[noreturn]] void throw_training_error(const std::string& message, const TokenizerTrainOptions& options) {
  const std::string vocab = std::to_string(options.vocab_size);
  const std::string too_high = "Vocabulary size too high";
  if (message.find(too_high) != std::string::npos) {
    // sentencepiece says "... Please set it to a value <= N."
    std::string limit;
    const size_t at = message.find("<= ");
    if (at != std::string::npos) {
      for (size_t i = at + 3; i < message.size() && std::isdigit(static_cast<unsigned char>(message[i])); ++i) {
        limit += message[i];
      }
    }
    throw std::invalid_argument("tokenizer training: the training texts are too small for a vocabulary of " + vocab +
                                " pieces (" + too_high + (limit.empty() ? "" : "; at most " + limit + " fit") +
                                "): pass a smaller --vocab-size" + (limit.empty() ? "" : " (<= " + limit + ")") +
                                " or train on more text");
  }
  if (message.find("smaller than required_chars") != std::string::npos) {
    throw std::invalid_argument("tokenizer training: vocabulary size " + vocab +
                                " is smaller than the number of distinct characters the texts need (" + message +
                                "): pass a larger --vocab-size");
  }
  throw std::runtime_error("tokenizer training failed (" + options.model_type + ", vocab size " + vocab +
                           "): " + message);
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  const fs::path target(path);
  std::error_code error;
  if (target.has_parent_path()) {
    fs::create_directories(target.parent_path(), error);
    if (error) {
      throw std::runtime_error("cannot create the directory '" + target.parent_path().string() +
                               "' for the tokenizer model: " + error.message());
    }
  }
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      fs::remove(temporary, error);
      throw std::runtime_error("cannot write the tokenizer model to '" + temporary +
                               "': check that the directory is writable and the disk is not full");
    }
  }
  fs::rename(temporary, target, error);
  if (error) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    throw std::runtime_error("cannot rename '" + temporary + "' to '" + path + "': " + error.message());
  }
}

}  // namespace

/// Owns one sentencepiece::SentencePieceProcessor, built and used through ProcessorApi.
class Tokenizer::Model {
 public:
  /// Parses serialized model proto bytes; `source` names them in errors ("'path'", ...).
  Model(const std::string& bytes, const std::string& source) : api_(ProcessorApi::get()) {
    if (bytes.empty()) {
      throw std::runtime_error("tokenizer model " + source +
                               " is empty: retrain the tokenizer or pass a valid .model file");
    }
    processor_ = ::operator new(sizeof(sentencepiece::SentencePieceProcessor));
    api_.construct(processor_);
    try {
      check_loaded(bytes, source);
    } catch (...) {
      release();  // the destructor does not run when the constructor throws
      throw;
    }
  }
  ~Model() { release(); }
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  std::vector<int> encode(std::string_view text) const {
    std::vector<int> ids;
    const RawStatus status = api_.encode(processor_, text, &ids);
    if (!status.ok()) throw std::runtime_error("tokenizer: cannot encode text: " + status.message());
    return ids;
  }
  std::string decode(const std::vector<int>& ids) const {
    std::string text;
    const RawStatus status = api_.decode(processor_, ids, &text);
    if (!status.ok()) throw std::runtime_error("tokenizer: cannot decode ids: " + status.message());
    return text;
  }
  int piece_size() const { return api_.piece_size(processor_); }
  std::string serialized() const { return api_.serialized_model_proto(processor_); }

 private:
  void check_loaded(const std::string& bytes, const std::string& source) {
    const RawStatus status = api_.load_from_serialized_proto(processor_, bytes);
    if (!status.ok()) {
      throw std::runtime_error("tokenizer model " + source + " is not a valid sentencepiece model (" +
                               status.message() + "); it may be truncated or another kind of file: retrain the "
                               "tokenizer or pass the right .model file");
    }
    // Batching pads with id 0 and the encoders rely on it; a model trained elsewhere (sentencepiece's
    // defaults are unk=0, bos=1, eos=2) would silently mix padding with real tokens.
    const int pad = api_.pad_id(processor_), unknown = api_.unk_id(processor_);
    if (pad != Tokenizer::pad_id || unknown != Tokenizer::unk_id) {
      throw std::runtime_error("tokenizer model " + source + " has padding id " + std::to_string(pad) +
                               " and unknown id " + std::to_string(unknown) +
                               ", but 0 and 1 are required: use a tokenizer trained by this tool (pad_id=0, unk_id=1)");
    }
  }
  void release() {
    api_.destroy(processor_);
    ::operator delete(processor_);
    processor_ = nullptr;
  }

  const ProcessorApi& api_;
  void* processor_ = nullptr;  ///< a sentencepiece::SentencePieceProcessor
};

Tokenizer::Tokenizer(std::shared_ptr<const Model> model) : model_(std::move(model)) {}

Tokenizer Tokenizer::train(const std::vector<std::string>& texts, const TokenizerTrainOptions& options,
                           const std::string& model_path) {
  if (options.model_type != "unigram" && options.model_type != "bpe") {
    throw std::invalid_argument("tokenizer model type '" + options.model_type +
                                "' is not supported: use unigram or bpe");
  }
  if (options.vocab_size < 3) {
    throw std::invalid_argument("tokenizer vocabulary size must be at least 3 (padding, unknown and one piece), got " +
                                std::to_string(options.vocab_size));
  }
  if (options.num_threads < 1) {
    throw std::invalid_argument("tokenizer training threads must be >= 1, got " + std::to_string(options.num_threads));
  }
  if (options.max_sentences < 1) {
    throw std::invalid_argument("tokenizer max_sentences must be >= 1");
  }
  if (model_path.empty()) {
    throw std::invalid_argument("tokenizer training needs a model path to write to");
  }
  const std::vector<size_t> order = choose_training_texts(texts, options.max_sentences);
  if (order.empty()) {
    throw std::invalid_argument("tokenizer training: all " + std::to_string(texts.size()) +
                                " training texts are empty; check the training data");
  }

  const std::unordered_map<std::string, std::string> settings = {
      {"model_type", options.model_type},
      {"vocab_size", std::to_string(options.vocab_size)},
      {"num_threads", std::to_string(options.num_threads)},
      {"pad_id", "0"},
      {"unk_id", "1"},
      {"bos_id", "-1"},
      {"eos_id", "-1"},
      // NFKC plus case folding: the encoders are small and trained from scratch, so spending
      // vocabulary and training signal on "The" vs "the" buys little for retrieval.
      {"normalization_rule_name", "nmt_nfkc_cf"},
      // The sample is already drawn (choose_training_texts); keep sentencepiece from redrawing.
      {"input_sentence_size", "0"},
      {"shuffle_input_sentence", "false"},
      // Errors come back as a status; progress logging would flood the CLI's output.
      {"minloglevel", "1"},
  };
  const TrainFunction train_model = trainer_entry_point();
  TextIterator iterator(texts, order);
  std::string model_bytes;
  {
    const RawStatus status = train_model(settings, &iterator, &model_bytes);
    if (!status.ok()) throw_training_error(status.message(), options);
  }
  auto model = std::make_shared<const Model>(model_bytes, "(just trained)");
  write_file_atomically(model_path, model_bytes);
  return Tokenizer(std::move(model));
}

Tokenizer Tokenizer::load(const std::string& model_path) {
  std::error_code error;
  if (!fs::exists(model_path, error)) {
    throw std::runtime_error("tokenizer model '" + model_path + "' does not exist: check the path");
  }
  std::ifstream in(model_path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open tokenizer model '" + model_path + "': check its permissions");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) throw std::runtime_error("cannot read tokenizer model '" + model_path + "'");
  return Tokenizer(std::make_shared<const Model>(bytes.str(), "'" + model_path + "'"));
}

Tokenizer Tokenizer::from_serialized(const std::string& bytes) {
  return Tokenizer(std::make_shared<const Model>(bytes, "(serialized bytes)"));
}

std::string Tokenizer::serialized() const { return model_->serialized(); }

std::vector<int64_t> Tokenizer::encode(std::string_view text, size_t max_len) const {
  if (text.empty()) return {};
  std::vector<int> ids = model_->encode(text);
  if (ids.empty()) return {unk_id};  // text that normalises to nothing still needs one token
  if (max_len > 0 && ids.size() > max_len) ids.resize(max_len);
  return std::vector<int64_t>(ids.begin(), ids.end());
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids) const {
  const int64_t size = vocab_size();
  std::vector<int> pieces;
  pieces.reserve(ids.size());
  for (int64_t id : ids) {
    if (id < 0 || id >= size) {
      throw std::out_of_range("tokenizer: id " + std::to_string(id) + " is outside the vocabulary [0, " +
                              std::to_string(size) + ")");
    }
    if (id != pad_id) pieces.push_back(static_cast<int>(id));
  }
  return model_->decode(pieces);
}

int64_t Tokenizer::vocab_size() const { return model_->piece_size(); }

}  // namespace gradcache::retriever
