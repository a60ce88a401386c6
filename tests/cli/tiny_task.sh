# Sourced by the fault-injection scripts: a tiny retrieval task and the flags of a run on it
# that takes about a second (a 40-piece tokenizer, a 16-wide one-layer encoder).
#
#   write_tiny_task DIR   # DIR/train.tsv: 96 pairs, "which cat is red number 0" -> "the red cat lives here 0"
#   "$bin" train "${tiny_flags[@]}" --output ...
write_tiny_task() {
  local animals=(cat dog fox owl eel bee elk yak ram hen cod ant) colours=(red blue green black white pink grey gold)
  local i
  for i in $(seq 0 95); do
    local a=${animals[i % 12]} c=${colours[(i / 12) % 8]}
    printf 'which %s is %s number %d\tthe %s %s lives here %d\n' "$a" "$c" $((i % 5)) "$c" "$a" $((i % 5))
  done >"$1/train.tsv"
  tiny_flags=(--train-file "$1/train.tsv" --vocab-size 40 --dim 16 --heads 2 --layers 1 --ffn-dim 32
              --batch-size 16 --chunk-size 8 --eval false)
}
