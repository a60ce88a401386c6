#!/usr/bin/env python3
"""Speed of gradcache::hf against sentence-transformers: the same model, the same batches of token
ids, the same number of threads, on this machine.

    .venv/bin/python bench/hf_speed.py --model DIR --bench build/bench/gradcache-hf-speed-bench \
        [--threads 1 2] [--texts 512] [--repeats 3] [--out speed.json]

Texts: WordNet noun glosses (/usr/share/wordnet/data.noun, "short": ~15 tokens), and the same
glosses run together into 128-token texts ("long"). Both sides see batches of 32 made as
SentenceTransformer.encode makes them (texts sorted by length, longest first, padded per batch).
Measured: model forward passes without graph (sequences/s; for Python also encode() end to end,
tokenizing included), and one training step of 64 pairs in chunks of 32 with dropout on
(CachedMultipleNegativesRankingLoss against a GradCache step with the same loss). Best of
--repeats after a warm-up.
"""
import argparse
import json
import os
import random
import subprocess
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402
from sentence_transformers.sentence_transformer.losses import CachedMultipleNegativesRankingLoss  # noqa: E402

BATCH = 32
STEP_PAIRS, STEP_CHUNK = 64, 32


def wordnet_glosses(count, path="/usr/share/wordnet/data.noun"):
    glosses = []
    with open(path, encoding="latin-1") as f:
        for line in f:
            if line.startswith("  ") or "|" not in line:
                continue
            gloss = line.split("|", 1)[1].strip().split(";")[0].strip()
            if gloss:
                glosses.append(gloss)
    random.Random(0).shuffle(glosses)
    return glosses[:count]


def long_texts(glosses, tokenizer, count, tokens=128):
    texts, current = [], ""
    for gloss in glosses * 8:
        current = (current + " " + gloss).strip()
        if len(tokenizer(current)["input_ids"]) > tokens:
            texts.append(current)
            current = ""
            if len(texts) == count:
                break
    return texts


def batches(model, texts):
    """As encode() batches: sorted by length, longest first, then padded per batch."""
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    sorted_texts = [texts[i] for i in order]
    return [model.tokenize(sorted_texts[i:i + BATCH]) for i in range(0, len(sorted_texts), BATCH)]


def best_of(repeats, fn):
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def python_side(model, sets, step, threads, repeats, step_only):
    torch.set_num_threads(threads)
    rows = []
    model.eval()
    for name, (texts, feature_batches) in ({} if step_only else sets).items():
        def forward():
            with torch.inference_mode():
                for features in feature_batches:
                    model(dict(features))
        seconds = best_of(repeats, forward)
        rows.append({"what": f"encode {name}", "side": "sentence-transformers", "threads": threads,
                     "sequences": len(texts), "seq_per_s": round(len(texts) / seconds, 1)})
        seconds = best_of(repeats, lambda: model.encode(texts, batch_size=BATCH))
        rows.append({"what": f"encode() {name}, tokenizing included", "side": "sentence-transformers",
                     "threads": threads, "sequences": len(texts), "seq_per_s": round(len(texts) / seconds, 1)})
    model.train()
    loss_fn = CachedMultipleNegativesRankingLoss(model, scale=20.0, mini_batch_size=STEP_CHUNK)

    def train_step():
        model.zero_grad(set_to_none=True)
        loss_fn([dict(step[0]), dict(step[1])], None).backward()
    seconds = best_of(repeats, train_step)
    rows.append({"what": "cache step", "side": "sentence-transformers", "threads": threads, "pairs": STEP_PAIRS,
                 "chunk": STEP_CHUNK, "seconds": round(seconds, 4)})
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--bench", required=True, help="the gradcache-hf-speed-bench binary")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--texts", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--step-only", action="store_true", help="only the training step")
    parser.add_argument("--out")
    args = parser.parse_args()

    model = SentenceTransformer(args.model, device="cpu")
    glosses = wordnet_glosses(max(args.texts, 2 * STEP_PAIRS))
    short = glosses[:args.texts]
    long = long_texts(glosses, model.tokenizer, args.texts)
    sets = {"short": (short, batches(model, short)), "long": (long, batches(model, long))}
    step = (model.tokenize(glosses[:STEP_PAIRS]), model.tokenize(glosses[STEP_PAIRS:2 * STEP_PAIRS]))
    tensors = {"step.chunk": torch.tensor(STEP_CHUNK)}
    for name, (_, feature_batches) in ({} if args.step_only else sets).items():
        for i, features in enumerate(feature_batches):
            tensors[f"{name}.ids.{i}"] = features["input_ids"].contiguous()
            tensors[f"{name}.mask.{i}"] = features["attention_mask"].contiguous()
    for side, features in zip("qp", step):
        tensors[f"step.{side}.ids.0"] = features["input_ids"].contiguous()
        tensors[f"step.{side}.mask.0"] = features["attention_mask"].contiguous()

    rows = []
    with tempfile.TemporaryDirectory() as work:
        inputs = os.path.join(work, "inputs.safetensors")
        save_file(tensors, inputs)
        for threads in args.threads:
            rows += python_side(model, sets, step, threads, args.repeats, args.step_only)
            out = subprocess.run([args.bench, args.model, inputs, str(threads), str(args.repeats)],
                                 check=True, capture_output=True, text=True).stdout
            rows += [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    for row in rows:
        print(json.dumps(row))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
