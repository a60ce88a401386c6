#!/usr/bin/env bash
# `gradcache train --loss streaming` at a contrastive batch of 16,384 on WordNet, against the
# dense --loss infonce at the same batch and the streaming loss at a batch of 256 (the memory
# everything but the batch needs); then the loss step alone at the same N, d and tile
# (gradcache-bench streaming: tensor bytes beyond the representations, CpuMemoryTracker).
# Each beside the loss memory predicted for it: dense, the N x N score matrix and its gradient
# (2 N^2 x 4 bytes); streaming, the bound of <gradcache/streaming_loss.h> (three tile x tile
# float buffers besides O((N + M) d)), with the constant docs/figures/streaming_bench.json shows (at
# most 2.5 copies of the N + M representations up to N = 65,536): 3 tile^2 x 4 + 3 (N + M) d x 4
# bytes. Writes docs/figures/streaming_main.json and docs/figures/streaming_main.log.
#
#   bash bench/streaming_main.sh     # about 5 minutes on the 2-core machine
#   BATCH=4096 bash bench/streaming_main.sh   # another batch (the docs/ files are written all the same)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/tools/gradcache
bench=build/bench/gradcache-bench
batch=${BATCH:-16384}
dim=32 tile=1024 chunk=256
model=(--dim "$dim" --layers 1 --heads 2 --ffn-dim 64 --vocab-size 1000 --query-max-len 16 --passage-max-len 16)
work=$(mktemp -d /tmp/gradcache-streaming-main.XXXXXX)
trap 'rm -rf "$work"' EXIT
log=docs/figures/streaming_main.log

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
  run tokenizer --batch-size 16 --steps 1
  tok=(--tokenizer "$work/tokenizer/tokenizer.model")
  run floor "${tok[@]}" --loss streaming --tile "$tile" --batch-size 256 --steps 2
  run streaming "${tok[@]}" --loss streaming --tile "$tile" --batch-size "$batch" --steps 2
  run infonce "${tok[@]}" --loss infonce --batch-size "$batch" --steps 2
  echo "\$ $bench streaming --sizes $batch --dim $dim --tile $tile --single-run-from $batch --json"
  "$bench" streaming --sizes "$batch" --dim "$dim" --tile "$tile" --single-run-from "$batch" --json \
    >"$work/loss_alone.json" 2>"$work/loss_alone.err" || { cat "$work/loss_alone.err"; exit 1; }
  grep -E '^ *[0-9,]+ \|' "$work/loss_alone.err" || true
  echo
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
    return (3 * t * t * 4 + 3 * (rows + rows) * d * 4) / mib
def dense_bound(rows):
    return 2 * rows * rows * 4 / mib
runs = {name: summary(name) for name in ("floor", "streaming", "infonce")}
floor = runs["floor"]["peak_rss_mb"]
runs["floor"].update(batch_size=256, loss="streaming", predicted_loss_mb=streaming_bound(256))
runs["streaming"].update(batch_size=n, loss="streaming", predicted_loss_mb=streaming_bound(n))
runs["infonce"].update(batch_size=n, loss="infonce", predicted_loss_mb=dense_bound(n))
for r in runs.values():
    r["above_floor_mb"] = r["peak_rss_mb"] - floor
alone = {r["loss"]: r for r in json.load(open(f"{work}/loss_alone.json"))["scenarios"]["streaming"]["results"]
         if r["n"] == n}
loss_step = {
    loss: {"peak_mb": alone[loss]["peak_bytes"] / mib, "time_s": alone[loss]["time_s"],
           "predicted_mb": bound(n)}
    for loss, bound in (("dense", dense_bound), ("streaming", streaming_bound))}
out = {
    "command": "bash bench/streaming_main.sh",
    "model": {"dim": d, "layers": 1, "heads": 2, "ffn_dim": 64, "vocab_size": 1000, "query_max_len": 16,
              "passage_max_len": 16},
    "batch_size": n, "chunk_size": 256, "tile": tile, "steps": 2, "data": "WordNet (built in)",
    "predicted_loss_mb": {
        "dense": "2 N^2 x 4 bytes: the score matrix and its gradient",
        "streaming": "3 tile^2 x 4 + 3 (N + M) d x 4 bytes: three tile buffers besides O((N + M) d) "
                     "(<gradcache/streaming_loss.h>), the constant from docs/figures/streaming_bench.json"},
    "runs_note": "peak_rss_mb: ru_maxrss of the whole `gradcache train` process (summary.json); "
                 "above_floor_mb: minus the 256-pair run's",
    "runs": runs,
    "loss_step_note": "gradcache-bench streaming at the same N, d and tile: forward + backward of the loss "
                      "alone, tensor bytes beyond the representations (CpuMemoryTracker)",
    "loss_step": loss_step,
    "streaming_within_bound": loss_step["streaming"]["peak_mb"] <= loss_step["streaming"]["predicted_mb"],
}
json.dump(out, sys.stdout, indent=2)
print()
for name, r in runs.items():
    print(f"{name:9s} N={r['batch_size']:6d}  peak {r['peak_rss_mb']:7.0f} MiB  above floor {r['above_floor_mb']:6.0f} MiB"
          f"  predicted loss {r['predicted_loss_mb']:7.1f} MiB  {r['wall_s']:.0f} s  loss {r['final_loss']:.4f}",
          file=open(log, "a"))
for loss, r in loss_step.items():
    print(f"loss step alone, {loss:9s} N={n}: peak {r['peak_mb']:7.1f} MiB  predicted {r['predicted_mb']:7.1f} MiB"
          f"  {r['time_s']:.2f} s", file=open(log, "a"))
PY
mv docs/streaming_main.json.tmp docs/figures/streaming_main.json
mv "$log.tmp" "$log"
tail -3 "$log"
