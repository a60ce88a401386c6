#include "retriever/launch/threads.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include <dlfcn.h>

namespace gradcache {
namespace retriever {
namespace {

template <class Fn>
Fn blas_symbol(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

}  // namespace

int blas_threads() {
  auto get = blas_symbol<int (*)()>("openblas_get_num_threads");
  return get ? get() : 0;
}

bool set_blas_threads(int threads) {
  auto set = blas_symbol<void (*)(int)>("openblas_set_num_threads");
  if (!set) return false;
  set(threads);
  return true;
}

void set_intra_op_threads(int64_t threads) { at::set_num_threads(threads > 0 ? static_cast<int>(threads) : 1); }

void configure_threads(int intra_op, int blas) {
  at::set_num_threads(intra_op > 0 ? intra_op : 1);
  set_blas_threads(blas > 0 ? blas : 1);
}

std::string describe_threads() {
  // The torch wheel's LibTorch has MKL inside, and the programs are linked so that it serves
  // every matrix product, FAISS's too (cmake/gradcache_helpers.cmake): its threads follow the
  // intra-op setting, and an OpenBLAS loaded beside it is idle. Debian's LibTorch uses OpenBLAS.
  std::string out = "intra-op " + std::to_string(at::get_num_threads());
  if (at::hasMKL()) return out + ", BLAS: LibTorch's MKL";
  const int blas = blas_threads();
  return blas > 0 ? out + ", OpenBLAS " + std::to_string(blas) : out + ", BLAS not OpenBLAS";
}

}  // namespace retriever
}  // namespace gradcache
