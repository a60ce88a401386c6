#!/usr/bin/env python3
"""Tiny random models of every supported architecture, made by transformers, and what transformers
computes with them: the reference of tests/hf/test_architectures.cpp (no weights can be
downloaded here, so each model is a small random one of the real config and class).

    architectures.py make DIR     DIR/<name>/model/     config.json + model.safetensors (AutoModel)
                                  DIR/<name>/head/      the same weights in the task model
                                                        (…ForMaskedLM / …ForCausalLM: prefixed
                                                        names, lm_head, tied or not)
                                  DIR/<name>/expected.safetensors   input_ids, attention_mask and
                                                        last_hidden_state (eval, fp32)
                                  DIR/<name>/st/        a sentence-transformers directory of it
                                                        (tokenizer, pooling, Normalize, prompts;
                                                        Qwen3's with two Dense modules before Normalize)
                                  DIR/<name>/st_expected.safetensors   its tokenization of TEXTS
                                                        and SentenceTransformer.encode's embeddings
                                  DIR/sgpt/             SGPT's recipe (BLOOM, weightedmean, brackets),
                                  sgpt_expected.safetensors: its --specb embeddings
                                  DIR/<name>/lora/      a PEFT LoRA adapter of the model (random B),
                                  DIR/<name>/lora_expected.safetensors  the adapted model's output
    architectures.py check DIR    for each DIR/<name>/saved/ (written by gradcache's save_transformer):
                                  AutoModel.from_pretrained with no missing or unexpected weights,
                                  last_hidden_state on the same batch -> DIR/<name>/reloaded.safetensors;
                                  for each DIR/<name>/st_saved/ (SentenceTransformer::save): loaded by
                                  SentenceTransformer, TEXTS encoded -> DIR/<name>/st_reloaded.safetensors;
                                  for each DIR/<name>/lora_saved/ (save_lora_adapter): loaded by
                                  PeftModel.from_pretrained onto model/ -> lora_reloaded.safetensors

Where torch or transformers is missing, `make` writes DIR/unavailable.txt saying so (the tests skip).
Sizes are small but not degenerate: 2 layers, 4 query heads sharing 2 key-value heads, an
intermediate size (37) that is not a multiple of anything, dropout on where the architecture has
it, a sliding window (Mistral) shorter than the texts, a head size (Qwen3) that is not
hidden / heads, Llama 3.1's rope scaling (Llama). Decoders are fed left-padded batches (as their embedders are), encoders right-padded.
"""
import json
import os
import shutil
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

COMMON = dict(vocab_size=96, hidden_size=32, intermediate_size=37, num_hidden_layers=2, num_attention_heads=4,
              max_position_embeddings=64, initializer_range=0.2)
ENCODER = dict(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, type_vocab_size=2)
DECODER = dict(num_key_value_heads=2, attention_dropout=0.1, rms_norm_eps=1e-6)

