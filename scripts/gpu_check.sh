#!/usr/bin/env bash
# The CUDA check, for a machine with one NVIDIA GPU that has PyTorch 2.x with CUDA, nvcc and CMake
# but no package registry and nothing else of ours. It builds the core library and its tests
# against the torch found there, runs the CUDA tests (tests/core/test_cuda.cpp: RNG replay of CUDA
# dropout, cache vs full-batch gradients on the GPU, fp16 + GradScaler, bf16, the peak memory of
# a cache step at batch 4096, an NCCL group), then the rest of the core tests, and writes
# OUT/gpu_check.json with the versions, each test's result and the figures the tests recorded.
#
#   bash scripts/gpu_check.sh --prepare   # here, first: GoogleTest's sources and Gloo's headers
#                                         # into third_party/ (ignored by git; ~4 MB), which the
#                                         # GPU machine lacks
#   bash scripts/gpu_check.sh OUT         # there: build in build-gpu/, results in OUT/
#
# With the device tool: run(command="bash scripts/gpu_check.sh $OUT", carry=["third_party"],
# timeout_s=560). It stays within 10 minutes: the build takes 1-3 minutes on 16 cores and every
# later step has its own time limit. Here, without a GPU, it is a dry run: everything builds and
# the CUDA tests report SKIPPED (GRADCACHE_PYTHON=.venv/bin/python selects the project's torch).
#
# Environment: GRADCACHE_PYTHON (default python3: the Python whose torch to build against),
# BUILD_DIR (default build-gpu), JOBS (default nproc), BUILD_TIMEOUT (seconds the build may take,
# default 300: enough on the GPU machine's 16 cores; a dry run on 2 cores needs about 900).
# Exit status: 0 when it built and no test failed (skips included); 1 otherwise; 2 for usage.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
third=$root/third_party

if [ "${1:-}" = --prepare ]; then
  set -e
  [ -d /usr/src/googletest ] || { echo "no /usr/src/googletest: apt-get install libgtest-dev" >&2; exit 2; }
  [ -d /usr/include/gloo ] || { echo "no /usr/include/gloo: apt-get install libgloo-dev" >&2; exit 2; }
  rm -rf "$third/googletest" "$third/gloo-include"
  mkdir -p "$third/gloo-include"
  cp -r /usr/src/googletest "$third/googletest"
  cp -r /usr/include/gloo "$third/gloo-include/gloo"
  echo "gpu_check: prepared $third ($(du -sh "$third" | cut -f1)); carry it: carry=[\"third_party\"]"
  exit 0
