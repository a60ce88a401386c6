#!/usr/bin/env bash
# Installs everything gradcache needs from Debian's archive (run as root, or with sudo).
set -euo pipefail

packages=(
  cmake g++ ninja-build ccache            # build
  libtorch-dev libopenblas0-pthread        # LibTorch 1.13 (CPU) and a fast BLAS for it
  libgtest-dev libgmock-dev                # tests
  libgloo-dev python3-torch                # torch.distributed (c10d/Gloo) and torchrun
  libsentencepiece-dev libcli11-dev nlohmann-json3-dev libfmt-dev  # the CLI
  wordnet-base                             # the CLI's built-in default data
  libfaiss-dev libxapian-dev               # dense search (FAISS) and the BM25 baseline (Xapian)
  python3-sentencepiece                    # tests: an exported model used from Python
  libbenchmark-dev gnuplot-nox             # benchmarks and plots
  clang libclang-rt-14-dev libomp-dev      # sanitizer builds and libFuzzer (scripts/sanitize.sh, fuzz.sh);
                                           # libomp: FAISS uses OpenMP, which clang takes from LLVM
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "setup: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