# name: (model_type, config fields, task-head class, padding side)
ARCHITECTURES = {
    "bert": ("bert", dict(ENCODER, pad_token_id=0), "BertForMaskedLM", "right"),
    "roberta": ("roberta", dict(ENCODER, pad_token_id=1, type_vocab_size=1), "RobertaForMaskedLM", "right"),
    "xlm-roberta": ("xlm-roberta", dict(ENCODER, pad_token_id=1, type_vocab_size=1), "XLMRobertaForMaskedLM", "right"),
    # Llama 3.1's rope scaling, its bands placed so that each of the head's 4 frequencies meets
    # one: wavelength 6.3 < 32 / 4 kept, 167 smoothed, 4,443 and 118,000 > 32 / 0.125 divided.
    "llama": ("llama", dict(DECODER, tie_word_embeddings=False,
                            rope_parameters=dict(rope_type="llama3", rope_theta=500000.0, factor=8.0, low_freq_factor=0.125,
                                                 high_freq_factor=4.0, original_max_position_embeddings=32)),
              "LlamaForCausalLM", "left"),
    "mistral": ("mistral", dict(DECODER, sliding_window=4, tie_word_embeddings=False), "MistralForCausalLM", "left"),
    "qwen2": ("qwen2", dict(DECODER, tie_word_embeddings=True, rope_theta=1000000.0), "Qwen2ForCausalLM", "left"),
    "qwen3": ("qwen3", dict(DECODER, head_dim=16, tie_word_embeddings=True, rope_theta=1000000.0),
              "Qwen3ForCausalLM", "left"),
    # 3 layers so that there are both kinds: global (0, 2) and local (1), whose window (2 keys
    # either side) is shorter than the texts.
    "modernbert": ("modernbert", dict(num_hidden_layers=3, global_attn_every_n_layers=2, local_attention=4,
                                      attention_dropout=0.1, mlp_dropout=0.1, embedding_dropout=0.1, pad_token_id=0,
                                      bos_token_id=1, cls_token_id=1, eos_token_id=2, sep_token_id=2),
                   "ModernBertForMaskedLM", "right"),
    # No token types; padding index 1 (fixed in MPNetEmbeddings); texts of 13 tokens reach the
    # logarithmic buckets of the relative-position bias (distances of 8 and more).
    "mpnet": ("mpnet", dict(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, pad_token_id=1, bos_token_id=0,
                            eos_token_id=2), "MPNetForMaskedLM", "right"),
    # BloomConfig reads num_hidden_layers / num_attention_heads as n_layer / n_head; its MLP is
    # 4 x hidden whatever intermediate_size says, and ALiBi has no position table. Its default
    # pad id (None; 3 in the released files) would be a real id here.
    "bloom": ("bloom", dict(hidden_dropout=0.1, attention_dropout=0.1, pad_token_id=0, bos_token_id=1, eos_token_id=2),
              "BloomForCausalLM", "left"),
}
ROWS, COLUMNS = 6, 13

