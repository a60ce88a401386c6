#!/usr/bin/env bash
# README command 1: set up, build, and run the main job on its built-in default data.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
exec build/examples/dual_encoder "$@"
