#!/usr/bin/env python3
"""What training a part of a decoder saves (issue 39): one cache step of a decoder of
Qwen3-Embedding-0.6B's shape (bench/architectures.py's QWEN3_06B) or of Qwen3-1.7B's (random
weights made by transformers) with every parameter trained, bias-only (--train-params bias), the
embeddings frozen (--freeze-embeddings), LoRA adapters of rank 16 (--lora-rank 16 --lora-alpha
32) and the same on a base held in bf16 (--base-precision bf16): seconds and peak RSS of
`gradcache train --model-dir`, beside sentence-transformers' CachedMultipleNegativesRankingLoss
(every parameter, and PEFT LoRA r 16 on the same targets).

    .venv/bin/python bench/trainable.py [--shape 0.6b|1.7b] [--rows a,b] [--layers N] [--pairs 8]
                                        [--threads 2] [--out docs/figures]

--pairs pairs of 128 tokens in chunks of 8, AdamW, fp32; one warm-up step and --steps measured
ones. Rows run interleaved, ours and theirs. Writes OUT/trainable_memory.json (0.6b) or
OUT/trainable_memory_1.7b.json. $GRADCACHE is the program (build/tools/gradcache).
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

# Ours (gradcache train flags) and sentence-transformers' CachedMultipleNegativesRankingLoss with
# the same chunks (mini_batch_size), threads and data: every parameter, or PEFT LoRA adapters.
ROWS = {"everything": [], "bias": ["--train-params", "bias"], "freeze-embeddings": ["--freeze-embeddings"],
        "lora16": ["--lora-rank", "16", "--lora-alpha", "32"],
        "lora16-bf16-base": ["--lora-rank", "16", "--lora-alpha", "32", "--base-precision", "bf16"]}
ST_ROWS = {"st-cached-everything": 0, "st-cached-lora16": 16}
# In this order, so that each of ours runs beside the sentence-transformers row it is compared with.
ORDER = ["everything", "st-cached-everything", "bias", "freeze-embeddings", "lora16", "st-cached-lora16",
         "lora16-bf16-base"]
# Qwen3-1.7B: 28 layers of hidden 2048 (1.7B numbers, 6.9 GB in fp32): training every one of them
# (weights, gradients, AdamW's two moments) does not fit this 24 GB machine.
SHAPES = {"0.6b": (architectures.QWEN3_06B, ORDER, "trainable_memory.json"),
          "1.7b": (dict(architectures.QWEN3_06B, hidden_size=2048, intermediate_size=6144, vocab_size=151936),
                   ["lora16", "st-cached-lora16", "lora16-bf16-base", "bias"], "trainable_memory_1.7b.json")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=sorted(SHAPES), default="0.6b", help="Qwen3-Embedding-0.6B's or Qwen3-1.7B's")
    parser.add_argument("--rows", default="", help="comma-separated, of " + ", ".join(ORDER) + " (default: the shape's)")
    parser.add_argument("--layers", type=int, default=28, help="of the shape's 28")
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "figures"))
    args = parser.parse_args()
    args.gradcache = os.environ.get("GRADCACHE", os.path.join(ROOT, "build/tools/gradcache"))
    if not os.access(args.gradcache, os.X_OK):
        sys.exit(f"trainable.py: no program at {args.gradcache}; build first (bash scripts/build.sh)")
    import torch

    sizes, order, out_name = SHAPES[args.shape]
    order = args.rows.split(",") if args.rows else order
    unknown = [name for name in order if name not in ROWS and name not in ST_ROWS]
    if unknown:
        sys.exit(f"trainable.py: no row {', '.join(unknown)}; rows: {', '.join(ORDER)}")
    sizes = dict(sizes, num_hidden_layers=args.layers)
    report = {"command": "python3 bench/trainable.py " + " ".join(sys.argv[1:]), "threads": args.threads,
              "shape": sizes, "pairs": args.pairs,
              "tokens": 128, "chunk": 8, "load_average": os.getloadavg()[0], "rows": {}}
    with tempfile.TemporaryDirectory(prefix="trainable.") as work:
        args.model = architectures.make_model("qwen3", os.path.join(work, "qwen3"), sizes, torch, max_seq_length=128)
        args.pairs_file = os.path.join(work, "pairs_128.jsonl")
        rng = random.Random(1)
        texts = lambda: " ".join(rng.choice(architectures.reference.WORDS) for _ in range(127))  # noqa: E731
        # One batch per step, the warm-up's included (sentence-transformers' child reads them in order).
        side_by_side.write_pairs(args.pairs_file, [(texts(), texts()) for _ in range(args.pairs * (args.steps + 1))])
        batch = args.pairs
        args.pairs = args.pairs_file  # what side_by_side.ours_run reads
        side_by_side.CHUNK = 8
        # Interleaved: ours, theirs, ours, ... so that the machine's load falls on both alike.
        for name in order:
            print(f"trainable.py: {time.strftime('%H:%M:%S')} {name}", flush=True)
            if name in ROWS:
                records, command = side_by_side.ours_run(args, work, batch, "cache", ROWS[name])
                flags = ROWS[name]
            else:
                command = [sys.executable, side_by_side.__file__, "_st", "--model", args.model, "--pairs", args.pairs,
                           "--batch", str(batch), "--steps", str(args.steps), "--threads", str(args.threads),
                           "--loss", "cached", "--chunk", "8", "--lora-rank", str(ST_ROWS[name])]
                records, _ = side_by_side.run_child(command)
                flags = command[2:]
            last = records[-1]
            report["rows"][name] = {"seconds": last["seconds"], "peak_rss_mb": max(r["peak_rss_mb"] for r in records),
                                    "update_s": last["update"], "flags": flags}
            print(f"trainable.py:   {json.dumps(report['rows'][name])}", flush=True)
    rows = report["rows"]
    for name, row in rows.items():
        if "everything" in rows:
            row["peak_vs_everything"] = row["peak_rss_mb"] / rows["everything"]["peak_rss_mb"]
            row["time_vs_everything"] = row["seconds"] / rows["everything"]["seconds"]
        theirs = "st-cached-everything" if name == "everything" else "st-cached-lora16" if name.startswith("lora") else None
        if theirs in rows:
            row["peak_vs_st"] = row["peak_rss_mb"] / rows[theirs]["peak_rss_mb"]
            row["time_vs_st"] = row["seconds"] / rows[theirs]["seconds"]
    os.makedirs(args.out, exist_ok=True)
    out = os.path.join(args.out, out_name)
    with open(out, "w") as f:
        json.dump(report, f, indent=1)
    print(f"trainable.py: wrote {out}")


if __name__ == "__main__":
    main()
