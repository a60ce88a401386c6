#include "retriever/model/tokenizer.h"

#include "files/atomic_file.h"
#include "retriever/launch/stop_signal.h"
#include "retriever/model/sentencepiece_model_check.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

// How sentencepiece is loaded, and why
// ------------------------------------
// Debian's libsentencepiece.so.0 contains its own copy of protobuf-lite (3.14) and exports its
// symbols; LibTorch pulls in the system libprotobuf.so.32 (3.21) through libonnx_proto. In one
// symbol scope the two copies interpose: with sentencepiece first, libprotobuf's start-up code
// runs sentencepiece's protobuf functions and crashes (SIGSEGV in ReflectionOps::Find-
// InitializationErrors before main); with libprotobuf first, sentencepiece fails protobuf's
// version check ("compiled against 3.14.0 ... not compatible with the installed version
// 3.21.12"), which is what happens if the library is dlopen'ed RTLD_LOCAL after LibTorch.
//
// sentencepiece used to be dlopen'ed with RTLD_DEEPBIND (it resolves its own symbols first).
// That had two faults: AddressSanitizer refuses RTLD_DEEPBIND, and any sentencepiece log line
// crashed the program (status 139, nothing printed; e.g. its warning about a training text
// longer than max_sentence_length): the executable holds copy-relocated std::cerr, and a
// DEEPBIND library binds to libstdc++'s own, never initialised, copy.
//
// Now a small shim (model/sentencepiece_shim.cpp: a plain C interface, linked normally against
// libsentencepiece and libsentencepiece_train) is carried inside the program as bytes, written
// to an anonymous memory file and loaded with dlmopen(LM_ID_NEWLM): a link-map namespace of its
// own, where sentencepiece, its protobuf, and its own libstdc++ and libc see no LibTorch at all.
// Because that namespace has its own heap and C++ runtime, only C types cross the boundary (the
// shim copies results out through callbacks) and exceptions are caught inside the shim. The
// shim also captures sentencepiece's std::cerr, so nothing it logs reaches the terminal. This
// works under AddressSanitizer (the shim is not instrumented; nothing of the sanitizer runtime
// is needed in its namespace) and costs one dlmopen per process. Programs must still not link
// -lsentencepiece (then the clash happens before main).

// The shim's bytes (generated from the gradcache_sentencepiece_shim target, see
// cmake/embed_binary.cmake).
extern const unsigned char gradcache_sentencepiece_shim[];
extern const std::size_t gradcache_sentencepiece_shim_size;

namespace gradcache::retriever {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// sentencepiece through the shim

extern "C" {
typedef void (*Sink)(void* context, const void* data, size_t size);
}

/// Appends what the shim hands over to a std::string of ours (the sink for bytes and messages).
extern "C" void append_to_string(void* context, const void* data, size_t size) {
  static_cast<std::string*>(context)->append(static_cast<const char*>(data), size);
}

/// Copies an array of int handed over by the shim into a std::vector<int> of ours.
extern "C" void assign_ids(void* context, const void* data, size_t size) {
  auto* ids = static_cast<std::vector<int>*>(context);
  const auto* first = static_cast<const int*>(data);
  ids->assign(first, first + size / sizeof(int));
}

/// The shim's entry points (model/sentencepiece_shim.cpp documents them).
struct ShimApi {
  int (*train)(const char* const* keys, const char* const* values, size_t settings_count, const char* const* texts,
               const size_t* sizes, size_t text_count, Sink model, void* model_context, Sink error,
               void* error_context);
  void* (*load)(const char* bytes, size_t size, Sink error, void* error_context);
  void (*free)(void* handle);
  int (*encode)(const void* handle, const char* text, size_t size, Sink ids, void* ids_context, Sink error,
                void* error_context);
  int (*decode)(const void* handle, const int* ids, size_t count, Sink text, void* text_context, Sink error,
                void* error_context);
  int (*piece_size)(const void* handle);
  int (*pad_id)(const void* handle);
  int (*unk_id)(const void* handle);
  int (*serialized)(const void* handle, Sink bytes, void* bytes_context, Sink error, void* error_context);

  /// Loaded on first use, then kept for the life of the process. Thread-safe.
  static const ShimApi& get() {
    static const ShimApi api = load_shim();
    return api;
  }

