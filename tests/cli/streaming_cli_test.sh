#!/usr/bin/env bash
# `gradcache train --loss streaming` / `streaming-symmetric` with --tile: quick runs end with a
# finite loss and save their loss and tile in config.json; a bad --tile is refused before any
# work, naming the flag.
# Usage: streaming_cli_test.sh GRADCACHE_BINARY WORK_DIR
set -uo pipefail
source "$(dirname "$0")/cli_common.sh"
source "$(dirname "$0")/tiny_task.sh"

finite_loss() {  # run directory, loss, tile: summary.json's final loss is finite, config.json says loss and tile
  python3 - "$1" "$2" "$3" <<'PY' || fail "$1: see above"
import json, math, sys
run, loss, tile = sys.argv[1], sys.argv[2], int(sys.argv[3])
summary = json.load(open(run + "/summary.json"))
final = summary.get("final_loss")
assert isinstance(final, (int, float)) and math.isfinite(final) and final > 0, ("final_loss", final)
config = json.load(open(run + "/config.json"))
assert config["loss"] == loss and config["tile_size"] == tile, (config["loss"], config["tile_size"])
PY
}

"$bin" train --help >"$work/help.out" 2>&1
grep -q "streaming-symmetric" "$work/help.out" || fail "train --help does not list --loss streaming-symmetric"
grep -q -- "--tile" "$work/help.out" || fail "train --help does not list --tile"

# The quick run on WordNet, as the README shows it.
"$bin" train --quick --loss streaming --tile 16 --eval false --output "$work/run" >"$work/run.out" 2>"$work/run.err"
expect_status 0 $? "train --quick --loss streaming --tile 16"
finite_loss "$work/run" streaming 16

# The symmetric one, on the tiny task, with tiles smaller than the batch of 16 and its passages.
write_tiny_task "$work"
"$bin" train "${tiny_flags[@]}" --steps 4 --loss streaming-symmetric --tile 5 --output "$work/sym" \
  >"$work/sym.out" 2>"$work/sym.err"
expect_status 0 $? "train --loss streaming-symmetric --tile 5"
finite_loss "$work/sym" streaming-symmetric 5

# Refused before any work: nothing written under --output.
for tile in 0 -3; do
  "$bin" train --quick --loss streaming --tile "$tile" --output "$work/tile$tile" >/dev/null 2>"$work/tile$tile.err"
  expect_status 1 $? "--tile $tile"
  grep -q -- "--tile must be positive" "$work/tile$tile.err" || fail "--tile $tile: no message naming --tile"
  [ -e "$work/tile$tile" ] && fail "--tile $tile: wrote $work/tile$tile before refusing"
done
"$bin" train --quick --tile many --output "$work/tilemany" >/dev/null 2>"$work/tilemany.err"
expect_status 2 $? "--tile many"
grep -q -- "--tile" "$work/tilemany.err" || fail "--tile many: no message naming --tile"
# A name that is not a --loss cannot be read, as "many" cannot as a --tile: a usage error (2).
"$bin" train --quick --loss stream --output "$work/badloss" >/dev/null 2>"$work/badloss.err"
expect_status 2 $? "--loss stream"
grep -q -- "--loss" "$work/badloss.err" || fail "--loss stream: no message naming --loss"
echo "streaming cli: all checks passed"
