#!/usr/bin/env bash
# Side by side with sentence-transformers' CachedMultipleNegativesRankingLoss on the same model,
# and with the Python reference GradCache on a scripted model (issue 26): docs/figures/side_by_side.json,
# the tables of docs/side_by_side.md and docs/figures/side_by_side.png. What is compared, and how:
# bench/side_by_side.py's docstring (`bash bench/side_by_side.sh --help`).
#
#   bash bench/side_by_side.sh [--quick] [side_by_side.py's options]
#
# The reference GradCache runs when GRADCACHE_REFERENCE_SRC names the src/ folder of a checkout
# of github.com/luyug/GradCache (none is vendored here); otherwise its rows say SKIPPED.
# The programs: $GRADCACHE (build/tools/gradcache) and $GRADCACHE_SIDE_BY_SIDE_BENCH
# (build/bench/gradcache-side-by-side-bench); this script builds nothing (bash scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
python="${GRADCACHE_PYTHON:-.venv/bin/python}"
[ -x "$python" ] || { echo "side_by_side.sh: no Python at '$python'; bash scripts/setup.sh makes .venv/" >&2; exit 1; }
exec "$python" bench/side_by_side.py "$@"