# The LoRA targets gradcache adapts by default (hf::default_lora_targets): the reference adapter
# of each architecture is made by PEFT with them.
LORA_TARGETS = {
    "bert": ["query", "key", "value", "dense"], "roberta": ["query", "key", "value", "dense"],
    "xlm-roberta": ["query", "key", "value", "dense"],
    **{t: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"] for t in ("llama", "mistral", "qwen2", "qwen3")},
    "modernbert": ["Wqkv", "Wo", "Wi"], "mpnet": ["q", "k", "v", "o", "dense"],
    "bloom": ["query_key_value", "dense", "dense_h_to_4h", "dense_4h_to_h"],
}


def batch(name, pad_id, side, torch):
    generator = torch.Generator().manual_seed(len(name))
    ids = torch.randint(3, COMMON["vocab_size"], (ROWS, COLUMNS), generator=generator)
    lengths = [COLUMNS, 1, 5, COLUMNS - 1, 8, 2]
    mask = torch.zeros(ROWS, COLUMNS, dtype=torch.int64)
    for row, length in enumerate(lengths):
        if side == "right":
            mask[row, :length] = 1
        else:
            mask[row, COLUMNS - length:] = 1
    ids = torch.where(mask.bool(), ids, torch.full_like(ids, pad_id))
    return ids, mask


WORDS = [f"w{i}" for i in range(4, COMMON["vocab_size"])]
TEXTS = [" ".join(WORDS[(7 * i + 3 * j) % len(WORDS)] for j in range(1 + (5 * i) % 14)) for i in range(10)] + [
    "w5 unknownword w9", "W12 w13"]
PROMPTS = {"query": "w30 w31 w32 ", "document": ""}


def tokenizer_for(config, side):
    """A WordPiece tokenizer over the ids the tiny models have: 4 special tokens (padding at the
    config's pad id) then the words w4 .. w95; encoders frame a text as <cls> $A <sep>, decoders
    append <eos> as Qwen3-Embedding's does, and pad on the left."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    pad = config.pad_token_id if config.pad_token_id is not None else 0
    others = iter(i for i in range(4) if i != pad)
    unk, first, last = next(others), next(others), next(others)
    names = {pad: "<pad>", unk: "<unk>", first: "<cls>", last: "<sep>"}
    vocab = {names[i]: i for i in range(4)}
    vocab.update({word: 4 + i for i, word in enumerate(WORDS)})
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    if side == "right":
        tokenizer.post_processor = processors.TemplateProcessing(
            single="<cls> $A <sep>", special_tokens=[("<cls>", first), ("<sep>", last)])
    else:
        tokenizer.post_processor = processors.TemplateProcessing(single="$A <sep>", special_tokens=[("<sep>", last)])
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="<pad>", unk_token="<unk>", cls_token="<cls>",
                                   sep_token="<sep>", eos_token="<sep>", padding_side=side,
                                   model_max_length=config.max_position_embeddings)


def sentence_transformer(where, config, side, torch, save_file, max_seq_length=48):
    """DIR/<name>/st/: the model as sentence-transformers saves it (its tokenizer; last-token
    pooling for decoders, mean for encoders; Normalize; prompts), and what SentenceTransformer.encode
    gives for TEXTS, plain and with the "query" prompt -> DIR/<name>/st_expected.safetensors."""
    from sentence_transformers import SentenceTransformer, models

    tokenizer_for(config, side).save_pretrained(os.path.join(where, "model"))
    transformer = models.Transformer(os.path.join(where, "model"), max_seq_length=max_seq_length)
    pooling = models.Pooling(config.hidden_size, pooling_mode="lasttoken" if side == "left" else "mean")
    # Qwen3's directory projects as EmbeddingGemma does: 2_Dense and 3_Dense before Normalize.
    dense = [models.Dense(config.hidden_size, 48), models.Dense(48, 24, bias=False, activation_function=torch.nn.Identity())] \
        if config.model_type == "qwen3" else []
    st = SentenceTransformer(modules=[transformer, pooling, *dense, models.Normalize()], device="cpu", prompts=PROMPTS)
    st.eval()
    st.save(os.path.join(where, "st"))
    batch = st.tokenize(TEXTS)
    expected = {"input_ids": batch["input_ids"].to(torch.int64).contiguous(),
                "attention_mask": batch["attention_mask"].to(torch.int64).contiguous()}
    expected.update(st_embeddings(st, torch))
    save_file(expected, os.path.join(where, "st_expected.safetensors"), metadata={"format": "pt", "texts": json.dumps(TEXTS)})


def st_embeddings(st, torch):
    with torch.no_grad():
        return {"embeddings": st.encode(TEXTS, convert_to_tensor=True).float().contiguous(),
                "query_embeddings": st.encode(TEXTS, prompt_name="query", convert_to_tensor=True).float().contiguous()}


BRACKETS = ["[", "]", "{", "}"]


def specb_batch(tokenizer, texts, query, max_seq_length):
    """SGPT's README tokenization with its --specb markers (tokenize_with_specb): the tokenizer's
    ids, "[" (queries) or "{" (documents) inserted first and "]" or "}" appended, then padded.
    The text is cut two ids shorter than max_seq_length so that the whole still fits (the
    README cuts at the model's length and adds two)."""
    open_, close = [tokenizer.encode(b, add_special_tokens=False)[0] for b in (BRACKETS[:2] if query else BRACKETS[2:])]
    tokens = tokenizer(texts, padding=False, truncation=True, max_length=max_seq_length - 2)
    for ids, mask in zip(tokens["input_ids"], tokens["attention_mask"]):
        ids.insert(0, open_)
        ids.append(close)
        mask.insert(0, 1)
        mask.append(1)
    return tokenizer.pad(tokens, padding=True, return_tensors="pt")


def sgpt(where, torch, transformers, save_file):
    """DIR/sgpt/st/: the seeds' SGPT recipe at tiny size: a BLOOM decoder, position-weighted mean
    pooling, no Normalize, and a tokenizer with the bracket tokens (ids 96..99, as BLOOM's
    byte-level BPE has them); DIR/sgpt/sgpt_expected.safetensors: what sentence-transformers
    gives for TEXTS tokenized as SGPT's README does with --specb (queries and documents)."""
    from sentence_transformers import SentenceTransformer, models
    from tokenizers import Tokenizer, models as token_models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    shutil.rmtree(where, ignore_errors=True)
    torch.manual_seed(1004)
    fields = dict(ARCHITECTURES["bloom"][1], vocab_size=COMMON["vocab_size"] + len(BRACKETS))
    config = transformers.AutoConfig.for_model("bloom", **{**COMMON, **fields})
    transformers.AutoModel.from_config(config).eval().save_pretrained(os.path.join(where, "model"))
    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3}
    vocab.update({word: 4 + i for i, word in enumerate(WORDS)})
    vocab.update({b: COMMON["vocab_size"] + i for i, b in enumerate(BRACKETS)})
    tokenizer = Tokenizer(token_models.WordPiece(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()  # "[" is a word of its own
    tokenizer.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 2)])
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="<pad>", unk_token="<unk>", bos_token="<s>",
                            eos_token="</s>", padding_side="left",
                            model_max_length=config.max_position_embeddings).save_pretrained(os.path.join(where, "model"))
    max_seq_length = 12  # shorter than the longest of TEXTS: the cut is tested
    transformer = models.Transformer(os.path.join(where, "model"), max_seq_length=max_seq_length)
    pooling = models.Pooling(config.hidden_size, pooling_mode="weightedmean")
    st = SentenceTransformer(modules=[transformer, pooling], device="cpu").eval()
    st.save(os.path.join(where, "st"))
    expected = {}
    with torch.no_grad():
        for side, query in (("query", True), ("document", False)):
            features = specb_batch(st.tokenizer, TEXTS, query, max_seq_length)
            expected[f"{side}_input_ids"] = features["input_ids"].to(torch.int64).contiguous()
            expected[f"{side}_embeddings"] = st(dict(features))["sentence_embedding"].float().contiguous()
    save_file(expected, os.path.join(where, "sgpt_expected.safetensors"), metadata={"format": "pt", "texts": json.dumps(TEXTS)})
    print(f"architectures.py: sgpt (BLOOM, weightedmean, bracket tokens) -> {where}")


