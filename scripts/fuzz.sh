#!/usr/bin/env bash
# Runs each libFuzzer target of fuzz/ (one per reader of user files) for a while. The targets
# are built by scripts/sanitize.sh --build-only (clang, ASan + UBSan, coverage), in the same
# build directory as the sanitizer tests. Part of CI (.ci/run).
#
#   scripts/fuzz.sh [seconds]      # default 60 s per target
#
# Environment:
#   BUILD_DIR  the sanitizer build directory (default: build-asan); corpora and crashes go in
#              BUILD_DIR/fuzz/
#   TARGETS    which targets (default: every fuzz/fuzz_*.cpp, e.g. "config qrels")
#   FUZZ_SEED  libFuzzer's random seed (default: 1, so that a run from the committed seeds
#              tries the same inputs in the same order each time and CI cannot fail by luck;
#              set another, or 0 for a random one, to explore further)
#
# The committed seeds (fuzz/corpus/<target>/) are read, never written: new inputs go to
# BUILD_DIR/fuzz/corpus/<target>/, so a second run starts where the first stopped.
#
# Exit status: 0 when no target found anything; 1 when one crashed, hung, leaked or broke a
# checked contract (the input is saved as BUILD_DIR/fuzz/artifacts/<target>-crash-...;
# reproduce with BUILD_DIR/fuzz/fuzz_<target> <that file>); 2 for a usage or build error.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=${1:-60}
fuzz_seed=${FUZZ_SEED:-1}
if ! [[ $seconds =~ ^[0-9]+$ ]] || [ "$seconds" -lt 1 ]; then
  echo "usage: $0 [seconds per target, a positive integer; default 60]" >&2
  exit 2
fi
build=${BUILD_DIR:-$root/build-asan}
targets=${TARGETS:-$(cd "$root/fuzz" && ls fuzz_*.cpp | sed 's/^fuzz_//; s/\.cpp$//')}
BUILD_DIR=$build bash "$root/scripts/sanitize.sh" --build-only || exit 2
work=$build/fuzz
mkdir -p "$work/artifacts"

status=0
summary=()
for target in $targets; do
  binary=$build/fuzz/fuzz_$target
  [ -x "$binary" ] || { echo "no fuzz target $binary (fuzz/fuzz_$target.cpp)" >&2; exit 2; }
  corpus=$work/corpus/$target
  mkdir -p "$corpus"
  seeds=()
  [ -d "$root/fuzz/corpus/$target" ] && seeds=("$root/fuzz/corpus/$target")
  dict=()  # fuzz/<target>.dict, or the text readers' shared one
  case $target in
    train_examples | collection | qrels) dict=(-dict="$root/fuzz/readers.dict") ;;
    *) [ -f "$root/fuzz/$target.dict" ] && dict=(-dict="$root/fuzz/$target.dict") ;;
  esac
  max_len=8192  # text files: a few lines; checkpoints: the seed (a tiny model, 291 KB: its tokenizer)
  case $target in checkpoint | export) max_len=400000 ;; esac  # an export's seed: 274 KB, the tokenizer
  log=$work/fuzz_$target.log
  echo "== fuzz_$target for $seconds s (log: $log)"
  # -timeout: an input taking over 10 s is a hang; -rss_limit_mb: more than 2 GB is a blow-up.
  # Leak checking is libFuzzer's default (-detect_leaks=1).
  if "$binary" "$corpus" "${seeds[@]}" "${dict[@]}" \
       -max_total_time="$seconds" -seed="$fuzz_seed" -timeout=10 -rss_limit_mb=2048 -max_len="$max_len" -print_final_stats=1 \
       -artifact_prefix="$work/artifacts/$target-" >"$log" 2>&1; then
    result=ok
  else
    result="FAILED (see $log and $work/artifacts/)"
    status=1
    grep -a -E "ERROR: |contract violated|terminate called|what\(\)|SUMMARY" "$log" | head -5 >&2 || true
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  coverage=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 || true)
  summary+=("fuzz_$target: $result; ${runs:-?} runs, ${rate:-?} exec/s, ${coverage:-cov: ?}, corpus $(find "$corpus" -type f | wc -l) files")
done

echo "== summary"
printf '%s\n' "${summary[@]}"
exit "$status"
