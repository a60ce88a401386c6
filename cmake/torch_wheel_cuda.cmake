# LibTorch from the torch wheel with CUDA: libtorch_cuda.so finds its CUDA libraries (NCCL,
# cuBLAS, cuDNN, ... of the CUDA version it was built with) in the nvidia/*/lib folders of the
# Python packages beside it, through its RPATH ($ORIGIN/../../nvidia/...). The linker does not
# look there by itself, and would take an installed CUDA toolkit's older copies, against which
# libtorch_cuda.so's references to newer symbols are undefined (ncclCommGrow, ...). This points
# the linker's search for those indirect dependencies at the wheel's copies; what the programs
# load at run time is unchanged. Called by CMakeLists.txt after find_package(Torch) (the option
# is exported with the installed package); does nothing for any other LibTorch.
function(gradcache_link_torch_wheel_cuda target scope)
  if(NOT TORCH_INSTALL_PREFIX)
    return()
  endif()
  file(GLOB wheel_cuda_dirs "${TORCH_INSTALL_PREFIX}/../nvidia/*/lib")
  if(wheel_cuda_dirs)
    list(JOIN wheel_cuda_dirs ":" joined)
    target_link_options(${target} ${scope} "LINKER:-rpath-link,${joined}")
  endif()
endfunction()
