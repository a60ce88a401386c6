#!/usr/bin/env python3
"""Peak memory and start-up of `gradcache train` against the size of its training file.

    .venv/bin/python bench/data_scale.py [--sizes 1e5,1e6,1e7,5e7] [--format-pairs 1e6] [--steps 20]
        [--out docs/figures/data_scale.json]

Writes synthetic TSV pair files of each size to a scratch directory on local disk ($TMPDIR;
about 70 bytes a pair: 10^7 pairs are 0.7 GB), deleted afterwards, and trains a small built-in
encoder on each for --steps steps (batch 64, chunks of 32, 1 layer of width 64, no evaluation)
with one tokenizer trained beforehand on the smallest file (--tokenizer, so that every run does
the same work before its first step). Reports each run's peak RSS (summary.json), its start-up
(the seconds before the first step: the program's wall time less the loop's elapsed_s) and
start-up per GB of file, and the steps' pairs/s.
Then the same --format-pairs pairs as TSV, JSONL, Parquet (pyarrow, row groups of 64k rows) and a
datasets save_to_disk directory (Arrow IPC shards): the start-up of each (its reading: pairs/s
read) against the steps' consumption (pairs/s trained), and each run's losses must be those of
the TSV run (the same batches).
The binary: $GRADCACHE, default build/tools/gradcache.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORDS = ("river stone light garden winter market silver forest window paper music letter bridge "
         "engine harbor meadow candle mirror thunder valley").split()


def write_pairs(path, n, seed=0):
    rng = random.Random(seed)
    with open(path, "w", buffering=1 << 22) as f:
        block = []
        for i in range(n):
            words = rng.sample(WORDS, 4)
            block.append(f"which {words[0]} {words[1]} is number {i}\tthe {words[1]} {words[0]} {words[2]} {words[3]} of {i}\n")
            if len(block) == 100000:
                f.write("".join(block))
                block.clear()
        f.write("".join(block))


def write_formats(tsv, scratch):
    """The pairs of `tsv` as JSONL, Parquet and a save_to_disk directory: {name: (path, seconds to write)}."""
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq
    queries, positives = [], []
    with open(tsv) as f:
        for line in f:
            q, p = line.rstrip("\n").split("\t")
            queries.append(q)
            positives.append(p)
    made = {}
    start = time.monotonic()
    with open(scratch / "pairs.jsonl", "w", buffering=1 << 22) as f:
        for q, p in zip(queries, positives):
            f.write(json.dumps({"query": q, "positives": [p]}) + "\n")
    made["jsonl"] = (scratch / "pairs.jsonl", time.monotonic() - start)
    start = time.monotonic()
    pq.write_table(pa.table({"anchor": queries, "positive": positives}), scratch / "pairs.parquet", row_group_size=1 << 16)
    made["parquet"] = (scratch / "pairs.parquet", time.monotonic() - start)
    start = time.monotonic()
    datasets.Dataset.from_dict({"query": queries, "positives": [[p] for p in positives]}).save_to_disk(
        str(scratch / "pairs_dataset"), num_shards=4)
    made["arrow (datasets save_to_disk, 4 shards)"] = (scratch / "pairs_dataset", time.monotonic() - start)
    return made


def size_of(path):
    path = Path(path)
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.is_dir() else path.stat().st_size


def losses(out):
    return [json.loads(line)["loss"] for line in (out / "metrics.jsonl").read_text().splitlines()
            if line.strip() and "loss" in json.loads(line)]


def train(binary, pairs, tokenizer, steps, out):
    cmd = [binary, "train", "--train-file", str(pairs), "--tokenizer", str(tokenizer), "--steps", str(steps),
           "--batch-size", "64", "--chunk-size", "32", "--layers", "1", "--dim", "64", "--heads", "2",
           "--ffn-dim", "128", "--eval", "false", "--log-every", "1", "--output", str(out), "--overwrite"]
    start = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.monotonic() - start
    steps_ = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]
    steps_ = [m for m in steps_ if "loss" in m]
    summary = json.loads((out / "summary.json").read_text())
    loop = steps_[-1]["elapsed_s"]
    return {"peak_rss_mb": summary["peak_rss_mb"], "wall_s": wall, "startup_s": wall - loop,
            "pairs_per_s": steps_[-1]["step"] * 64 / loop,
            "command": " ".join(["gradcache"] + cmd[1:3] + ["PAIRS"] + cmd[4:5] + ["TOKENIZER"] + cmd[6:])}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1e5,1e6,1e7,5e7")
    parser.add_argument("--format-pairs", default="1e6", help="pairs of the formats' comparison (0: none)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--out", default=str(ROOT / "docs" / "figures" / "data_scale.json"))
    args = parser.parse_args()
    binary = os.environ.get("GRADCACHE", str(ROOT / "build" / "tools" / "gradcache"))
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    rows = []
    scratch = Path(tempfile.mkdtemp(prefix="gradcache-data-scale-"))
    try:
        tokenizer = None
        for n in sizes:
            pairs = scratch / f"pairs-{n}.tsv"
            start = time.monotonic()
            write_pairs(pairs, n)
            made = time.monotonic() - start
            if tokenizer is None:  # trained once, on the smallest file, by a run of one step
                subprocess.run([binary, "train", "--train-file", str(pairs), "--vocab-size", "2000", "--steps", "1",
                                "--eval", "false", "--output", str(scratch / "tok"), "--overwrite"], check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                tokenizer = scratch / "tok" / "tokenizer.model"
            size_gb = pairs.stat().st_size / 1e9
            row = {"pairs": n, "file_gb": size_gb, "write_s": made, **train(binary, pairs, tokenizer, args.steps, scratch / "run")}
            row["startup_s_per_gb"] = row["startup_s"] / size_gb
            rows.append(row)
            pairs.unlink()
            print(f"{n:>11,} pairs ({size_gb:5.2f} GB): peak RSS {row['peak_rss_mb']:7.0f} MiB, start-up "
                  f"{row['startup_s']:6.1f} s ({row['startup_s_per_gb']:5.1f} s/GB), {row['pairs_per_s']:6.0f} pairs/s",
                  file=sys.stderr)
        format_rows = []
        n = int(float(args.format_pairs))
        if n > 0:
            tsv = scratch / "pairs.tsv"
            write_pairs(tsv, n)
            files = {"tsv": (tsv, 0.0), **write_formats(tsv, scratch)}
            reference = None
            for name, (path, write_s) in files.items():
                row = {"format": name, "pairs": n, "bytes": size_of(path), "write_s": write_s,
                       **train(binary, path, tokenizer, args.steps, scratch / "run")}
                row["read_pairs_per_s"] = n / row["startup_s"]
                run_losses = losses(scratch / "run")
                reference = reference or run_losses
                row["same_losses_as_tsv"] = run_losses == reference
                format_rows.append(row)
                print(f"{name:>40}: {row['bytes'] / 1e6:7.1f} MB, start-up {row['startup_s']:5.1f} s "
                      f"({row['read_pairs_per_s']:9.0f} pairs/s read), {row['pairs_per_s']:6.0f} pairs/s trained, "
                      f"peak RSS {row['peak_rss_mb']:5.0f} MiB, same losses: {row['same_losses_as_tsv']}", file=sys.stderr)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for row in rows:
        row["peak_rss_vs_smallest"] = row["peak_rss_mb"] / rows[0]["peak_rss_mb"]
    report = {"steps": args.steps, "load_average": os.getloadavg()[0], "cpus": os.cpu_count(), "rows": rows,
              "formats": format_rows}
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
