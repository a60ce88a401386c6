#!/usr/bin/env bash
# Runs one GoogleTest suite for ctest (tests/gtest_suites.cmake): BINARY --gtest_filter=SUITE.*.
# Exits as the binary does, except 77 (ctest's SKIP_RETURN_CODE) when it passed without running
# any case: every case of the suite skipped (no GPU, no Python packages, no fixture).
output=$("$@" 2>&1)
status=$?
printf '%s\n' "$output"
if [ "$status" = 0 ] && grep -q '^\[  PASSED  \] 0 tests' <<<"$output"; then exit 77; fi
exit "$status"
