// A plain C interface over sentencepiece, built as a small shared object that model/tokenizer.cpp loads
// with dlmopen into a link-map namespace of its own (see the comment at the top of model/tokenizer.cpp).
//
// Everything that crosses the namespace boundary is plain C: pointers to the caller's bytes,
// integers, and "sinks" (a caller's function that copies bytes into the caller's own memory).
// That namespace has its own libstdc++ and libc, hence its own heap: no object allocated here
// may be freed by the caller or the other way round, and no C++ exception may leave a function
// here (the caller's runtime cannot catch it).
//
// This file is compiled without sanitizers: the sanitizer runtimes live in the main namespace
// only, so instrumented code here could not be loaded.

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstddef>
#include <exception>
#include <iostream>
#include <memory>
#include <mutex>
#include <streambuf>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

extern "C" {
/// Receives a result: copies `size` bytes from `data` into the caller's own storage.
typedef void (*gcsp_sink)(void* context, const void* data, size_t size);
}

namespace {

/// sentencepiece logs through std::cerr (this namespace's own). Its messages are collected here
/// rather than printed: the program decides what the user sees (a training error quotes the
/// last of them), and a library must not write to the terminal behind the program's back.
/// Bounded, so that a warning per sentence cannot grow memory; thread-safe, because the trainer
/// logs from its worker threads.
class LogCapture : public std::streambuf {
 public:
  /// The text logged since the last take(), at most the last kKeep bytes.
  std::string take() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string text;
    text.swap(text_);
    return text;
  }

 protected:
  int overflow(int c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    const char ch = traits_type::to_char_type(c);
    xsputn(&ch, 1);
    return c;
  }
  std::streamsize xsputn(const char* data, std::streamsize size) override {
    std::lock_guard<std::mutex> lock(mutex_);
    text_.append(data, static_cast<size_t>(size));
    if (text_.size() > 2 * kKeep) text_.erase(0, text_.size() - kKeep);
    return size;
  }

 private:
  static constexpr size_t kKeep = 4096;
  std::mutex mutex_;
  std::string text_;
};

LogCapture& log_capture() {
  static LogCapture* capture = [] {
    auto* installed = new LogCapture();  // never freed: sentencepiece may log until exit
    std::cerr.rdbuf(installed);
    std::clog.rdbuf(installed);
    return installed;
  }();
  return *capture;
}

void put(gcsp_sink sink, void* context, std::string_view text) {
  if (sink != nullptr) sink(context, text.data(), text.size());
}

/// Runs `body`; turns any exception into a message for `error` and returns false.
template <class Body>
bool guarded(gcsp_sink error, void* error_context, Body&& body) {
  try {
    log_capture();
    body();
    return true;
  } catch (const std::exception& e) {
    put(error, error_context, std::string("sentencepiece: ") + e.what());
  } catch (...) {
    put(error, error_context, "sentencepiece: unknown exception");
  }
  return false;
}

/// Feeds the caller's texts to the trainer. Each text is copied once into `value_` as it is
/// read, since sentencepiece wants a std::string of this namespace.
class TextIterator : public sentencepiece::SentenceIterator {
 public:
  TextIterator(const char* const* texts, const size_t* sizes, size_t count)
      : texts_(texts), sizes_(sizes), count_(count) {
    load();
  }
  bool done() const override { return position_ >= count_; }
  void Next() override {
    ++position_;
    load();
  }
  const std::string& value() const override { return value_; }
  sentencepiece::util::Status status() const override { return sentencepiece::util::Status(); }

 private:
  void load() {
    if (position_ < count_) value_.assign(texts_[position_], sizes_[position_]);
  }
  const char* const* texts_;
  const size_t* sizes_;
  size_t count_;
  size_t position_ = 0;
  std::string value_;
};

const sentencepiece::SentencePieceProcessor& processor(const void* handle) {
  return *static_cast<const sentencepiece::SentencePieceProcessor*>(handle);
}

}  // namespace

