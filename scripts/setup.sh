#!/usr/bin/env bash
# Installs everything gradcache needs: Debian packages (as root, or with sudo) and the project's
# Python environment .venv/ from requirements.txt (the torch wheel's LibTorch 2.x, which the
# default build links, and the Python implementations the tests compare against). Idempotent:
# a second run installs nothing unless requirements.txt changed.
#
#   scripts/setup.sh                 # the default build (LibTorch 2.x from the torch wheel)
#   scripts/setup.sh --libtorch-1.13 # also Debian's LibTorch 1.13 and its Python torch, for the
#                                    # second configuration (scripts/test_libtorch113.sh)
#
# Environment: GRADCACHE_BASE_PYTHON, the Python 3 that makes .venv (default: python3 on PATH).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
with_113=0
case "${1:-}" in
  "") ;;
  --libtorch-1.13) with_113=1 ;;
  *) echo "usage: $0 [--libtorch-1.13]" >&2; exit 2 ;;
esac

packages=(
  cmake g++ ninja-build ccache             # build
  libopenblas0-pthread                     # a fast BLAS for Debian's libraries (FAISS; LibTorch 1.13)
  libgtest-dev libgmock-dev                # tests
  libgloo-dev                              # Gloo's headers, which c10d's ProcessGroupGloo.hpp includes
                                           # (the torch wheel ships the library, not these headers)
  libsentencepiece-dev libcli11-dev nlohmann-json3-dev libfmt-dev  # the CLI
  libicu-dev                               # Unicode for the Hugging Face tokenizer (src/hf)
  libpcre2-dev pkg-config                  # its regular expressions (PCRE2's 32-bit library)
  wordnet-base                             # the CLI's built-in default data
  libfaiss-dev libxapian-dev               # dense search (FAISS) and the BM25 baseline (Xapian)
  libbenchmark-dev gnuplot-nox             # benchmarks and plots
  clang libclang-rt-14-dev libomp-dev      # sanitizer builds and libFuzzer (scripts/sanitize.sh, fuzz.sh);
                                           # libomp: FAISS uses OpenMP, which clang takes from LLVM
  python3-venv                             # in case the base Python is Debian's
)
if [ "$with_113" = 1 ]; then
  packages+=(
    libtorch-dev                           # LibTorch 1.13 (CPU)
    python3-torch python3-numpy python3-sentencepiece  # its Python torch and torchrun, for the CLI tests
  )
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "setup: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The Python environment: made once, reinstalled when requirements.txt changes (its hash is kept
# in .venv/requirements.sha256, written only after pip succeeded).
venv=$root/.venv
want=$(sha256sum "$root/requirements.txt" | cut -d' ' -f1)
if [ "$(cat "$venv/requirements.sha256" 2>/dev/null)" != "$want" ]; then
  base=${GRADCACHE_BASE_PYTHON:-python3}
  if [ ! -x "$venv/bin/python" ]; then
    echo "setup: making $venv with $("$base" --version 2>&1)" >&2
    "$base" -m venv "$venv"
  fi
  echo "setup: installing requirements.txt into $venv (first time: about 3 GB, a few minutes)" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --progress-bar off \
    --requirement "$root/requirements.txt"
  echo "$want" >"$venv/requirements.sha256"
fi
