#!/usr/bin/env python3
"""What training a part of a decoder saves (issue 39): one cache step of a decoder of
Qwen3-Embedding-0.6B's shape (bench/architectures.py's QWEN3_06B, random weights made by
transformers) with every parameter trained, bias-only (--train-params bias) and the embeddings
frozen (--freeze-embeddings): seconds and peak RSS of `gradcache train --model-dir`.

    .venv/bin/python bench/trainable.py [--layers 28] [--pairs 8] [--threads 2] [--out docs/figures]

--pairs pairs of 128 tokens in chunks of 8, AdamW, fp32; one warm-up step and --steps measured
ones. Writes OUT/trainable_memory.json. $GRADCACHE is the program (build/tools/gradcache).
"""
import argparse
import json
import os
import random
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import architectures  # noqa: E402
import side_by_side  # noqa: E402

ROWS = {"everything": [], "bias": ["--train-params", "bias"], "freeze-embeddings": ["--freeze-embeddings"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=28, help="of Qwen3-0.6B's 28")
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "figures"))
    args = parser.parse_args()
    args.gradcache = os.environ.get("GRADCACHE", os.path.join(ROOT, "build/tools/gradcache"))
    if not os.access(args.gradcache, os.X_OK):
        sys.exit(f"trainable.py: no program at {args.gradcache}; build first (bash scripts/build.sh)")
    import torch

    report = {"command": "python3 bench/trainable.py " + " ".join(sys.argv[1:]), "threads": args.threads,
              "shape": dict(architectures.QWEN3_06B, num_hidden_layers=args.layers), "pairs": args.pairs,
              "tokens": 128, "chunk": 8, "load_average": os.getloadavg()[0], "rows": {}}
    with tempfile.TemporaryDirectory(prefix="trainable.") as work:
        args.model = architectures.make_model("qwen3", os.path.join(work, "qwen3_06b"),
                                              dict(architectures.QWEN3_06B, num_hidden_layers=args.layers), torch,
                                              max_seq_length=128)
        args.pairs_file = os.path.join(work, "pairs_128.jsonl")
        rng = random.Random(1)
        texts = lambda: " ".join(rng.choice(architectures.reference.WORDS) for _ in range(127))  # noqa: E731
        side_by_side.write_pairs(args.pairs_file, [(texts(), texts()) for _ in range(args.pairs)])
        batch = args.pairs
        args.pairs = args.pairs_file  # what side_by_side.ours_run reads
        side_by_side.CHUNK = 8
        for name, extra in ROWS.items():
            print(f"trainable.py: {time.strftime('%H:%M:%S')} {name}", flush=True)
            records, command = side_by_side.ours_run(args, work, batch, "cache", extra)
            last = records[-1]
            report["rows"][name] = {"seconds": last["seconds"], "peak_rss_mb": max(r["peak_rss_mb"] for r in records),
                                    "update_s": last["update"], "flags": extra}
            print(f"trainable.py:   {json.dumps(report['rows'][name])}", flush=True)
    everything = report["rows"]["everything"]
    for name, row in report["rows"].items():
        row["peak_vs_everything"] = row["peak_rss_mb"] / everything["peak_rss_mb"]
        row["time_vs_everything"] = row["seconds"] / everything["seconds"]
    os.makedirs(args.out, exist_ok=True)
    out = os.path.join(args.out, "trainable_memory.json")
    with open(out, "w") as f:
        json.dump(report, f, indent=1)
    print(f"trainable.py: wrote {out}")


if __name__ == "__main__":
    main()
