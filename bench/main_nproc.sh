#!/usr/bin/env bash
# The README's main job with 1 process and with --nproc auto, one after the other, each into a
# fresh run directory: its last lines (the table) and its wall time. Writes docs/figures/main_nproc.log.
#
#   bash bench/main_nproc.sh        # about 10 minutes on the 2-core machine
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
out=docs/figures/main_nproc.log
{
  for n in 1 auto; do
    echo "\$ bash scripts/main.sh --nproc $n   # $(date -u +%Y-%m-%dT%H:%MZ), load average $(cut -d' ' -f1 /proc/loadavg)"
    SECONDS=0
    bash scripts/main.sh --nproc "$n" 2>&1 | grep -v '^ninja'
    echo "wall: ${SECONDS} s (--nproc $n)"
    echo
  done
} >"$out.tmp"
mv "$out.tmp" "$out"
cat "$out"
