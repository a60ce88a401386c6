#!/usr/bin/env python3
"""Seeds of fuzz_tokenizer_json: one small tokenizer.json of each tokenizer kind.

    make_tokenizer_seeds.py KINDS_DIR OUT_DIR [--keep N]

KINDS_DIR is what tests/hf/tokenizer_kinds.py makes (`tokenizer_kinds.py all DIR`); each kind's
tokenizer.json is cut down to its first N vocabulary entries (default 300: small inputs fuzz
faster) and the tokens its added tokens and post-processor name, renumbered densely, the BPE
merges cut to those whose tokens are all kept. Every seed is checked to load in Python's `tokenizers`, so the fuzzer starts from valid
files of every kind; its mutations then reach every component's reader.
"""
import json
import os
import sys

from tokenizers import Tokenizer


def post_processor_ids(node, found):
    """The ids a post-processor names (TemplateProcessing's "ids", cls/sep pairs), recursively."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "ids" and isinstance(value, list):
                found.update(value)
            elif key in ("cls", "sep") and isinstance(value, list) and len(value) == 2:
                found.add(value[1])
            else:
                post_processor_ids(value, found)
    elif isinstance(node, list):
        for value in node:
            post_processor_ids(value, found)


def remap_post_processor(node, new_id):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "ids" and isinstance(value, list):
                node[key] = [new_id[i] for i in value]
            elif key in ("cls", "sep") and isinstance(value, list) and len(value) == 2:
                value[1] = new_id[value[1]]
            else:
                remap_post_processor(value, new_id)
    elif isinstance(node, list):
        for value in node:
            remap_post_processor(value, new_id)


def shrink(data, keep):
    """The first `keep` ids of the model, plus those the added tokens and the post-processor name,
    renumbered densely (ids past the model's vocabulary follow it, in order)."""
    model = data["model"]
    kind = model["type"]
    size = len(model["vocab"])
    named = set()
    post_processor_ids(data.get("post_processor"), named)
    named.update(t["id"] for t in data.get("added_tokens", []))
    if kind == "Unigram" and model.get("unk_id") is not None:
        named.add(model["unk_id"])
    old_ids = sorted(set(range(min(keep, size))) | {i for i in named if i < size})
    new_id = {old: new for new, old in enumerate(old_ids)}
    for old in sorted(i for i in named if i >= size):
        new_id[old] = len(new_id)
    if kind in ("BPE", "WordPiece"):
        model["vocab"] = {token: new_id[i] for token, i in model["vocab"].items() if i in new_id and i < size}
        if kind == "BPE":
            vocab = model["vocab"]
            prefix = model.get("continuing_subword_prefix") or ""
            merges = []
            for merge in model["merges"]:
                left, right = merge.split(" ", 1) if isinstance(merge, str) else merge
                if left in vocab and right in vocab and left + right[len(prefix):] in vocab:
                    merges.append(merge)
            model["merges"] = merges
    elif kind == "Unigram":
        model["vocab"] = [model["vocab"][i] for i in old_ids]
        if model.get("unk_id") is not None:
            model["unk_id"] = new_id[model["unk_id"]]
    for token in data.get("added_tokens", []):
        token["id"] = new_id[token["id"]]
    remap_post_processor(data.get("post_processor"), new_id)
    return len(old_ids), size


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    kinds_dir, out_dir = argv[0], argv[1]
    keep = int(argv[argv.index("--keep") + 1]) if "--keep" in argv else 300
    os.makedirs(out_dir, exist_ok=True)
    for kind in sorted(os.listdir(kinds_dir)):
        path = os.path.join(kinds_dir, kind, "tokenizer.json")
        if not os.path.isfile(path):
            continue
        data = json.load(open(path, encoding="utf-8"))
        kept, size = shrink(data, keep)
        text = json.dumps(data, ensure_ascii=False)
        try:
            Tokenizer.from_str(text).encode("Hello, world! héllo 中文")
        except Exception as error:  # noqa: BLE001 - a seed that does not load is left out, with why
            print(f"{kind}: left out ({error})")
            continue
        with open(os.path.join(out_dir, kind + ".json"), "w", encoding="utf-8") as f:
            f.write(text)
        print(f"{kind}: {kept} of {size} entries, {len(text):,} bytes")


if __name__ == "__main__":
    main(sys.argv[1:])
