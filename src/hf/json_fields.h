// Typed reads of the fields of a tokenizer's JSON objects, each failing with a TokenizerError
// that names the file and the field. A missing field takes `tokenizers`' default where it has one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "hf/components.h"

namespace gradcache::hf::detail {

/// "an object", "a string", "null"...: what a value is, for messages.
std::string describe_json(const Json& value);
/// A string quoted for a message: at most 80 characters shown, control characters escaped.
std::string quote_for_message(std::string_view text);

void expect_object(const Json& value, const Source& source);
/// The field, which must be there.
const Json& require_field(const Json& object, const char* key, const Source& source);
bool read_bool(const Json& object, const char* key, const Source& source, bool fallback);
/// A boolean field without a default (`tokenizers` refuses the file without it).
bool read_required_bool(const Json& object, const char* key, const Source& source);
/// null and a missing field are nothing.
std::optional<bool> read_optional_bool(const Json& object, const char* key, const Source& source);
std::string read_string(const Json& object, const char* key, const Source& source,
                        const std::optional<std::string>& fallback = std::nullopt);
/// A non-negative integer no larger than `max`.
uint64_t read_count(const Json& object, const char* key, const Source& source, std::optional<uint64_t> fallback,
                    uint64_t max);
/// `value` as a non-negative integer no larger than `max` (`source` names it).
uint64_t as_count(const Json& value, const Source& source, uint64_t max);
/// A vocabulary object {token: id} whose ids are each of 0..n-1 exactly once, as the tokens by
/// id; more than `max_size` tokens is refused (a file declaring more is broken or hostile).
std::vector<std::string> read_dense_vocab(const Json& vocab, const Source& source, uint64_t max_size);
/// The tokens as the vocabulary object `tokenizers` writes: by id.
OrderedJson dense_vocab_json(const std::vector<std::string>& tokens);
/// The "type" of a component object.
std::string read_type(const Json& object, const Source& source);

}  // namespace gradcache::hf::detail
