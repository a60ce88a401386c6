#!/usr/bin/env bash
# LibTorch 2.x (the torch wheel of requirements.txt, build/) against Debian's 1.13 (build-1.13/)
# on this machine, side by side in one run, the two builds' runs interleaved (A B A B) so that
# the machine's load falls on both alike:
#   - the main job's training speed: `gradcache train` with the main job's defaults (--nproc
#     auto, batch 1024 in chunks of 128) for --steps steps, the same tokenizer for both;
#     pairs/s is the median over the logged steps after the first two;
#   - the benchmark's cache step: `gradcache-bench overhead` (cache / accumulate / full step
#     times) and `gradcache-bench memory` (peak tensor memory and peak RSS of a cache step);
#   - the test suite: `ctest -L 'core|retriever'`, the tests both configurations build.
# Writes docs/figures/libtorch_versions.json (every figure) and docs/figures/libtorch_versions.log (the outputs).
#
#   bash bench/libtorch_versions.sh            # about 25 minutes here, once both are built
#   bash bench/libtorch_versions.sh --quick    # a smoke run: tiny sizes, no test suite
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
quick=0
[ "${1:-}" = --quick ] && quick=1
reps=2 steps=24 ctest_labels='core|retriever'
overhead_flags=()
memory_flags=(--batches 256,1024 --full-max 1024 --accumulate-max 1024)
if [ "$quick" = 1 ]; then
  reps=1 steps=4
  overhead_flags=(--batch 32 --chunk 8 --reps 1)
  memory_flags=(--batches 32 --full-max 32 --accumulate-max 32)
fi
bash scripts/build.sh >/dev/null
GRADCACHE_LIBTORCH=1.13 bash scripts/build.sh >/dev/null
work=$(mktemp -d /tmp/libtorch_versions.XXXXXX)
trap 'rm -rf "$work"' EXIT
log=$work/log
declare -A dir=([2.x]=build [1.13]=build-1.13)

note() { echo "$*" | tee -a "$log" >&2; }
note "# bash bench/libtorch_versions.sh $* -- $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

# One tokenizer for every training run (trained once, by the 2.x build).
build/tools/gradcache train --quick --steps 1 --eval false --output "$work/tok" >/dev/null 2>&1
tokenizer=$work/tok/tokenizer.model

for rep in $(seq "$reps"); do
  for v in 2.x 1.13; do
    b=${dir[$v]}
    note "== rep $rep, LibTorch $v ($b)"
    out=$work/train-$v-$rep
    t0=$SECONDS
    "$b/tools/gradcache" train --nproc auto --steps "$steps" --log-every 1 --eval false --tokenizer "$tokenizer" \
      --output "$out" >"$out.log" 2>&1
    echo "wall $((SECONDS - t0))" >>"$out.log"
    grep -E "training on|threads" "$out.log" | head -2 | tee -a "$log" >&2
    "$b/bench/gradcache-bench" overhead --json "${overhead_flags[@]}" >"$work/overhead-$v-$rep.json" 2>>"$log"
    "$b/bench/gradcache-bench" memory --json "${memory_flags[@]}" >"$work/memory-$v-$rep.json" 2>>"$log"
  done
done

if [ "$quick" = 0 ]; then
  for v in 1.13 2.x; do
    note "== ctest -L '$ctest_labels' --parallel $(nproc), LibTorch $v"
    t0=$SECONDS
    (cd "${dir[$v]}" && ctest -L "$ctest_labels" --parallel "$(nproc)") >"$work/ctest-$v.log" 2>&1 || true
    echo "wall $((SECONDS - t0))" >>"$work/ctest-$v.log"
    tail -4 "$work/ctest-$v.log" | tee -a "$log" >&2
  done
fi

.venv/bin/python bench/libtorch_versions.py --work "$work" --reps "$reps" --command "bash bench/libtorch_versions.sh $*" \
  >"$work/summary.json"
if [ "$quick" = 0 ]; then
  cp "$work/summary.json" docs/figures/libtorch_versions.json
  cp "$log" docs/figures/libtorch_versions.log
  note "wrote docs/figures/libtorch_versions.json and docs/figures/libtorch_versions.log"
else
  cat "$work/summary.json"
fi
