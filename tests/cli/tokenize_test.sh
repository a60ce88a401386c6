#!/usr/bin/env bash
# gradcache tokenize: on every tokenizer kind of hf.tokenizer_kinds (a directory per kind with the
# ids Python's `tokenizers` gives each line of its corpus), the program prints the same ids, with
# and without the special tokens, from a file and from standard input; bad input is refused with
# a message and exit 1, a bad flag with exit 2.
#   tokenize_test.sh GRADCACHE WORK_DIR KINDS_DIR
set -uo pipefail
source "$(dirname "$0")/cli_common.sh"
kinds=$3
[ -f "$kinds/unavailable.txt" ] && { echo "SKIPPED: $(cat "$kinds/unavailable.txt")"; exit 77; }
[ -f "$kinds/summary.json" ] || { echo "SKIPPED: $kinds has no expected ids (hf.tokenizer_kinds did not run)"; exit 77; }
corpus=$kinds/corpus.txt
# The CLI's own lines of the first 20,000 texts: the full corpus is TokenizerKinds.*' job.
head -n 20000 "$corpus" >"$work/texts.txt"
checked=0
for dir in "$kinds"/*/; do
  kind=$(basename "$dir")
  [ -f "$dir/expected.txt" ] || continue
  "$bin" tokenize --tokenizer "$dir" --input "$work/texts.txt" >"$work/$kind.out" 2>"$work/$kind.err"
  expect_status 0 $? "tokenize --tokenizer $kind"
  head -n 20000 "$dir/expected.txt" | tr -d ' ' | cmp -s - "$work/$kind.out" || fail "$kind: the ids differ from Python's"
  "$bin" tokenize --tokenizer "$dir/tokenizer.json" --add-special-tokens false <"$work/texts.txt" >"$work/$kind.plain.out" \
    2>"$work/$kind.err"
  expect_status 0 $? "tokenize --add-special-tokens false < texts ($kind)"
  head -n 20000 "$dir/expected_plain.txt" | tr -d ' ' | cmp -s - "$work/$kind.plain.out" ||
    fail "$kind: the ids without special tokens differ from Python's"
  checked=$((checked + 1))
done
[ "$checked" -ge 8 ] || fail "only $checked tokenizer kinds checked"
echo "tokenize: $checked kinds, 20000 lines each, the same ids as Python's tokenizers"

# A last line without a newline counts; an empty input prints nothing.
printf 'hello\nworld' | "$bin" tokenize --tokenizer "$kinds/bert" >"$work/two.out" 2>"$work/two.err"
expect_status 0 $? "two lines"
[ "$(wc -l <"$work/two.out")" = 2 ] || fail "a last line without a newline is a text"
"$bin" tokenize --tokenizer "$kinds/bert" </dev/null >"$work/none.out" 2>"$work/none.err"
expect_status 0 $? "empty input"
[ -s "$work/none.out" ] && fail "an empty input printed ids"

# Bad input.
"$bin" tokenize --tokenizer "$work/missing" </dev/null 2>"$work/missing.err"
expect_status 1 $? "a missing tokenizer"
grep -q "missing: no such file or directory; give a tokenizer.json or a model directory" "$work/missing.err" ||
  fail "the message for a missing tokenizer"
mkfifo "$work/fifo"
timeout 10 "$bin" tokenize --tokenizer "$work/fifo" </dev/null 2>"$work/fifo.err"
expect_status 1 $? "a FIFO as the tokenizer"
grep -q "not a regular file" "$work/fifo.err" || fail "the message for a FIFO"
echo '{"model": {"type": "WordLevel", "vocab": {}}}' >"$work/word_level.json"
"$bin" tokenize --tokenizer "$work/word_level.json" </dev/null 2>"$work/word_level.err"
expect_status 1 $? "an unsupported model"
grep -q 'the model "WordLevel" is not supported (supported: WordPiece, BPE, Unigram)' "$work/word_level.err" ||
  fail "the message for an unsupported model"
"$bin" tokenize --tokenizer "$kinds/bert" --input "$work/no_such_file" 2>"$work/input.err"
expect_status 1 $? "a missing --input"
grep -q "no_such_file: cannot be opened" "$work/input.err" || fail "the message for a missing --input"
"$bin" tokenize --tokenizer "$kinds/bert" --add-special-tokens maybe </dev/null 2>"$work/flag.err"
expect_status 2 $? "--add-special-tokens maybe"
# Truncation keeps the special tokens: at most 5 ids a line.
"$bin" tokenize --tokenizer "$kinds/bert" --max-len 5 --input "$work/texts.txt" >"$work/cut.out" 2>"$work/cut.err"
expect_status 0 $? "--max-len 5"
awk -F, '{ if (NF > 5) bad = 1 } END { exit bad }' "$work/cut.out" || fail "--max-len 5 printed more than 5 ids"
echo "tokenize: bad input refused"
