#!/usr/bin/env bash
# README command 2: set up, build, and run every test (ctest), including the one that builds
# examples/ against the installed package.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ctest --test-dir build --output-on-failure --parallel "$(nproc)" "$@"
