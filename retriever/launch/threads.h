// Thread counts: LibTorch's intra-op threads and OpenBLAS's own threads.
#pragma once

#include <cstdint>
#include <string>

namespace gradcache {
namespace retriever {

/// OpenBLAS's thread count, or 0 when the BLAS in use is not OpenBLAS.
int blas_threads();

/// Sets OpenBLAS's thread count (found at run time: Debian selects the BLAS library through
/// alternatives); returns false when the BLAS in use is not OpenBLAS.
bool set_blas_threads(int threads);

/// Sets LibTorch's intra-op threads (--threads; 0: 1) and leaves OpenBLAS's as they are.
void set_intra_op_threads(int64_t threads);

/// Sets both: intra-op threads (0: 1) and OpenBLAS threads (0: 1). On this project's 2-core
/// reference machine one of each is as fast as any other set-up for its models and leaves the
/// second core idle (docs/performance.md, "Threads"); more is for larger models.
void configure_threads(int intra_op, int blas);

/// E.g. "intra-op 1, OpenBLAS 1".
std::string describe_threads();

}  // namespace retriever
}  // namespace gradcache
