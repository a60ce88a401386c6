// NumPy .npy files of 2-D float matrices: the format the embeddings of `gradcache encode` are
// stored in, so that Python reads them with numpy.load and nothing else.
#pragma once

#include <ATen/core/Tensor.h>

#include <stdexcept>
#include <string>

namespace gradcache {
namespace retriever {

/// A .npy file that cannot be read as a 2-D float matrix; the message names the file.
class NpyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The .npy header (format 1.0: magic, version, little-endian length, the dict
/// {'descr': '<f4' or '<f2', 'fortran_order': False, 'shape': (rows, cols), } padded with
/// spaces and a newline to a multiple of 64 bytes) of a C-order float32/float16 matrix.
std::string npy_header(const at::Tensor& matrix);

/// Writes a 2-D float32 or float16 tensor (any device; copied to the CPU) as a .npy file:
/// to temporary_path(path), flushed, then renamed (write_file_atomic's guarantee). Throws
/// std::invalid_argument for another shape or type, std::runtime_error naming the file when
/// it cannot be written.
void write_npy(const std::string& path, const at::Tensor& matrix);

/// Reads a .npy file of a 2-D little-endian float32 ('<f4') or float16 ('<f2') C-order
/// matrix, format 1.0 or 2.0 (what write_npy and numpy.save write): a CPU tensor of that
/// type. Throws NpyError naming the file and what is wrong (not .npy, another type or rank,
/// Fortran order, truncated or too long).
at::Tensor read_npy(const std::string& path);

}  // namespace retriever
}  // namespace gradcache
