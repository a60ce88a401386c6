#!/usr/bin/env python3
"""The Python reference of the live tests of tests/hf (called by hf_tests; offline, CPU, fp32).

    reference.py encode MODEL_DIR TEXTS_JSON OUT [PROMPT_NAME]
                                                    token ids, mask and SentenceTransformer.encode
    reference.py cmnrl MODEL_DIR BATCH MINI OUT     CachedMultipleNegativesRankingLoss: loss, gradients
    reference.py save_bin MODEL_DIR OUT_DIR         OUT_DIR/{ordered,plain}: config.json and a
                                                    pytorch_model.bin, torch.save of the state_dict
                                                    (an OrderedDict) or of a plain dict of it

OUT files are safetensors. BATCH holds q_ids, q_mask, p_ids, p_mask (int64) made by the C++ test,
so both sides see the same tokens.
"""
import json
import os
import shutil
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402


def load(model_dir):
    from sentence_transformers import SentenceTransformer  # here: save_bin does without its import time

    model = SentenceTransformer(model_dir, device="cpu")
    model.eval()
    return model


def encode(model_dir, texts_file, out, prompt_name=None):
    with open(texts_file, encoding="utf-8") as f:
        texts = json.load(f)
    model = load(model_dir)
    prompted = [model.prompts[prompt_name] + text for text in texts] if prompt_name else texts
    batch = model.preprocess(prompted) if hasattr(model, "preprocess") else model.tokenize(prompted)
    embeddings = model.encode(texts, batch_size=32, convert_to_tensor=True, prompt_name=prompt_name)
    save_file({"input_ids": batch["input_ids"].to(torch.int64).contiguous(),
               "attention_mask": batch["attention_mask"].to(torch.int64).contiguous(),
               "embeddings": embeddings.float().contiguous()}, out, metadata={"format": "pt"})


def cmnrl(model_dir, batch_file, mini_batch, out):
    from sentence_transformers.sentence_transformer.losses import CachedMultipleNegativesRankingLoss

    batch = load_file(batch_file)
    model = load(model_dir)  # eval: dropout off
    loss_fn = CachedMultipleNegativesRankingLoss(model, scale=20.0, mini_batch_size=int(mini_batch))
    features = [{"input_ids": batch["q_ids"], "attention_mask": batch["q_mask"]},
                {"input_ids": batch["p_ids"], "attention_mask": batch["p_mask"]}]
    model.zero_grad()
    loss = loss_fn(features, None)
    loss.backward()
    tensors = {"loss": loss.detach().reshape(1).float()}
    for name, parameter in model[0].auto_model.named_parameters():
        if parameter.grad is not None:
            tensors["grad." + name] = parameter.grad.contiguous()
    save_file(tensors, out, metadata={"format": "pt"})


def save_bin(model_dir, out_dir):
    from transformers import BertModel

    model = BertModel.from_pretrained(model_dir)
    state = model.state_dict()  # an OrderedDict with _metadata, as transformers saves it
    # Older checkpoints carry this buffer; loaders must skip it.
    state["embeddings.position_ids"] = torch.arange(model.config.max_position_embeddings).unsqueeze(0)
    for kind, saved in (("ordered", state), ("plain", dict(state))):
        os.makedirs(os.path.join(out_dir, kind), exist_ok=True)
        torch.save(saved, os.path.join(out_dir, kind, "pytorch_model.bin"))
        shutil.copy(os.path.join(model_dir, "config.json"), os.path.join(out_dir, kind))


def main():
    command, args = sys.argv[1], sys.argv[2:]
    {"encode": encode, "cmnrl": cmnrl, "save_bin": save_bin}[command](*args)


if __name__ == "__main__":
    main()
