#!/usr/bin/env bash
# Builds the library, the retriever library, the gradcache program, their tests and the fuzz
# targets with clang, AddressSanitizer and UndefinedBehaviorSanitizer in a separate build
# directory, and runs the tests with ctest. Part of CI (.ci/run), where it is also the second
# LibTorch configuration: it builds against Debian's LibTorch 1.13 (GRADCACHE_LIBTORCH=1.13, the
# default here; the README's build uses LibTorch 2.x from the torch wheel), so CI compiles every
# source of the library, the retriever and the CLI against both versions and runs their tests
# on both.
#
#   scripts/sanitize.sh              # build-asan/: build, then run the tests
#   scripts/sanitize.sh --build-only # build only (scripts/fuzz.sh uses this)
#
# Environment:
#   BUILD_DIR   build directory (default: build-asan under the repository root)
#   SANITIZERS  the -fsanitize list (default: address,undefined)
#   CXX         a clang++ (default: clang++); libFuzzer needs clang
#   JOBS        parallel compile jobs (default: nproc)
#   NICE        nice level for the build (default: 10; the machine is shared)
#   CTEST_ARGS  extra ctest arguments (e.g. "-R Tokenizer")
#   GRADCACHE_LIBTORCH  1.13 (default: Debian's) or wheel (LibTorch 2.x from .venv); see
#               scripts/libtorch.sh
#
# What runs: the core tests (gradcache_tests), the distributed tests (distributed_tests: two
# processes over Gloo), the retriever tests (retriever_tests: the readers, settings, tokenizer,
# training steps and the trainer end to end through the library the program is a thin layer
# over), the Hugging Face tests (tokenizer_tests: every tokenizer component and kind; hf_tests:
# safetensors, BERT, sentence-transformers modules; their live comparisons skip without the
# Python packages) and the program itself (the
# shell tests of tests/cli: every command, signals, kill-and-resume, a full disk); ctest labels
# core|distributed|retriever|hf|cli|faults. Checks that need the 2.x Python packages report
# SKIPPED or skip their part here. Not run here: the package and bench tests.
#
# LibTorch is not instrumented. The tokenizer loads sentencepiece into a link-map namespace of
# its own (retriever/model/tokenizer.cpp); that works under ASan (RTLD_DEEPBIND, used before, does
# not), so the tokenizer's code is covered too.
#
# Exit status: 0 when everything built and every test passed; otherwise the failing step's.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export GRADCACHE_LIBTORCH=${GRADCACHE_LIBTORCH:-1.13}
if [ "$GRADCACHE_LIBTORCH" = 1.13 ]; then bash "$root/scripts/setup.sh" --libtorch-1.13; else bash "$root/scripts/setup.sh"; fi
source "$root/scripts/libtorch.sh"
build=${BUILD_DIR:-$root/build-asan}
sanitizers=${SANITIZERS:-address,undefined}
jobs=${JOBS:-$(nproc)}
nice_level=${NICE:-10}
build_only=0
case "${1:-}" in
  "") ;;
  --build-only) build_only=1 ;;
  *) echo "usage: $0 [--build-only]" >&2; exit 2 ;;
esac
if [ -z "${CXX:-}" ]; then
  CXX=$(command -v clang++ || command -v clang++-14 || true)
fi
if [ -z "$CXX" ] || ! "$CXX" --version 2>/dev/null | grep -qi clang; then
  echo "sanitize.sh needs clang++ with libFuzzer (Debian: apt-get install clang libclang-rt-14-dev); set CXX" >&2
  exit 2
fi
started=$(date +%s)

generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi

# -O1 (from GRADCACHE_SANITIZE): plain -O0 makes instrumented loops very slow. Line tables are
# all the sanitizers' stack traces need (full -g makes objects twice the size).
echo "== configure $build ($CXX; sanitizers: $sanitizers; LibTorch: $libtorch)"
nice -n "$nice_level" cmake -S "$root" -B "$build" "${generator[@]}" "${torch_cmake_args[@]}" \
  -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only \
  -DGRADCACHE_SANITIZE="$sanitizers" -DGRADCACHE_BUILD_FUZZ=ON \
  -DGRADCACHE_BUILD_TESTS=ON -DGRADCACHE_BUILD_TOOLS=ON \
  -DGRADCACHE_BUILD_EXAMPLES=OFF -DGRADCACHE_BUILD_BENCH=OFF >/dev/null

echo "== build"
fuzz_targets=$(cd "$root/fuzz" && ls fuzz_*.cpp | sed 's/\.cpp$//')
# shellcheck disable=SC2086  # one word per target
nice -n "$nice_level" cmake --build "$build" --parallel "$jobs" \
  --target gradcache_tests distributed_tests retriever_tests hf_tests tokenizer_tests gradcache_cli compare_checkpoints $fuzz_targets
built=$(date +%s)
echo "   built in $((built - started)) s"
[ "$build_only" = 1 ] && exit 0

# ASan: leak detection stays on. Measured (Debian 12, LibTorch 1.13): LeakSanitizer reports
# nothing at exit for the test programs or the gradcache program, so LibTorch's process-lifetime
# allocations are still reachable and need no suppression; if one ever shows up, add an
# LSAN_OPTIONS=suppressions=... file for it rather than detect_leaks=0.
# detect_stack_use_after_return catches references to dead stack frames (instrumented code only).
# UBSan: a stack trace per report; -fno-sanitize-recover already makes the first one fatal.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

echo "== test (ASAN_OPTIONS=$ASAN_OPTIONS)"
status=0
# shellcheck disable=SC2086  # CTEST_ARGS is a list of words
(cd "$build" && ctest -L 'core|distributed|retriever|hf|cli|faults' --output-on-failure --parallel "$jobs" --timeout 900 ${CTEST_ARGS:-}) || status=$?
finished=$(date +%s)
echo "== sanitize.sh: build $((built - started)) s, tests $((finished - built)) s, total $((finished - started)) s; ctest status $status"
exit "$status"
