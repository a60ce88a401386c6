# Compile settings shared by the project's own targets.
function(gradcache_target_defaults target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
endfunction()

# Programs that include <torch/torch.h> in several sources share a precompiled copy of it
# (about 2x faster per source; light sources are faster without it, hence not the library).
function(gradcache_precompile_torch target)
  if(GRADCACHE_USE_PCH)
    target_precompile_headers(${target} PRIVATE <torch/torch.h>)
  endif()
endfunction()

# The torch wheel's libtorch_cpu.so carries MKL and exports its BLAS (sgemm_, ...), and calls
# sgemm_ itself through the dynamic linker. A program that also links the system BLAS (FAISS
# does) gets libblas.so.3 ahead of libtorch_cpu.so in its load order, and then every LibTorch
# matrix product runs on OpenBLAS: 20-40% slower here than MKL on MiniLM's shapes, and not the
# kernels Python's torch runs. Naming libtorch_cpu.so first on the link line (as a link option,
# which precedes the objects) makes it the first provider of those symbols, for LibTorch and
# FAISS alike. With a LibTorch that uses the system BLAS itself (Debian's), nothing changes.
function(gradcache_link_torch_blas_first target scope)
  if(TARGET torch_cpu)
    target_link_options(${target} ${scope} "LINKER:--push-state,--no-as-needed" "$<TARGET_FILE:torch_cpu>"
                        "LINKER:--pop-state")
  endif()
endfunction()
