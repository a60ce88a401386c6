#!/usr/bin/env bash
# Builds the libFuzzer targets of the text readers (fuzz/) with clang and runs each for a while.
#
#   scripts/fuzz.sh [seconds]      # default 60 s per target
#
# Environment:
#   BUILD_DIR  where binaries, the growing corpora and crash artifacts go (default: build-fuzz)
#   CXX        a clang++ with libFuzzer (default: clang++, else clang++-14)
#   TARGETS    which targets (default: "train_examples collection qrels")
#   JOBS       parallel compiles (default: nproc)
#
# The committed seeds (fuzz/corpus/<target>/) are read, never written: new inputs go to
# BUILD_DIR/corpus/<target>/, so a second run starts where the first stopped. The readers need
# no LibTorch, so the targets compile retriever/text_data.cpp directly with
# -fsanitize=fuzzer,address,undefined (libFuzzer also reports leaks, and hangs over 10 s).
#
# Exit status: 0 when no target found anything; 1 when one crashed, hung, leaked or broke a
# checked contract (the input is saved as BUILD_DIR/artifacts/<target>-crash-...; reproduce
# with BUILD_DIR/fuzz_<target> <that file>); 2 for a usage or build error.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=${1:-60}
if ! [[ $seconds =~ ^[0-9]+$ ]] || [ "$seconds" -lt 1 ]; then
  echo "usage: $0 [seconds per target, a positive integer; default 60]" >&2
  exit 2
fi
build=${BUILD_DIR:-$root/build-fuzz}
targets=${TARGETS:-"train_examples collection qrels"}
jobs=${JOBS:-$(nproc)}
if [ -z "${CXX:-}" ]; then
  CXX=$(command -v clang++ || command -v clang++-14 || true)
fi
if [ -z "$CXX" ] || ! "$CXX" --version 2>/dev/null | grep -qi clang; then
  echo "fuzz.sh needs clang++ with libFuzzer (Debian: apt-get install clang libclang-rt-dev); set CXX" >&2
  exit 2
fi

# shellcheck disable=SC2054  # the commas belong to -fsanitize's list
flags=(-std=c++17 -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
       -I"$root")
mkdir -p "$build/obj" "$build/artifacts"

echo "== build with $CXX"
started=$(date +%s)
# The reader once, then one small file per target; compiled in parallel.
pids=()
"$CXX" "${flags[@]}" -fsanitize=fuzzer-no-link -c "$root/retriever/text_data.cpp" -o "$build/obj/text_data.o" &
pids+=($!)
for target in $targets; do
  [ -f "$root/fuzz/fuzz_$target.cpp" ] || { echo "no fuzz target fuzz/fuzz_$target.cpp" >&2; exit 2; }
  "$CXX" "${flags[@]}" -fsanitize=fuzzer-no-link -c "$root/fuzz/fuzz_$target.cpp" -o "$build/obj/fuzz_$target.o" &
  pids+=($!)
  if [ "${#pids[@]}" -ge "$jobs" ]; then wait "${pids[0]}" || exit 2; pids=("${pids[@]:1}"); fi
done
for pid in "${pids[@]}"; do wait "$pid" || exit 2; done
for target in $targets; do
  "$CXX" "${flags[@]}" -fsanitize=fuzzer "$build/obj/fuzz_$target.o" "$build/obj/text_data.o" -o "$build/fuzz_$target"
done
echo "   built in $(( $(date +%s) - started )) s"

status=0
summary=()
for target in $targets; do
  corpus=$build/corpus/$target
  mkdir -p "$corpus"
  log=$build/fuzz_$target.log
  echo "== fuzz_$target for $seconds s (log: $log)"
  # -timeout: an input taking over 10 s is a hang; -rss_limit_mb: more than 2 GB is a blow-up.
  # Leak checking is libFuzzer's default (-detect_leaks=1).
  if "$build/fuzz_$target" "$corpus" "$root/fuzz/corpus/$target" -dict="$root/fuzz/readers.dict" \
       -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
       -artifact_prefix="$build/artifacts/$target-" >"$log" 2>&1; then
    result=ok
  else
    result="FAILED (see $log and $build/artifacts/)"
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
