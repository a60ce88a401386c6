#!/usr/bin/env python3
"""Every architecture's cache step against sentence-transformers' CachedMultipleNegativesRankingLoss
(issue 37, section 4), and a decoder of Qwen3-Embedding-0.6B's shape in fp32 and bf16.

    .venv/bin/python bench/architectures.py [--quick] [--architectures bert qwen3 ...] [--batch 128]
        [--steps 2] [--rounds 2] [--threads 1] [--qwen3-06b-layers 2] [--out docs]

Part 1: per architecture, a small random model made by transformers (tests/hf/architectures.py's
config of that architecture at hidden 256, 4 layers, 4 query heads sharing 2 key-value heads,
intermediate 1024; its sentence-transformers directory with the test's WordPiece tokenizer, last-
token pooling for decoders, mean for encoders, Normalize), the same pairs (texts of 20-40 words of
that vocabulary, one JSONL file both sides read), batch --batch in chunks of 32, AdamW, clipping,
temperature 0.05, dropout as the architecture has it, fp32, --threads intra-op threads. Rows run
interleaved, each a process of its own: st-cached (bench/side_by_side.py's sentence-transformers
child) then ours-cache (`gradcache train --model-dir ... --mode cache`), one warm-up step and
--steps measured ones; the ratio is of median step times measured side by side in each round.

Part 2: Qwen3-Embedding-0.6B's shape (hidden 1024, 16 query heads and 8 key-value heads of 128,
intermediate 3072, its 151,669-word vocabulary; random weights, the config written by
transformers) with --qwen3-06b-layers of its 28 layers (the time of a step grows linearly with the
layers; the full depth is --qwen3-06b-layers 28), one cache step of --qwen3-06b-pairs pairs of 128
tokens in chunks of 8: ours fp32, ours bf16 autocast, sentence-transformers' CachedMNRL fp32 and
under torch.autocast(bf16). Seconds and peak RSS.

Writes OUT/architectures_speed.json. $GRADCACHE is the program (build/tools/gradcache).
"""
import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import side_by_side  # noqa: E402


