# Sourced by the shell tests of the gradcache program, with the test's own arguments
# (GRADCACHE_BINARY WORK_DIR): sets `bin` and a fresh `work` directory, and how a check fails.
#
#   source "$(dirname "$0")/cli_common.sh"
#   "$bin" eval ... 2>"$work/x.err"; expect_status 1 $? "eval of ..."
bin=$1
work=$2
# The Python whose torch is the LibTorch the program was built against, and its torchrun
# (tests/CMakeLists.txt passes both from the build's GRADCACHE_PYTHON).
python=${GRADCACHE_PYTHON:-python3}
torchrun=${GRADCACHE_TORCHRUN:-torchrun}
rm -rf "$work"
mkdir -p "$work"

# Fails the test with a message, then the end of every log the test wrote (*.err, *.out).
fail() {
  echo "FAIL: $*" >&2
  for f in "$work"/*.err "$work"/*.out; do
    [ -e "$f" ] && { echo "--- $f"; tail -8 "$f"; }
  done >&2
  exit 1
}
expect_status() {  # expected, actual, what
  [ "$1" = "$2" ] || fail "$3: exit status $2, expected $1"
}

# DIR/corpus.tsv, DIR/queries.tsv and DIR/qrels.txt from DIR/train.tsv: line N's passage is
# document dN, its query qN, and qN's one relevant document dN. Sets `data` (eval's flags) and
# `eval_data` (train's) to these files.
write_eval_set() {
  awk -F'\t' '{print "d" NR "\t" $2}' "$1/train.tsv" >"$1/corpus.tsv"
  awk -F'\t' '{print "q" NR "\t" $1}' "$1/train.tsv" >"$1/queries.tsv"
  awk '{print "q" NR " 0 d" NR " 1"}' "$1/train.tsv" >"$1/qrels.txt"
  data=(--corpus "$1/corpus.tsv" --queries "$1/queries.tsv" --qrels "$1/qrels.txt")
  eval_data=(--eval-corpus "$1/corpus.tsv" --eval-queries "$1/queries.tsv" --eval-qrels "$1/qrels.txt")
}
