#!/usr/bin/env bash
# `gradcache train --loss streaming` at a contrastive batch of 16,384 on WordNet, against the
# dense --loss infonce at the same batch and the streaming loss at a batch of 256 (the memory
# everything but the batch needs). Each run's peak RSS (summary.json) beside the loss memory
# predicted for it: dense, the N x N score matrix and its gradient (2 N^2 x 4 bytes); streaming,
# the documented bound of <gradcache/streaming_loss.h>: three tile x tile float buffers besides
# the representations and their gradients (3 tile^2 x 4 + 2 (N + M) d x 4 bytes).
# Writes docs/streaming_main.json and docs/streaming_main.log.
#
#   bash bench/streaming_main.sh     # about 3 minutes on the 2-core machine
#   BATCH=4096 bash bench/streaming_main.sh   # another batch (the docs/ files are written all the same)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/tools/gradcache
batch=${BATCH:-16384}
dim=32 tile=1024 chunk=256
model=(--dim "$dim" --layers 1 --heads 2 --ffn-dim 64)
work=$(mktemp -d /tmp/gradcache-streaming-main.XXXXXX)
trap 'rm -rf "$work"' EXIT
log=docs/streaming_main.log

run() {  # name, then flags: one run into $work/name; its command and progress lines to the log
  local name=$1; shift
  local cmd=("$bin" train "${model[@]}" --chunk-size "$chunk" --eval false --log-every 1 --output "$work/$name" "$@")
  echo "\$ ${cmd[*]/#$work\//RUN/}   # load average $(cut -d' ' -f1 /proc/loadavg)"
  SECONDS=0
  "${cmd[@]}" >"$work/$name.out" 2>&1 || { cat "$work/$name.out"; echo "streaming_main: $name failed" >&2; exit 1; }
  grep -E '^(step|train|wrote|peak)' "$work/$name.out" | sed "s#$work/#RUN/#g" || true
  echo "$name: ${SECONDS} s wall"
  echo
}

{
  echo "# bash bench/streaming_main.sh   # $(date -u +%Y-%m-%dT%H:%MZ), $(git rev-parse --short HEAD), batch $batch"
  # The tokenizer first, so that the measured runs do not train one (its memory is not the loss's).
  run tokenizer --batch-size 256 --steps 1
  tok=(--tokenizer "$work/tokenizer/tokenizer.model")
  run floor "${tok[@]}" --loss streaming --tile "$tile" --batch-size 256 --steps 2
  run streaming "${tok[@]}" --loss streaming --tile "$tile" --batch-size "$batch" --steps 2
  run infonce "${tok[@]}" --loss infonce --batch-size "$batch" --steps 2
} >"$log.tmp"

python3 - "$work" "$batch" "$dim" "$tile" "$log.tmp" >docs/streaming_main.json.tmp <<'PY'
import json, sys
work, n, d, tile, log = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
mib = 1024.0 ** 2
def summary(name):
    s = json.load(open(f"{work}/{name}/summary.json"))
    return {"peak_rss_mb": s["peak_rss_mb"], "wall_s": s["wall_s"], "final_loss": s["final_loss"], "steps": s["steps"]}
def streaming_bound(rows):  # M = N: no hard negatives
    t = min(tile, rows)
    return (3 * t * t * 4 + 2 * (rows + rows) * d * 4) / mib
runs = {name: summary(name) for name in ("floor", "streaming", "infonce")}
floor = runs["floor"]["peak_rss_mb"]
runs["floor"].update(batch_size=256, loss="streaming", predicted_loss_mb=streaming_bound(256))
runs["streaming"].update(batch_size=n, loss="streaming", predicted_loss_mb=streaming_bound(n))
runs["infonce"].update(batch_size=n, loss="infonce", predicted_loss_mb=2 * n * n * 4 / mib)
for r in runs.values():
    r["above_floor_mb"] = r["peak_rss_mb"] - floor
out = {
    "command": "bash bench/streaming_main.sh",
    "model": {"dim": d, "layers": 1, "heads": 2, "ffn_dim": 64},
    "chunk_size": 256, "tile": tile, "steps": 2, "data": "WordNet (built in)",
    "predicted_loss_mb": {
        "infonce": "2 N^2 x 4 bytes: the score matrix and its gradient",
        "streaming": "3 tile^2 x 4 + 2 (N + M) d x 4 bytes: three tile buffers, the representations and their "
                     "gradients (<gradcache/streaming_loss.h>)"},
    "peak_rss_mb": "ru_maxrss of the whole process (summary.json); above_floor_mb: minus the 256-pair run's",
    "streaming_within_bound": runs["streaming"]["above_floor_mb"] <= runs["streaming"]["predicted_loss_mb"],
    "runs": runs,
}
json.dump(out, sys.stdout, indent=2)
print()
for name, r in runs.items():
    print(f"{name:9s} N={r['batch_size']:6d}  peak {r['peak_rss_mb']:7.0f} MiB  above floor {r['above_floor_mb']:6.0f} MiB"
          f"  predicted loss {r['predicted_loss_mb']:7.1f} MiB  {r['wall_s']:.0f} s  loss {r['final_loss']:.4f}",
          file=open(log, "a"))
PY
mv docs/streaming_main.json.tmp docs/streaming_main.json
mv "$log.tmp" "$log"
tail -3 "$log"