extern "C" {

/// The interface version; model/tokenizer.cpp refuses a shim of another version.
int gcsp_version() { return 1; }

/// Trains a model on texts[i] (sizes[i] bytes each) with sentencepiece's key/value settings.
/// On success writes the serialized model proto to `model` and returns 1; otherwise writes
/// sentencepiece's message, then what it logged, to `error` and returns 0.
int gcsp_train(const char* const* keys, const char* const* values, size_t settings_count,
               const char* const* texts, const size_t* sizes, size_t text_count, gcsp_sink model,
               void* model_context, gcsp_sink error, void* error_context) {
  bool ok = false;
  guarded(error, error_context, [&] {
    std::unordered_map<std::string, std::string> settings;
    for (size_t i = 0; i < settings_count; ++i) settings[keys[i]] = values[i];
    TextIterator iterator(texts, sizes, text_count);
    std::string bytes;
    log_capture().take();
    const auto status = sentencepiece::SentencePieceTrainer::Train(settings, &iterator, &bytes);
    const std::string logged = log_capture().take();
    if (!status.ok()) {
      std::string message = status.ToString();
      if (!logged.empty()) message += "\nsentencepiece's log:\n" + logged;
      put(error, error_context, message);
      return;
    }
    put(model, model_context, bytes);
    ok = true;
  });
  return ok ? 1 : 0;
}

/// A processor loaded from serialized model proto bytes, or null (the reason goes to `error`).
void* gcsp_load(const char* bytes, size_t size, gcsp_sink error, void* error_context) {
  void* result = nullptr;
  guarded(error, error_context, [&] {
    auto loaded = std::make_unique<sentencepiece::SentencePieceProcessor>();
    const auto status = loaded->LoadFromSerializedProto(std::string_view(bytes, size));
    if (!status.ok()) {
      put(error, error_context, status.ToString());
      return;
    }
    result = loaded.release();
  });
  return result;
}

void gcsp_free(void* handle) { delete static_cast<sentencepiece::SentencePieceProcessor*>(handle); }

/// Writes the ids of `text` to `ids` as an array of int. Returns 1, or 0 with a message.
int gcsp_encode(const void* handle, const char* text, size_t size, gcsp_sink ids, void* ids_context,
                gcsp_sink error, void* error_context) {
  bool ok = false;
  guarded(error, error_context, [&] {
    std::vector<int> pieces;
    const auto status = processor(handle).Encode(std::string_view(text, size), &pieces);
    if (!status.ok()) {
      put(error, error_context, status.ToString());
      return;
    }
    if (ids != nullptr) ids(ids_context, pieces.data(), pieces.size() * sizeof(int));
    ok = true;
  });
  return ok ? 1 : 0;
}

/// Writes the text of ids[0..count) to `text`. Returns 1, or 0 with a message.
int gcsp_decode(const void* handle, const int* ids, size_t count, gcsp_sink text, void* text_context,
                gcsp_sink error, void* error_context) {
  bool ok = false;
  guarded(error, error_context, [&] {
    std::string decoded;
    const auto status = processor(handle).Decode(std::vector<int>(ids, ids + count), &decoded);
    if (!status.ok()) {
      put(error, error_context, status.ToString());
      return;
    }
    put(text, text_context, decoded);
    ok = true;
  });
  return ok ? 1 : 0;
}

int gcsp_piece_size(const void* handle) { return processor(handle).GetPieceSize(); }
int gcsp_pad_id(const void* handle) { return processor(handle).pad_id(); }
int gcsp_unk_id(const void* handle) { return processor(handle).unk_id(); }

/// Writes the serialized model proto to `bytes`. Returns 1, or 0 with a message.
int gcsp_serialized(const void* handle, gcsp_sink bytes, void* bytes_context, gcsp_sink error,
                    void* error_context) {
  return guarded(error, error_context, [&] { put(bytes, bytes_context, processor(handle).serialized_model_proto()); })
             ? 1
             : 0;
}

}  // extern "C"
