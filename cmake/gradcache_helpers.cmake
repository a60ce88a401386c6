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

# Unity builds (CMake's UNITY_BUILD): a target's sources compiled a few at a time as one unit.
# Most of a source's compile time here is LibTorch's templates, instantiated once per unit rather
# than once per source: measured on this 2-core machine, the retriever library's 57 sources took
# 957 s of compiler time one by one and 337 s in units of 8 (GCC 12, -O3). A unit's sources share one
# scope, so helpers in anonymous namespaces need distinct names. GRADCACHE_UNITY=OFF compiles
# every source on its own.
#   gradcache_unity(target)                     # units of 8 sources, in the order listed
#   gradcache_unity_group(target group source...)  # test programs: sources that share a test
#                                                  # helper header (and its `using namespace`)
# GCC's -Wsubobject-linkage takes a .cpp a unit includes for a header, and then warns about a
# class of that .cpp holding a type from its anonymous namespace, which is correct there: off.
function(gradcache_unity_on target)
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON ${ARGN})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-subobject-linkage)
  endif()
endfunction()
function(gradcache_unity target)
  if(GRADCACHE_UNITY)
    gradcache_unity_on(${target} UNITY_BUILD_BATCH_SIZE 8)
  endif()
endfunction()
function(gradcache_unity_group target group)
  if(GRADCACHE_UNITY)
    gradcache_unity_on(${target} UNITY_BUILD_MODE GROUP)
    set_source_files_properties(${ARGN} TARGET_DIRECTORY ${target} PROPERTIES UNITY_GROUP "${target}_${group}")
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
