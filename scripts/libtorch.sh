# Sourced by the build scripts: which LibTorch to build against, from GRADCACHE_LIBTORCH.
#   wheel (default)  LibTorch 2.x inside the torch wheel of .venv (requirements.txt), found the
#                    documented way (torch.utils.cmake_prefix_path); build directory build/
#   1.13             Debian's libtorch-dev (scripts/setup.sh --libtorch-1.13); build-1.13/
# Sets: libtorch (the choice), torch_python (the Python whose torch is that LibTorch: the tests
# use it and its torchrun), torch_cmake_args (the CMake arguments that select it), and
# default_build_dir. Expects $root, the repository root.
libtorch=${GRADCACHE_LIBTORCH:-wheel}
case "$libtorch" in
  wheel)
    torch_python=$root/.venv/bin/python
    if ! torch_prefix=$("$torch_python" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)' 2>/dev/null); then
      echo "no torch in $root/.venv: run scripts/setup.sh first" >&2
      exit 2
    fi
    # The package's root as well as its share/cmake: find_library() must find the wheel's
    # libtorch.so in torch/lib before a system copy (Debian's libtorch-dev may be installed too).
    torch_cmake_args=("-DCMAKE_PREFIX_PATH=$torch_prefix;$(dirname "$(dirname "$torch_prefix")")")
    default_build_dir=$root/build
    ;;
  1.13)
    torch_python=/usr/bin/python3
    if [ ! -f /usr/lib/x86_64-linux-gnu/cmake/Torch/TorchConfig.cmake ]; then
      echo "Debian's LibTorch 1.13 is not installed: run scripts/setup.sh --libtorch-1.13 first" >&2
      exit 2
    fi
    torch_cmake_args=(-DTorch_DIR=/usr/lib/x86_64-linux-gnu/cmake/Torch)
    default_build_dir=$root/build-1.13
    ;;
  *)
    echo "GRADCACHE_LIBTORCH=$libtorch: expected wheel (LibTorch 2.x from .venv) or 1.13 (Debian's)" >&2
    exit 2
    ;;
esac
torch_cmake_args+=("-DGRADCACHE_PYTHON=$torch_python")