def lora_adapter(where, model, model_type, ids, mask, torch, save_file):
    """A PEFT LoRA adapter (r 4, alpha 8, dropout 0.1) on `model`'s default targets, its B random
    (PEFT starts it at zero, which would test nothing) -> where/lora/, and the adapted model's
    last_hidden_state (eval) -> where/lora_expected.safetensors."""
    import copy
    import peft

    adapted = peft.get_peft_model(copy.deepcopy(model),
                                  peft.LoraConfig(r=4, lora_alpha=8, lora_dropout=0.1, target_modules=LORA_TARGETS[model_type]))
    with torch.no_grad():
        for name, parameter in adapted.named_parameters():
            if "lora_B" in name:
                parameter.normal_(0.0, 0.2)
    adapted.eval().save_pretrained(os.path.join(where, "lora"))
    with torch.no_grad():
        hidden = adapted(input_ids=ids, attention_mask=mask).last_hidden_state
    save_file({"last_hidden_state": hidden.contiguous()}, os.path.join(where, "lora_expected.safetensors"),
              metadata={"format": "pt"})


def make(out_dir):
    try:
        import torch
        import transformers
        import peft  # noqa: F401 (the LoRA references)
        from safetensors.torch import save_file
    except ImportError as error:
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, "unavailable.txt"), "w") as f:
            f.write(f"architectures.py: {error}\n")
        return
    for name, (model_type, fields, head_class, side) in ARCHITECTURES.items():
        torch.manual_seed(1000 + len(name))
        config = transformers.AutoConfig.for_model(model_type, **{**COMMON, **fields})  # fields override COMMON
        model = transformers.AutoModel.from_config(config).eval()
        where = os.path.join(out_dir, name)
        shutil.rmtree(where, ignore_errors=True)
        model.save_pretrained(os.path.join(where, "model"))
        head = getattr(transformers, head_class)(config)
        # The masked-LM heads' encoder has no pooler: the one key it may leave out.
        missing, unexpected = head.base_model.load_state_dict(model.state_dict(), strict=False)
        assert not missing and all(key.startswith("pooler.") for key in unexpected), (missing, unexpected)
        head.save_pretrained(os.path.join(where, "head"))
        pad_id = config.pad_token_id if config.pad_token_id is not None else 0
        ids, mask = batch(name, pad_id, side, torch)
        with torch.no_grad():
            hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state
        save_file({"input_ids": ids.contiguous(), "attention_mask": mask.contiguous(), "last_hidden_state": hidden.contiguous()},
                  os.path.join(where, "expected.safetensors"), metadata={"format": "pt", "side": side})
        sentence_transformer(where, config, side, torch, save_file)
        lora_adapter(where, model, model_type, ids, mask, torch, save_file)
        print(f"architectures.py: {name} ({type(model).__name__}, {head_class}) -> {where}")
    sgpt(os.path.join(out_dir, "sgpt"), torch, transformers, save_file)
    unavailable = os.path.join(out_dir, "unavailable.txt")
    if os.path.exists(unavailable):
        os.remove(unavailable)