 private:
  [[noreturn]] static void fail(const std::string& what) {
    throw std::runtime_error("cannot load sentencepiece: " + what +
                             "; the tokenizer needs libsentencepiece0 0.1.9x (Debian 12 / Ubuntu 22.04-24.04: "
                             "apt-get install libsentencepiece0)");
  }

  static ShimApi load_shim() {
    // An anonymous memory file holding the shim: nothing to install or find next to the program.
    const int fd = memfd_create("gradcache-sentencepiece-shim", MFD_CLOEXEC);
    if (fd < 0) fail(std::string("memfd_create failed (") + std::strerror(errno) + ")");
    if (!files::write_all(fd, reinterpret_cast<const char*>(gradcache_sentencepiece_shim),
                   gradcache_sentencepiece_shim_size)) {
      const int error = errno;
      close(fd);
      fail(std::string("cannot write the shim to a memory file (") + std::strerror(error) + ")");
    }
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    void* lib = dlmopen(LM_ID_NEWLM, path.c_str(), RTLD_NOW | RTLD_LOCAL);
    close(fd);  // the mapping stays
    if (lib == nullptr) {
      const char* reason = dlerror();
      fail(std::string("dlmopen of the shim failed (") + (reason ? reason : "unknown error") + ")");
    }
    auto find = [lib](auto& function, const char* name) {
      void* address = dlsym(lib, name);
      if (address == nullptr) fail(std::string("the shim has no symbol ") + name);
      function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(address);
    };
    int (*version)() = nullptr;
    find(version, "gcsp_version");
    if (version() != 1) fail("the shim has interface version " + std::to_string(version()) + ", expected 1");
    ShimApi api{};
    find(api.train, "gcsp_train");
    find(api.load, "gcsp_load");
    find(api.free, "gcsp_free");
    find(api.encode, "gcsp_encode");
    find(api.decode, "gcsp_decode");
    find(api.piece_size, "gcsp_piece_size");
    find(api.pad_id, "gcsp_pad_id");
    find(api.unk_id, "gcsp_unk_id");
    find(api.serialized, "gcsp_serialized");
    return api;
  }
};

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

/// sentencepiece's default max_sentence_length: longer training texts are cut to it.
constexpr size_t kMaxSentenceBytes = 4192;

/// The length of the longest prefix of `text` of at most `limit` bytes that does not end inside
/// a UTF-8 sequence (a cut never lands on a continuation byte 10xxxxxx).
size_t utf8_prefix_length(std::string_view text, size_t limit) {
  if (text.size() <= limit) return text.size();
  size_t end = limit;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return end;
}

/// sentencepiece's largest vocabulary for the texts, from its "Vocabulary size too high (8000).
/// Please set it to a value <= 4421." (0 when `message` is another failure).
int vocab_limit(const std::string& message) {
  if (message.find("Vocabulary size too high") == std::string::npos) return 0;
  const size_t at = message.find("<= ");
  if (at == std::string::npos) return 0;
  int limit = 0;
  for (size_t i = at + 3; i < message.size() && std::isdigit(static_cast<unsigned char>(message[i])); ++i) {
    if (limit > 100000000) return 0;  // no such vocabulary: not a number to trust
    limit = 10 * limit + (message[i] - '0');
  }
  return limit;
}

/// Turns sentencepiece's vocabulary-size failures into errors that say what to change.
[[noreturn]] void throw_training_error(const std::string& message, const TokenizerTrainOptions& options) {
  const std::string vocab = std::to_string(options.vocab_size);
  if (message.find("Vocabulary size too high") != std::string::npos) {
    const int limit = vocab_limit(message);
    const std::string at_most = limit > 0 ? std::to_string(limit) : "";
    throw std::invalid_argument("tokenizer training: the training texts are too small for a vocabulary of " + vocab +
                                " pieces (Vocabulary size too high" + (limit > 0 ? "; at most " + at_most + " fit" : "") +
                                "): pass a smaller --vocab-size" + (limit > 0 ? " (<= " + at_most + ")" : "") +
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

// The run directory's writer (files/atomic_file.h): fsync before the rename, and an error that names the
// file and the system's reason ("No space left on device") rather than a guess.
void write_model_file(const std::string& path, const std::string& bytes) {
  const fs::path target(path);
  std::error_code error;
  if (target.has_parent_path()) {
    fs::create_directories(target.parent_path(), error);
    if (error) {
      throw std::runtime_error("cannot create the directory '" + target.parent_path().string() +
                               "' for the tokenizer model: " + error.message());
    }
  }
  try {
    files::write_file_atomic(path, bytes);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string("cannot save the tokenizer model: ") + e.what());
  }
}

/// One sentencepiece training run on texts[order] with `options`: the model's bytes, or false
/// and sentencepiece's message in `error`.
bool train_model_bytes(const std::vector<std::string>& texts, const std::vector<size_t>& order,
                       const TokenizerTrainOptions& options, std::string* model_bytes, std::string* error) {
  const std::vector<std::pair<std::string, std::string>> settings = {
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
      // The texts are cut to this length above (sentencepiece would skip longer ones).
      {"max_sentence_length", std::to_string(kMaxSentenceBytes)},
      // Errors come back as a status, and the shim keeps whatever is logged off the terminal;
      // below warnings there is only progress, which costs time to format.
      {"minloglevel", "1"},
  };
  // Texts longer than max_sentence_length bytes are skipped by sentencepiece, so a long document
  // would not be learned from at all: its first kMaxSentenceBytes bytes are used instead (cut on
  // a character boundary, without copying).
  std::vector<const char*> text_data;
  std::vector<size_t> text_sizes;
  text_data.reserve(order.size());
  text_sizes.reserve(order.size());
  for (const size_t i : order) {
    text_data.push_back(texts[i].data());
    text_sizes.push_back(utf8_prefix_length(texts[i], kMaxSentenceBytes));
  }
  std::vector<const char*> keys, values;
  for (const auto& [key, value] : settings) {
    keys.push_back(key.c_str());
    values.push_back(value.c_str());
  }
  return ShimApi::get().train(keys.data(), values.data(), keys.size(), text_data.data(), text_sizes.data(),
                              text_data.size(), append_to_string, model_bytes, append_to_string, error);
}

}  // namespace

/// Owns one sentencepiece::SentencePieceProcessor in the shim's namespace.
class Tokenizer::Model {
 public:
  /// Parses serialized model proto bytes; `source` names them in errors ("'path'", ...).
  Model(const std::string& bytes, const std::string& source) : api_(ShimApi::get()) {
    if (bytes.empty()) {
      throw std::runtime_error("tokenizer model " + source +
                               " is empty: retrain the tokenizer or pass a valid .model file");
    }
    std::string error;
    try {
      check_sentencepiece_normalizers(bytes);  // what sentencepiece would read out of bounds
    } catch (const std::runtime_error& broken) {
      error = broken.what();
    }
    if (error.empty()) processor_ = api_.load(bytes.data(), bytes.size(), append_to_string, &error);
    if (processor_ == nullptr) {
      throw std::runtime_error("tokenizer model " + source + " is not a valid sentencepiece model (" + error +
                               "); it may be truncated or another kind of file: retrain the "
                               "tokenizer or pass the right .model file");
    }
    // Batching pads with id 0 and the encoders rely on it; a model trained elsewhere (sentencepiece's
    // defaults are unk=0, bos=1, eos=2) would silently mix padding with real tokens.
    const int pad = api_.pad_id(processor_), unknown = api_.unk_id(processor_);
    if (pad != Tokenizer::pad_id || unknown != Tokenizer::unk_id) {
      api_.free(processor_);  // the destructor does not run when the constructor throws
      throw std::runtime_error("tokenizer model " + source + " has padding id " + std::to_string(pad) +
                               " and unknown id " + std::to_string(unknown) +
                               ", but 0 and 1 are required: use a tokenizer trained by this tool (pad_id=0, unk_id=1)");
    }
  }
  ~Model() { api_.free(processor_); }
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  std::vector<int> encode(std::string_view text) const {
    std::vector<int> ids;
    std::string error;
    if (!api_.encode(processor_, text.data(), text.size(), assign_ids, &ids, append_to_string, &error))
      throw std::runtime_error("tokenizer: cannot encode text: " + error);
    return ids;
  }
  std::string decode(const std::vector<int>& ids) const {
    std::string text, error;
    if (!api_.decode(processor_, ids.data(), ids.size(), append_to_string, &text, append_to_string, &error))
      throw std::runtime_error("tokenizer: cannot decode ids: " + error);
    return text;
  }
  int piece_size() const { return api_.piece_size(processor_); }
  std::string serialized() const {
    std::string bytes, error;
    if (!api_.serialized(processor_, append_to_string, &bytes, append_to_string, &error))
      throw std::runtime_error("tokenizer: cannot serialize the model: " + error);
    return bytes;
  }

 private:
  const ShimApi& api_;
  void* processor_ = nullptr;  ///< a sentencepiece::SentencePieceProcessor of the shim's namespace
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

  // One training run, in a child process that a signal can end when options.stop is given.
  auto train_once = [&](const TokenizerTrainOptions& settings, std::string* model_bytes, std::string* error) {
    const std::string answer = run_stoppable(
        [&] {
          std::string bytes, message;
          const bool ok = train_model_bytes(texts, order, settings, &bytes, &message);
          return (ok ? "1" : "0") + (ok ? bytes : message);
        },
        settings.stop, "tokenizer training");
    (answer[0] == '1' ? *model_bytes : *error) = answer.substr(1);
    return answer[0] == '1';
  };
  std::string model_bytes, error;
  if (!train_once(options, &model_bytes, &error)) {
    const int limit = vocab_limit(error);
    if (!options.fit_vocab_size || limit < 3 || limit >= options.vocab_size) throw_training_error(error, options);
    TokenizerTrainOptions fitted = options;  // the most pieces these texts support
    fitted.vocab_size = limit;
    model_bytes.clear();
    error.clear();
    if (!train_once(fitted, &model_bytes, &error)) throw_training_error(error, fitted);
  }
  auto model = std::make_shared<const Model>(model_bytes, "(just trained)");
  write_model_file(model_path, model_bytes);
  return Tokenizer(std::move(model));
}

Tokenizer Tokenizer::load(const std::string& model_path) {
  std::error_code error;
  if (!fs::exists(model_path, error)) {
    throw std::runtime_error("tokenizer model '" + model_path + "' does not exist: check the path");
  }
  if (fs::is_directory(model_path, error)) {
    throw std::runtime_error("tokenizer model '" + model_path + "' is a directory: give its .model file (a run's " +
                             "tokenizer.model); a Hugging Face directory's tokenizer comes with --model-dir");
  }
  if (const auto problem = files::regular_file_problem(model_path); !problem.empty())
    throw std::runtime_error("tokenizer model '" + model_path + "': " + problem);
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

Tokenizer Tokenizer::huggingface(std::shared_ptr<const hf::Tokenizer> tokenizer, bool lower_case,
                                 size_t max_seq_length) {
  if (!tokenizer) throw std::invalid_argument("Tokenizer::huggingface: no tokenizer");
  if (max_seq_length < tokenizer->num_special_tokens() + 1) {
    throw std::invalid_argument("tokenizer " + tokenizer->name() + ": max_seq_length " +
                                std::to_string(max_seq_length) + " leaves no room for a token of text");
  }
  Tokenizer t(nullptr);
  t.hf_ = std::move(tokenizer);
  t.lower_case_ = lower_case;
  t.max_seq_length_ = max_seq_length;
  return t;
}

std::string Tokenizer::serialized() const { return hf_ ? hf_->to_json() : model_->serialized(); }

std::vector<int64_t> Tokenizer::encode(std::string_view text, size_t max_len) const {
  if (hf_) {  // the special tokens always stay: at least them and one piece
    const size_t cap = max_len == 0 ? max_seq_length_ : std::min(max_seq_length_, max_len);
    const size_t len = std::max(cap, hf_->num_special_tokens() + 1);
    return lower_case_ ? hf_->encode(hf::lower_case(text), len) : hf_->encode(text, len);
  }
  if (text.empty()) return {};
  std::vector<int> ids = model_->encode(text);
  if (ids.empty()) return {unk_id};  // text that normalises to nothing still needs one token
  if (max_len > 0 && ids.size() > max_len) ids.resize(max_len);
  return std::vector<int64_t>(ids.begin(), ids.end());
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids) const {
  if (hf_) throw std::logic_error("tokenizer: decode() is for sentencepiece tokenizers");
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

int64_t Tokenizer::vocab_size() const { return hf_ ? hf_->vocab_size() : model_->piece_size(); }

}  // namespace gradcache::retriever
