// The safetensors reader and writer: against files the Python package wrote (byte for byte),
// every dtype round trip, and every way a header can lie.
#include "model_test_util.h"

#include <unistd.h>

namespace hf = gradcache::hf;
using hftest::fs::path;

namespace {

std::string read_bytes(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A file of `header` (JSON) followed by `data_bytes` bytes of zeros.
std::string file_with(const std::string& header, size_t data_bytes, uint64_t claimed_length = 0) {
  uint64_t length = claimed_length ? claimed_length : header.size();
  std::string out;
  for (int i = 0; i < 8; ++i) out += static_cast<char>((length >> (8 * i)) & 0xff);
  return out + header + std::string(data_bytes, '\0');
}

// The message of the ModelFileError that reading `bytes` throws ("" and a failure if none).
std::string read_error(const std::string& bytes) {
  try {
    hf::read_safetensors_bytes(bytes, "bad.safetensors");
  } catch (const hf::ModelFileError& error) {
    EXPECT_EQ(error.file(), "bad.safetensors");
    EXPECT_EQ(std::string(error.what()).rfind("bad.safetensors: ", 0), 0u) << error.what();
    return error.what();
  }
  ADD_FAILURE() << "no ModelFileError for a bad file";
  return "";
}

}  // namespace

TEST(Safetensors, ReadsTheFileTransformersWrote) {
  const auto contents = hf::read_safetensors(hftest::tiny_model_dir() + "/model.safetensors");
  EXPECT_EQ(contents.tensors.size(), 39u);  // 5 embedding tensors, 16 per layer, 2 of the pooler
  EXPECT_EQ(contents.metadata.at("format"), "pt");
  const torch::Tensor* words = contents.find("embeddings.word_embeddings.weight");
  ASSERT_NE(words, nullptr);
  EXPECT_EQ(words->sizes(), torch::IntArrayRef({1000, 32}));
  EXPECT_EQ(words->scalar_type(), torch::kFloat);
  EXPECT_EQ(contents.find("no such tensor"), nullptr);
}

TEST(Safetensors, WritesByteForByteWhatPythonWrites) {
  // The Rust writer behind safetensors.torch.save_file orders tensors by dtype alignment then
  // name and pads the header with spaces; ours must produce the identical file.
  const std::string file = hftest::tiny_model_dir() + "/model.safetensors";
  const auto contents = hf::read_safetensors(file);
  EXPECT_EQ(hf::safetensors_bytes(contents.tensors, contents.metadata), read_bytes(file));
}

TEST(Safetensors, EveryDtypeRoundTrips) {
  torch::manual_seed(0);
  hf::NamedTensors tensors = {
      {"f64", torch::randn({2, 3}, torch::kDouble)},      {"f32", torch::randn({4})},
      {"f16", torch::randn({3, 1}).to(torch::kHalf)},     {"bf16", torch::randn({5}).to(torch::kBFloat16)},
      {"i64", torch::arange(-3, 3)},                      {"i32", torch::arange(7).to(torch::kInt)},
      {"i16", torch::arange(-2, 2).to(torch::kShort)},    {"i8", torch::arange(-4, 4).to(torch::kChar)},
      {"u8", torch::arange(250, 256).to(torch::kByte)},   {"bool", torch::tensor({true, false, true})},
      {"scalar", torch::tensor(2.5)},                     {"empty", torch::zeros({0, 4})},
      {"strided", torch::randn({4, 6}).t()},              {"ünïcode \"name\"\n", torch::ones({1})}};
  const std::string dir = hftest::scratch_dir();
  hf::save_safetensors(dir + "/all.safetensors", tensors, {{"format", "pt"}, {"note", "µ"}});
  EXPECT_FALSE(hftest::fs::exists(dir + "/all.safetensors.tmp-" + std::to_string(::getpid())));
  const auto back = hf::read_safetensors(dir + "/all.safetensors");
  EXPECT_EQ(back.metadata.at("note"), "µ");
  ASSERT_EQ(back.tensors.size(), tensors.size());
  for (const auto& [name, tensor] : tensors) {
    const torch::Tensor* read = back.find(name);
    ASSERT_NE(read, nullptr) << name;
    EXPECT_EQ(read->scalar_type(), tensor.scalar_type()) << name;
    EXPECT_TRUE(torch::equal(*read, tensor)) << name;
  }
}

TEST(Safetensors, WriterRefusesWhatTheFormatCannotHold) {
  const auto t = torch::ones({2});
  EXPECT_THROW(hf::safetensors_bytes({{"a", t}, {"a", t}}), std::invalid_argument);
  EXPECT_THROW(hf::safetensors_bytes({{"__metadata__", t}}), std::invalid_argument);
  EXPECT_THROW(hf::safetensors_bytes({{"c", torch::ones({2}, torch::kComplexFloat)}}), std::invalid_argument);
  EXPECT_THROW(hf::safetensors_bytes({{"u", torch::Tensor()}}), std::invalid_argument);
}

TEST(Safetensors, TruncatedOrLyingLengths) {
  EXPECT_NE(read_error("abc").find("too short"), std::string::npos);
  EXPECT_NE(read_error(file_with("{}", 0, 1000)).find("runs past the end of the file"), std::string::npos);
  EXPECT_NE(read_error(file_with("{}", 0, hf::kMaxSafetensorsHeader + 1)).find("exceeds the format's limit"),
            std::string::npos);
  EXPECT_NE(read_error(file_with(" {}", 0)).find("does not start with '{'"), std::string::npos);
  EXPECT_NE(read_error(file_with("{\"a\":", 0)).find("not valid JSON"), std::string::npos);
  EXPECT_NE(read_error(file_with("[1]", 0)).find("does not start"), std::string::npos);
  // A real file cut short: its last tensors' offsets now run past the data.
  const std::string whole = read_bytes(hftest::tiny_model_dir() + "/model.safetensors");
  EXPECT_NE(read_error(whole.substr(0, whole.size() / 2)).find("run past the end of the data"), std::string::npos);
  EXPECT_NE(read_error(whole.substr(0, 100)).find("runs past the end of the file"), std::string::npos);
}

TEST(Safetensors, EntriesThatLie) {
  auto entry = [](const std::string& dtype, const std::string& shape, const std::string& offsets) {
    return "\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":" + offsets;
  };
  auto one = [&](const std::string& body, size_t data) { return read_error(file_with("{\"t\":{" + body + "}}", data)); };
  EXPECT_NE(one(entry("F7", "[2]", "[0,8]"), 8).find("unknown dtype \"F7\""), std::string::npos);
  EXPECT_NE(one(entry("F8_E4M3", "[2]", "[0,2]"), 2).find("is not supported"), std::string::npos);
  EXPECT_NE(one(entry("F32", "[2]", "[0,16]"), 16).find("span 16 bytes but F32 [2] takes 8"), std::string::npos);
  EXPECT_NE(one(entry("F32", "[2]", "[8,0]"), 8).find("end before they begin"), std::string::npos);
  EXPECT_NE(one(entry("F32", "[2]", "[0,8]"), 4).find("run past the end of the data"), std::string::npos);
  EXPECT_NE(one(entry("F32", "[-2]", "[0,8]"), 8).find("non-negative integers"), std::string::npos);
  EXPECT_NE(one(entry("F32", "[2.5]", "[0,8]"), 8).find("non-negative integers"), std::string::npos);
  EXPECT_NE(one(entry("F32", "[4294967296,4294967296]", "[0,8]"), 8).find("more"), std::string::npos);
  EXPECT_NE(one(entry("F32", "[2]", "[0]"), 8).find("[begin, end]"), std::string::npos);
  EXPECT_NE(one("\"dtype\":\"F32\",\"shape\":[2]", 8).find("has no \"data_offsets\""), std::string::npos);
  EXPECT_NE(one(entry("F32", "[2]", "[0,8]"), 12).find("cover 8 bytes of data but the file holds 12"), std::string::npos);
  EXPECT_NE(read_error(file_with("{\"t\":[1]}", 0)).find("must be a JSON object"), std::string::npos);
}

TEST(Safetensors, RangesMustTileTheData) {
  const std::string a = "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}";
  const std::string overlapping = "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}";
  const std::string after_hole = "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[12,16]}";
  EXPECT_NE(read_error(file_with("{" + a + "," + overlapping + "}", 12)).find("overlaps"), std::string::npos);
  EXPECT_NE(read_error(file_with("{" + a + "," + after_hole + "}", 16)).find("belong to no tensor"), std::string::npos);
  // Two names for one range: a duplicate as far as the data goes.
  const std::string alias = "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}";
  EXPECT_NE(read_error(file_with("{" + a + "," + alias + "}", 8)).find("overlaps"), std::string::npos);
}

TEST(Safetensors, HeaderStructure) {
  EXPECT_NE(read_error(file_with("{\"__metadata__\":{\"k\":1}}", 0)).find("must be a string"), std::string::npos);
  EXPECT_NE(read_error(file_with("{\"__metadata__\":[\"k\"]}", 0)).find("map of strings"), std::string::npos);
  const std::string t = "\"t\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}";
  EXPECT_NE(read_error(file_with("{" + t + "," + t + "}", 0)).find("duplicate JSON key \"t\""), std::string::npos);
  EXPECT_NE(read_error(file_with("{\"t\":{\"dtype\":\"U8\",\"shape\":[[0]],\"data_offsets\":[0,0]}}", 0)).find("nested"),
            std::string::npos);
  // A number beyond a double (nlohmann's out_of_range, not a parse error; fuzz_safetensors found it).
  EXPECT_NE(read_error(file_with("{\"w\":{\"shape\":[2,184467440e29496729]}}", 0)).find("number out of range"),
            std::string::npos);
  // Not UTF-8: the message stays valid UTF-8 (the bytes are not quoted).
  const std::string message = read_error(file_with("{\"\xff\":1}", 0));
  EXPECT_NE(message.find("not valid JSON"), std::string::npos);
  EXPECT_EQ(message.find('\xff'), std::string::npos);
  EXPECT_NE(read_error(file_with("{\"b\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[0,2]}}", 0) + "\x01\x02")
                .find("BOOL data"),
            std::string::npos);
}

TEST(Safetensors, PaddedHeaderAndEmptyFileAreValid) {
  // The format allows trailing spaces in the header, zero tensors, and zero-sized tensors.
  EXPECT_TRUE(hf::read_safetensors_bytes(file_with("{}      ", 0), "x").tensors.empty());
  const auto empty = hf::read_safetensors_bytes(
      file_with("{\"e\":{\"dtype\":\"F16\",\"shape\":[3,0],\"data_offsets\":[0,0]}}", 0), "x");
  EXPECT_EQ(empty.tensors.at(0).second.sizes(), torch::IntArrayRef({3, 0}));
}

TEST(Safetensors, MissingFileIsAModelFileError) {
  const std::string missing = hftest::scratch_dir() + "/none.safetensors";
  try {
    hf::read_safetensors(missing);
    ADD_FAILURE() << "no error";
  } catch (const hf::ModelFileError& error) {
    EXPECT_EQ(error.file(), missing);
    EXPECT_NE(std::string(error.what()).find("cannot open"), std::string::npos);
  }
}