def check(out_dir):
    import torch
    import transformers
    from safetensors.torch import load_file, save_file

    for name in sorted(os.listdir(out_dir)):
        saved = os.path.join(out_dir, name, "saved")
        if not os.path.isdir(saved):
            continue
        model, info = transformers.AutoModel.from_pretrained(saved, output_loading_info=True)
        problems = {key: value for key, value in info.items() if value and key != "mismatched_keys" or
                    key == "mismatched_keys" and value}
        if problems:
            sys.exit(f"architectures.py check: {saved}: {problems}")
        expected = load_file(os.path.join(out_dir, name, "expected.safetensors"))
        with torch.no_grad():
            hidden = model.eval()(input_ids=expected["input_ids"], attention_mask=expected["attention_mask"]).last_hidden_state
        save_file({"last_hidden_state": hidden.contiguous()}, os.path.join(out_dir, name, "reloaded.safetensors"),
                  metadata={"format": "pt", "class": type(model).__name__})
        print(f"architectures.py check: {name}: {type(model).__name__} loaded {saved}")
        st_saved = os.path.join(out_dir, name, "st_saved")
        if os.path.isdir(st_saved):
            from sentence_transformers import SentenceTransformer

            st = SentenceTransformer(st_saved, device="cpu").eval()
            save_file(st_embeddings(st, torch), os.path.join(out_dir, name, "st_reloaded.safetensors"),
                      metadata={"format": "pt"})
            print(f"architectures.py check: {name}: SentenceTransformer loaded {st_saved}")
        lora_saved = os.path.join(out_dir, name, "lora_saved")
        if os.path.isdir(lora_saved):
            import peft

            base = transformers.AutoModel.from_pretrained(os.path.join(out_dir, name, "model"))
            adapted = peft.PeftModel.from_pretrained(base, lora_saved).eval()
            with torch.no_grad():
                hidden = adapted(input_ids=expected["input_ids"], attention_mask=expected["attention_mask"]).last_hidden_state
            save_file({"last_hidden_state": hidden.contiguous()}, os.path.join(out_dir, name, "lora_reloaded.safetensors"),
                      metadata={"format": "pt"})
            print(f"architectures.py check: {name}: PeftModel loaded {lora_saved}")


def main():
    command, out_dir = sys.argv[1], sys.argv[2]
    {"make": make, "check": check}[command](out_dir)


if __name__ == "__main__":
    main()
