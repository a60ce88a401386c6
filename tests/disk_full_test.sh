#!/usr/bin/env bash
# Fault injection: the disk fills up while `gradcache train` writes its checkpoint (a small
# tmpfs, so this needs root). The run must end with status 1 and a message that says the disk
# is full, leave no temporary file behind, and keep the checkpoint that was there before.
# Without root (or where mounting is not allowed) it exits 77, which ctest reports as SKIPPED.
#
#   bash tests/disk_full_test.sh path/to/gradcache WORK_DIR
set -u
bin=$1
work=$2
rm -rf "$work"
mkdir -p "$work/disk"
if [ "$(id -u)" -ne 0 ] || ! mount -t tmpfs -o size=16m tmpfs "$work/disk" 2>/dev/null; then
  echo "SKIPPED: mounting a small tmpfs needs root"
  exit 77
fi
trap 'umount "$work/disk"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run="$work/disk/run"

"$bin" train --quick --steps 2 --eval false --output "$run" >"$work/first.log" 2>&1 ||
  fail "the first run failed: $(tail -3 "$work/first.log")"
before=$(md5sum <"$run/checkpoint.pt")

# Fill the disk but for 512 KiB: the new tokenizer and config fit, the checkpoint does not.
avail=$(df --output=avail -k "$work/disk" | tail -1)
dd if=/dev/zero of="$work/disk/filler" bs=1k count=$((avail - 512)) 2>/dev/null
"$bin" train --quick --steps 2 --eval false --overwrite --output "$run" >"$work/full.log" 2>&1
status=$?
[ "$status" -eq 1 ] || fail "status $status, expected 1: $(tail -3 "$work/full.log")"
grep -q "disk full" "$work/full.log" || fail "no message about the full disk: $(tail -3 "$work/full.log")"
if ls "$run"/*.tmp >/dev/null 2>&1; then fail "a temporary file is left: $(ls "$run")"; fi
[ "$(md5sum <"$run/checkpoint.pt")" = "$before" ] || fail "the checkpoint that was there before changed"
echo "disk full while saving a checkpoint: status 1, a clear message, no temporary file, the previous checkpoint intact"
