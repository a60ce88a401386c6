#!/usr/bin/env bash
# Set-up (scripts/setup.sh) and an optimised build. Idempotent.
#   scripts/build.sh                          # build/, against LibTorch 2.x from the torch wheel
#   GRADCACHE_LIBTORCH=1.13 scripts/build.sh  # build-1.13/, against Debian's LibTorch 1.13
# Environment: BUILD_DIR (default: as above), JOBS (default: nproc), TARGETS (default: every
# target; e.g. TARGETS=gradcache_cli builds the program alone, as scripts/main.sh does).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ "${GRADCACHE_LIBTORCH:-wheel}" = 1.13 ]; then
  bash "$root/scripts/setup.sh" --libtorch-1.13
else
  bash "$root/scripts/setup.sh"
fi
source "$root/scripts/libtorch.sh"
build=${BUILD_DIR:-$default_build_dir}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${torch_cmake_args[@]}" >"$build.configure.log" 2>&1 \
  || { cat "$build.configure.log" >&2; exit 1; }
targets=()
for target in ${TARGETS:-}; do targets+=(--target "$target"); done
cmake --build "$build" --parallel "${JOBS:-$(nproc)}" "${targets[@]}"