fi
[ $# -eq 1 ] && [ "${1:0:1}" != - ] || { echo "usage: $0 --prepare | $0 OUT_DIR" >&2; exit 2; }
out=$1
mkdir -p "$out"
python=${GRADCACHE_PYTHON:-python3}
build=${BUILD_DIR:-$root/build-gpu}
jobs=${JOBS:-$(nproc)}
log=$out/gpu_check.log
: >"$log"
say() { echo "gpu_check: $*" | tee -a "$log"; }
[ -f "$third/googletest/CMakeLists.txt" ] || { say "no $third/googletest: run '$0 --prepare' here and carry third_party"; exit 2; }

say "torch and the GPU, as $python sees them"
"$python" - >"$out/versions.json" 2>>"$log" <<'PY' || { say "no torch in $python"; exit 1; }
import json, platform, subprocess, torch
info = {"torch": torch.__version__, "torch_cuda": torch.version.cuda, "cuda_available": torch.cuda.is_available(),
        "python": platform.python_version(), "cmake_prefix_path": torch.utils.cmake_prefix_path}
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    info.update(gpu=p.name, gpu_memory_bytes=p.total_memory, capability=f"{p.major}.{p.minor}")
for tool, args in (("nvcc", ["nvcc", "--version"]), ("cmake", ["cmake", "--version"])):
    try:
        lines = subprocess.run(args, capture_output=True, text=True).stdout.strip().splitlines()
        info[tool] = lines[-1] if tool == "nvcc" else lines[0]  # nvcc's version is its last line, cmake's its first
    except OSError:
        info[tool] = None
print(json.dumps(info, indent=1))
PY
cat "$out/versions.json" | tee -a "$log"
prefix=$("$python" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
started=$SECONDS
say "configure $build"
timeout 120 cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  "-DCMAKE_PREFIX_PATH=$prefix;$(dirname "$(dirname "$prefix")")" -DGRADCACHE_PYTHON="$python" \
  -DGRADCACHE_BUILD_TOOLS=OFF -DGRADCACHE_BUILD_BENCH=OFF -DGRADCACHE_BUILD_EXAMPLES=OFF -DGRADCACHE_BUILD_TESTS=ON \
  -DGRADCACHE_BUILD_HF=OFF \
  -DGRADCACHE_GTEST_SOURCE_DIR="$third/googletest" -DGRADCACHE_GLOO_INCLUDE_DIR="$third/gloo-include" \
  -DGRADCACHE_USE_CCACHE=OFF >>"$log" 2>&1 || { say "configure failed (see $log)"; tail -30 "$log"; exit 1; }
say "build gradcache_tests with $jobs jobs"
timeout "${BUILD_TIMEOUT:-300}" cmake --build "$build" --parallel "$jobs" --target gradcache_tests >>"$log" 2>&1 \
  || { say "build failed (see $log)"; tail -40 "$log"; exit 1; }
build_seconds=$((SECONDS - started))
say "built in $build_seconds s"

# The CUDA tests first (their figures are the point), then the other core tests under a limit.
status=0
say "CUDA tests"
timeout 150 "$build/tests/core/gradcache_tests" --gtest_filter='Cuda.*' --gtest_output="json:$out/cuda_tests.json" \
  >>"$log" 2>&1 || status=1
say "the other core tests"
timeout 240 "$build/tests/core/gradcache_tests" --gtest_filter='-Cuda.*' --gtest_output="json:$out/core_tests.json" \
  >"$out/core_tests.log" 2>&1 || status=1
tail -3 "$out/core_tests.log" | tee -a "$log"

"$python" - "$out" "$build_seconds" "$status" >"$out/gpu_check.json" <<'PY'
import json, os, sys
out, build_seconds, status = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def results(name):
    path = os.path.join(out, name)
    if not os.path.exists(path):
        return None
    tests = []
    for suite in json.load(open(path)).get("testsuites", []):
        for t in suite.get("testsuite", []):
            failed = bool(t.get("failures"))
            skipped = t.get("result") == "SKIPPED" or t.get("status") == "NOTRUN"
            entry = {"name": f"{suite['name']}.{t['name']}", "result": "FAILED" if failed else "SKIPPED" if skipped else "PASSED",
                     "seconds": float(str(t.get("time", "0")).rstrip("s") or 0)}
            figures = {k: v for k, v in t.items() if k not in {"name", "file", "line", "status", "result", "timestamp", "time", "classname", "failures"}}
            if figures:
                entry["figures"] = figures
            if failed:
                entry["failures"] = [f.get("failure", "")[:400] for f in t["failures"]]
            tests.append(entry)
    return tests
def counts(tests):
    return None if tests is None else {r: sum(t["result"] == r for t in tests) for r in ("PASSED", "FAILED", "SKIPPED")}
cuda, core = results("cuda_tests.json"), results("core_tests.json")
print(json.dumps({"command": "bash scripts/gpu_check.sh OUT", "versions": json.load(open(os.path.join(out, "versions.json"))),
                  "build_seconds": build_seconds, "cuda_tests": cuda, "cuda_counts": counts(cuda),
                  "core_counts": counts(core), "ok": status == 0}, indent=1))
PY
say "wrote $out/gpu_check.json"
grep -E '"(PASSED|FAILED|SKIPPED)"' "$out/gpu_check.json" | tr -s ' ' | tee -a "$log" >/dev/null
"$python" -c 'import json,sys; j=json.load(open(sys.argv[1])); print("gpu_check: CUDA tests", j["cuda_counts"], "other core tests", j["core_counts"])' "$out/gpu_check.json" | tee -a "$log"
exit "$status"
