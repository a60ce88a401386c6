# Sourced by the studies (bench/negatives.sh, bench/pretrained.sh): `step NAME RESULT COMMAND...`
# runs COMMAND with its output in $out/NAME.log, unless RESULT exists already (an interrupted
# study continues where it stopped), and writes the seconds it took to $out/NAME.seconds. Needs
# `out` (the study's run directory) and `study` (its name, for the messages).
now() { date +%s.%N; }
step() {
  local name=$1 result=$2; shift 2
  if [ -s "$result" ]; then echo "$study: $name: reusing $result"; return; fi
  echo "$study: $(date +%H:%M:%S) $name"
  local t0; t0=$(now)
  "$@" >"$out/$name.log" 2>&1 || { echo "$study: $name failed; see $out/$name.log" >&2; tail -5 "$out/$name.log" >&2; exit 1; }
  python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$t0" "$(now)" >"$out/$name.seconds"
}
