#!/usr/bin/env python3
"""Summarises the runs of bench/libtorch_versions.sh into one JSON object (on stdout): per
LibTorch version, the main job's pairs/s (median over the logged steps after the first two, per
run, then the median of the runs), gradcache-bench's step times and peak memory (the median of
the runs), and the test suite's wall time; and 2.x / 1.13 ratios.

    python bench/libtorch_versions.py --work DIR --reps N --command "..."
"""
import argparse
import glob
import json
import os
import re
import statistics

VERSIONS = ("2.x", "1.13")


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def training(work, v):
    runs = []
    for log in sorted(glob.glob(os.path.join(work, f"train-{v}-*.log"))):
        metrics = log[: -len(".log")] + "/metrics.jsonl"
        rates, peak = [], None
        if os.path.exists(metrics):
            for line in open(metrics):
                row = json.loads(line)
                if "pairs_per_s" in row and row.get("step", 0) > 2:
                    rates.append(row["pairs_per_s"])
                    peak = max(peak or 0, row.get("peak_rss_mb", 0))
        text = open(log).read()
        wall = re.search(r"^wall (\d+)", text, re.M)
        threads = re.search(r"threads: ([^;\n]*)", text)
        runs.append({"pairs_per_s_median": median(rates), "steps_timed": len(rates), "peak_rss_mib": peak,
                     "wall_s": int(wall.group(1)) if wall else None,
                     "threads": threads.group(1) if threads else None})
    return {"runs": runs, "pairs_per_s": median(r["pairs_per_s_median"] for r in runs)}


def bench(work, v):
    steps, memory, threads, torch_version = {}, {}, None, None
    for path in sorted(glob.glob(os.path.join(work, f"overhead-{v}-*.json"))):
        j = json.load(open(path))
        threads, torch_version = j.get("threads"), j.get("torch_version")
        o = j["scenarios"]["overhead"]
        for row in o["rows"]:
            steps.setdefault(row["step"], []).append(row["wall_median_s"])
        batch, chunk = o["batch"], o["chunk"]
    for path in sorted(glob.glob(os.path.join(work, f"memory-{v}-*.json"))):
        for p in json.load(open(path))["scenarios"]["memory"]["points"]:
            key = f"{p['mode']} @ {p['batch']}"
            entry = memory.setdefault(key, {"peak_bytes": [], "rss_peak_bytes": []})
            entry["peak_bytes"].append(p["peak_bytes"])
            entry["rss_peak_bytes"].append(p.get("rss_peak_bytes"))
    return {
        "torch_version": torch_version, "threads": threads,
        "overhead_batch": batch if steps else None, "overhead_chunk": chunk if steps else None,
        "step_seconds": {k: {"median_of_runs": median(xs), "runs": xs} for k, xs in steps.items()},
        "memory": {k: {"peak_bytes": median(e["peak_bytes"]), "rss_peak_bytes": median(e["rss_peak_bytes"])}
                   for k, e in memory.items()},
    }


def test_suite(work, v):
    path = os.path.join(work, f"ctest-{v}.log")
    if not os.path.exists(path):
        return None
    text = open(path).read()
    wall = re.search(r"^wall (\d+)", text, re.M)
    summary = re.search(r"(\d+)% tests passed, (\d+) tests failed out of (\d+)", text)
    total = re.search(r"Total Test time \(real\) = +([\d.]+) sec", text)
    return {"wall_s": int(wall.group(1)) if wall else None, "ctest_real_s": float(total.group(1)) if total else None,
            "failed": int(summary.group(2)) if summary else None, "tests": int(summary.group(3)) if summary else None}


def ratio(a, b):
    return a / b if a is not None and b else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--reps", type=int, required=True)
    ap.add_argument("--command", required=True)
    args = ap.parse_args()
    out = {"command": args.command, "reps": args.reps, "interleaved": "A B A B: one run of each build in turn",
           "versions": {}}
    for v in VERSIONS:
        out["versions"][v] = {"training": training(args.work, v), "bench": bench(args.work, v),
                              "test_suite": test_suite(args.work, v)}
    a, b = out["versions"]["2.x"], out["versions"]["1.13"]
    steps = {k: ratio(a["bench"]["step_seconds"][k]["median_of_runs"], b["bench"]["step_seconds"].get(k, {}).get("median_of_runs"))
             for k in a["bench"]["step_seconds"]}
    memory = {k: ratio(a["bench"]["memory"][k]["peak_bytes"], b["bench"]["memory"].get(k, {}).get("peak_bytes"))
              for k in a["bench"]["memory"]}
    out["ratios_2x_over_1_13"] = {
        "training_pairs_per_s": ratio(a["training"]["pairs_per_s"], b["training"]["pairs_per_s"]),
        "step_seconds": steps,
        "peak_tensor_bytes": memory,
        "test_suite_wall": ratio((a["test_suite"] or {}).get("wall_s"), (b["test_suite"] or {}).get("wall_s")),
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