def _load_reference():
    # tests/hf/architectures.py (this file's namesake): the configs and the tokenizer of the tests.
    import importlib.util
    spec = importlib.util.spec_from_file_location("architecture_references", os.path.join(ROOT, "tests", "hf", "architectures.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reference = _load_reference()


def make_model(name, where, sizes, torch, max_seq_length=48):
    import transformers
    from safetensors.torch import save_file

    model_type, fields, _, side = reference.ARCHITECTURES[name]
    torch.manual_seed(0)
    config = transformers.AutoConfig.for_model(model_type, **{**reference.COMMON, **fields, **sizes})
    model = transformers.AutoModel.from_config(config)
    os.makedirs(where, exist_ok=True)
    model.save_pretrained(os.path.join(where, "model"))
    reference.sentence_transformer(where, config, side, torch, save_file, max_seq_length)
    return os.path.join(where, "st")


def write_pairs(path, count, seed=0):
    rng = random.Random(seed)
    words = reference.WORDS
    pairs = []
    for _ in range(count):
        passage = [rng.choice(words) for _ in range(rng.randint(20, 40))]
        pairs.append((" ".join(rng.sample(passage, 6)), " ".join(passage)))
    side_by_side.write_pairs(path, pairs)


def part_one(args, work):
    import torch

    sizes = dict(hidden_size=256, intermediate_size=1024, num_hidden_layers=4, num_attention_heads=4,
                 max_position_embeddings=64)
    models = {name: make_model(name, os.path.join(work, name), sizes, torch) for name in args.architectures}
    args.pairs = os.path.join(work, "pairs.jsonl")
    write_pairs(args.pairs, args.batch * (args.steps + 1))
    results = {}
    for rnd in range(args.rounds):
        for name, model in models.items():
            for row in ("st-cached", "ours-cache"):
                print(f"architectures.py: {time.strftime('%H:%M:%S')} round {rnd + 1}: {name} {row}", flush=True)
                args.model = model
                if row == "st-cached":
                    command = [sys.executable, side_by_side.__file__, "_st", "--model", model, "--pairs", args.pairs,
                               "--batch", str(args.batch), "--steps", str(args.steps), "--threads", str(args.threads),
                               "--loss", "cached"]
                    records, _ = side_by_side.run_child(command)
                else:
                    records, _ = side_by_side.ours_run(args, work, args.batch, "cache", [])
                results.setdefault(name, {}).setdefault(row, []).extend(records)
    table = {}
    for name, rows in results.items():
        st, ours = side_by_side.summarize(rows["st-cached"]), side_by_side.summarize(rows["ours-cache"])
        table[name] = {"st_cached": st, "ours_cache": ours, "time_vs_st_cached": ours["median_s"] / st["median_s"],
                       "peak_vs_st_cached": ours["peak_rss_mb"] / st["peak_rss_mb"]}
        print(f"architectures.py: {name}: ours {ours['median_s']:.3f} s, sentence-transformers {st['median_s']:.3f} s "
              f"({table[name]['time_vs_st_cached']:.2f}x); peak {ours['peak_rss_mb']:.0f} vs {st['peak_rss_mb']:.0f} MB")
    return {"sizes": sizes, "batch": args.batch, "chunk": side_by_side.CHUNK, "architectures": table}


QWEN3_06B = dict(hidden_size=1024, intermediate_size=3072, num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                 vocab_size=151669, max_position_embeddings=32768, rope_theta=1000000.0, rms_norm_eps=1e-6,
                 attention_dropout=0.0, tie_word_embeddings=True)


def part_two(args, work):
    """One cache step of Qwen3-Embedding-0.6B's shape, fp32 and bf16, ours and sentence-transformers'."""
    import torch

    model = make_model("qwen3", os.path.join(work, "qwen3_06b"), dict(QWEN3_06B, num_hidden_layers=args.qwen3_06b_layers),
                       torch, max_seq_length=128)
    pairs = os.path.join(work, "pairs_128.jsonl")
    rng = random.Random(1)
    texts = lambda: " ".join(rng.choice(reference.WORDS) for _ in range(127))  # noqa: E731 (127 words + EOS)
    side_by_side.write_pairs(pairs, [(texts(), texts()) for _ in range(args.qwen3_06b_pairs)])
    saved_pairs, saved_steps, saved_chunk = getattr(args, "pairs", None), args.steps, side_by_side.CHUNK
    args.pairs, args.steps, side_by_side.CHUNK = pairs, 0, 8
    rows = {}
    try:
        for precision in ("fp32", "bf16"):
            print(f"architectures.py: {time.strftime('%H:%M:%S')} Qwen3-0.6B shape, {precision}: sentence-transformers", flush=True)
            command = [sys.executable, side_by_side.__file__, "_st", "--model", model, "--pairs", pairs, "--batch",
                       str(args.qwen3_06b_pairs), "--steps", "0", "--threads", str(args.threads), "--loss", "cached",
                       "--precision", precision]
            records, _ = side_by_side.run_child(command)
            rows[f"st-cached-{precision}"] = {"seconds": records[-1]["seconds"], "peak_rss_mb": records[-1]["peak_rss_mb"],
                                              "loss": records[-1]["loss"]}
            print(f"architectures.py: {time.strftime('%H:%M:%S')} Qwen3-0.6B shape, {precision}: ours", flush=True)
            args.model = model
            records, _ = side_by_side.ours_run(args, work, args.qwen3_06b_pairs, "cache", ["--precision", precision])
            rows[f"ours-cache-{precision}"] = {"seconds": records[-1]["seconds"], "peak_rss_mb": records[-1]["peak_rss_mb"],
                                               "loss": records[-1]["loss"], "phases": {k: records[-1][k] for k in
                                                                                       ("forward", "backward", "update")}}
            print(f"architectures.py:   {json.dumps(rows)}", flush=True)
    finally:
        args.pairs, args.steps, side_by_side.CHUNK = saved_pairs, saved_steps, saved_chunk
    for precision in ("fp32", "bf16"):
        rows[f"time_vs_st_cached_{precision}"] = rows[f"ours-cache-{precision}"]["seconds"] / rows[f"st-cached-{precision}"]["seconds"]
    rows["bf16_vs_fp32_ours"] = rows["ours-cache-bf16"]["seconds"] / rows["ours-cache-fp32"]["seconds"]
    rows["bf16_vs_fp32_st"] = rows["st-cached-bf16"]["seconds"] / rows["st-cached-fp32"]["seconds"]
    return {"shape": dict(QWEN3_06B, num_hidden_layers=args.qwen3_06b_layers), "pairs": args.qwen3_06b_pairs,
            "tokens": 128, "chunk": 8, "rows": rows}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two architectures, a small batch (a smoke test)")
    parser.add_argument("--architectures", nargs="+")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--qwen3-06b-layers", type=int, default=1, help="of Qwen3-0.6B's 28 (0: skip part 2)")
    parser.add_argument("--qwen3-06b-pairs", type=int, default=256)
    parser.add_argument("--parts", default="12")
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "figures"))
    args = parser.parse_args()
    args.gradcache = os.environ.get("GRADCACHE", os.path.join(ROOT, "build/tools/gradcache"))
    if not os.access(args.gradcache, os.X_OK):
        sys.exit(f"architectures.py: no program at {args.gradcache}; build first (bash scripts/build.sh)")
    if args.quick:
        args.architectures = args.architectures or ["bert", "qwen3"]
        args.batch, args.steps, args.rounds = 32, 1, 1
        args.qwen3_06b_pairs = 16 if "--qwen3-06b-pairs" not in sys.argv else args.qwen3_06b_pairs
    args.architectures = args.architectures or list(reference.ARCHITECTURES)
    os.makedirs(args.out, exist_ok=True)
    out = os.path.join(args.out, "architectures_speed.json")
    report = json.load(open(out)) if args.parts != "12" and os.path.exists(out) else {}
    with tempfile.TemporaryDirectory(prefix="architectures.") as work:
        report.update({"command": "python3 bench/architectures.py " + " ".join(sys.argv[1:]), "threads": args.threads,
                       "load_average": os.getloadavg()[0]})
        if "1" in args.parts:
            report["part_one"] = part_one(args, work)
            report["part_one"].update({"steps": args.steps, "rounds": args.rounds})
        if "2" in args.parts and args.qwen3_06b_layers > 0:
            report["part_two"] = part_two(args, work)
    with open(out, "w") as f:
        json.dump(report, f, indent=1)
    print(f"architectures.py: wrote {out}")


if __name__ == "__main__":
    main()
