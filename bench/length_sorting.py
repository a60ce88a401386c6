#!/usr/bin/env python3
"""Length sorting and token-budget chunks on the WordNet data, measured with the program.

    python3 bench/length_sorting.py [--steps 8] [--out docs/figures/length_sorting.json]

Trains the default retriever for a few steps (batch 1024, chunks of 64, no evaluation) three
ways: batches in data order (--sort-by-length false), sorted by length (the default), and
sorted with chunks of at most 768 tokens (--chunk-tokens 768); the runs alternate so that a
shared machine's drifts hit all alike. Reports training pairs/s (from each run's
metrics.jsonl: pairs trained over the loop's elapsed time), the CPU time of the whole run
(loading and tokenizer training included) and its peak RSS, and writes them as JSON.
The binary: $GRADCACHE, default build/tools/gradcache.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = [
    ("in data order", ["--sort-by-length", "false"]),
    ("sorted by length (default)", []),
    ("sorted, chunks of <= 768 tokens", ["--chunk-tokens", "768"]),
]


def run_once(binary, flags, steps, workdir):
    out = Path(workdir) / "run"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cmd = [binary, "train", "--output", str(out), "--overwrite", "--steps", str(steps), "--eval", "false",
           "--log-every", "1"] + flags
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]
    last = [m for m in lines if "loss" in m][-1]  # training lines (dev evaluations' lines hold "dev")
    summary = json.loads((out / "summary.json").read_text())
    return {
        "pairs_per_s": last["step"] * summary["batch_size"] / last["elapsed_s"],
        "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "peak_rss_mb": summary["peak_rss_mb"],
        "command": " ".join(["gradcache"] + cmd[1:]),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=1, help="runs of each setting (medians reported)")
    parser.add_argument("--out", default=str(ROOT / "docs" / "figures" / "length_sorting.json"))
    args = parser.parse_args()
    binary = os.environ.get("GRADCACHE", str(ROOT / "build" / "tools" / "gradcache"))
    runs = {name: [] for name, _ in SETTINGS}
    with tempfile.TemporaryDirectory() as workdir:
        for _ in range(args.rounds):
            for name, flags in SETTINGS:
                runs[name].append(run_once(binary, flags, args.steps, workdir))
    rows = []
    for name, _ in SETTINGS:
        results = sorted(runs[name], key=lambda r: r["pairs_per_s"])
        median = results[len(results) // 2]
        rows.append(dict(setting=name, runs=runs[name], **{k: median[k] for k in ("pairs_per_s", "cpu_s", "peak_rss_mb")}))
    base = rows[0]["pairs_per_s"]
    for row in rows:
        row["speedup"] = row["pairs_per_s"] / base
    report = {"steps": args.steps, "rounds": args.rounds, "load_average": os.getloadavg()[0], "rows": rows}
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    for row in rows:
        print(f"{row['setting']:35s} {row['pairs_per_s']:7.0f} pairs/s ({row['speedup']:.2f}x)  "
              f"CPU {row['cpu_s']:6.1f} s  peak RSS {row['peak_rss_mb']:5.0f} MiB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
