#include "retriever/files/npy.h"

#include "files/atomic_file.h"
#include "retriever/files/utf8.h"

#include <torch/torch.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>

namespace gradcache {
namespace retriever {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, ".npy files are written as little-endian ('<f4')");

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

const char* descr_of(c10::ScalarType type) {
  if (type == torch::kFloat32) return "<f4";
  if (type == torch::kFloat16) return "<f2";
  return nullptr;
}

[[noreturn]] void fail_npy(const std::string& path, const std::string& what) {
  throw NpyError("embeddings file " + path + ": " + printable_utf8(what));  // may quote the header's bytes
}

// The header's dict: descr, shape (rows, cols); fortran_order must be False.
struct NpyLayout {
  c10::ScalarType type;
  int64_t rows = 0, cols = 0;
};

NpyLayout parse_header_dict(const std::string& dict, const std::string& path) {
  std::smatch m;
  if (!std::regex_search(dict, m, std::regex(R"('descr'\s*:\s*'([^']*)')")))
    fail_npy(path, "the .npy header has no 'descr'");
  NpyLayout layout;
  if (m[1] == "<f4") {
    layout.type = torch::kFloat32;
  } else if (m[1] == "<f2") {
    layout.type = torch::kFloat16;
  } else {
    fail_npy(path, "holds '" + m[1].str() + "' values; expected float32 ('<f4') or float16 ('<f2')");
  }
  if (!std::regex_search(dict, m, std::regex(R"('fortran_order'\s*:\s*(True|False))")))
    fail_npy(path, "the .npy header has no 'fortran_order'");
  if (m[1] == "True") fail_npy(path, "is in Fortran order; expected C order");
  if (!std::regex_search(dict, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))")))
    fail_npy(path, "the .npy header has no 'shape'");
  const std::string shape = m[1];
  if (!std::regex_match(shape, m, std::regex(R"(\s*(\d{1,18})\s*,\s*(\d{1,18})\s*,?\s*)")))
    fail_npy(path, "has shape (" + shape + "); expected a matrix (rows, dim)");
  layout.rows = std::stoll(m[1]);
  layout.cols = std::stoll(m[2]);
  return layout;
}

}  // namespace

std::string npy_header(const at::Tensor& matrix) {
  const char* descr = descr_of(matrix.scalar_type());
  if (matrix.dim() != 2 || !descr)
    throw std::invalid_argument("write_npy: expected a 2-D float32 or float16 tensor");
  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (" +
                     std::to_string(matrix.size(0)) + ", " + std::to_string(matrix.size(1)) + "), }";
  const size_t fixed = kMagicSize + 2 + 2;  // magic, version, header length
  const size_t padded = (fixed + dict.size() + 1 + 63) / 64 * 64;
  dict.append(padded - fixed - dict.size() - 1, ' ');
  dict += '\n';
  std::string header(kMagic, kMagicSize);
  header += '\x01';
  header += '\x00';
  header += static_cast<char>(dict.size() & 0xFF);
  header += static_cast<char>((dict.size() >> 8) & 0xFF);
  return header + dict;
}

void write_npy(const std::string& path, const at::Tensor& matrix) {
  const std::string header = npy_header(matrix);
  const auto data = matrix.to(torch::kCPU).contiguous();
  const std::string tmp = files::temporary_path(path);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + tmp + ": " + std::strerror(errno));
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    out.write(static_cast<const char*>(data.data_ptr()), static_cast<std::streamsize>(data.nbytes()));
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      throw std::runtime_error("cannot write " + tmp + " (is the disk full?)");
    }
  }
  files::commit_file(tmp, path);
}

at::Tensor read_npy(const std::string& path) {
  if (const auto problem = files::regular_file_problem(path); !problem.empty()) fail_npy(path, problem);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_npy(path, std::string("cannot open: ") + std::strerror(errno));
  char fixed[kMagicSize + 2] = {};
  in.read(fixed, sizeof fixed);
  if (!in || std::memcmp(fixed, kMagic, kMagicSize) != 0) fail_npy(path, "not a .npy file (no \\x93NUMPY magic)");
  const int major = static_cast<unsigned char>(fixed[kMagicSize]);
  if (major != 1 && major != 2) fail_npy(path, "has .npy format version " + std::to_string(major) + "; expected 1 or 2");
  unsigned char length_bytes[4] = {};
  const size_t length_size = major == 1 ? 2 : 4;
  in.read(reinterpret_cast<char*>(length_bytes), static_cast<std::streamsize>(length_size));
  uint64_t dict_size = 0;
  for (size_t i = length_size; i-- > 0;) dict_size = dict_size << 8 | length_bytes[i];
  std::error_code no_size;  // a header length past the end of the file is a lie, not an allocation
  if (dict_size > std::filesystem::file_size(path, no_size) || no_size) fail_npy(path, "the .npy header is truncated");
  // A matrix's header is under a kilobyte; a longer one is not parsed (std::regex recurses per
  // character and would overflow the stack on megabytes).
  if (dict_size > 65536) fail_npy(path, "has a .npy header of " + std::to_string(dict_size) + " bytes; a matrix's needs far fewer");
  std::string dict(dict_size, '\0');
  in.read(dict.data(), static_cast<std::streamsize>(dict_size));
  if (!in) fail_npy(path, "the .npy header is truncated");
  const NpyLayout layout = parse_header_dict(dict, path);
  const uint64_t data_start = sizeof fixed + length_size + dict_size;
  const uint64_t item = layout.type == torch::kFloat32 ? 4 : 2;
  uint64_t data_size = 0, expected = 0;
  const bool overflow = __builtin_mul_overflow(static_cast<uint64_t>(layout.rows), static_cast<uint64_t>(layout.cols),
                                               &data_size) ||
                        __builtin_mul_overflow(data_size, item, &data_size) ||
                        __builtin_add_overflow(data_start, data_size, &expected);
  std::error_code error;
  const uint64_t size = std::filesystem::file_size(path, error);
  if (overflow || error || size != expected)
    fail_npy(path, "holds " + std::to_string(size) + " bytes, but its header (" + std::to_string(layout.rows) + " x " +
                   std::to_string(layout.cols) + ") needs " + (overflow ? "more" : std::to_string(expected)) +
                   " (truncated or damaged)");
  auto matrix = torch::empty({layout.rows, layout.cols}, torch::TensorOptions().dtype(layout.type));
  in.read(static_cast<char*>(matrix.data_ptr()), static_cast<std::streamsize>(matrix.nbytes()));
  if (!in) fail_npy(path, "cannot read its data");
  return matrix;
}

}  // namespace retriever
}  // namespace gradcache
