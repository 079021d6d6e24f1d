#!/usr/bin/env bash
# Builds every fuzz target and runs each, one at a time, for a bounded time; exits
# non-zero on the first crash, panic, abort, timeout or out-of-memory (libFuzzer
# saves the input under fuzz/artifacts/TARGET/). Prints executions and coverage.
#
#   fuzz/run.sh [SECONDS] [TARGET...]      (default: 60 s each, every target)
#
# RILL_FUZZ_SANITIZER=address|none (default address): `none` runs about twice as
# many executions per second; address also catches undefined behaviour in unsafe code.
# Needs cargo-fuzz (`cargo install cargo-fuzz --locked`). The stable toolchain is
# enough: RUSTC_BOOTSTRAP=1 lets it accept the -Z flags cargo-fuzz passes.
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${1:-60}
[ $# -gt 0 ] && shift
all=(npy npz checkpoint session_file codec_state protocol openai_speech wyoming gguf torch nemo musiccoca_spm musiccoca_tflite audio_decode ipa_lexicon text normalize ja_dictionary)
targets=("${@:-${all[@]}}")
san=${RILL_FUZZ_SANITIZER:-address}
export RUSTC_BOOTSTRAP=1

# Longest input per target: room for the seeds and a bit more, no more (longer
# inputs only slow the search down).
max_len() {
  case $1 in
    npy) echo 4096 ;;
    npz) echo 16384 ;;
    checkpoint) echo 65536 ;; # the header-only pre-quantised seed is 57 KB
    session_file) echo 8192 ;;
    codec_state) echo 256 ;;
    protocol) echo 4096 ;;
    openai_speech) echo 8192 ;;
    wyoming) echo 8192 ;;
    gguf) echo 4096 ;;
    torch) echo 16384 ;;
    nemo) echo 16384 ;;
    musiccoca_spm) echo 16384 ;; # the model seeds are 3-7 KB
    musiccoca_tflite) echo 8192 ;;
    audio_decode) echo 8192 ;;
    ipa_lexicon) echo 4096 ;;
    text) echo 4096 ;;
    normalize) echo 4096 ;;
    ja_dictionary) echo 8192 ;; # the written dictionary seeds are about 3 KB
    *) echo "unknown fuzz target $1 (targets: ${all[*]})" >&2; exit 2 ;;
  esac
}
for t in "${targets[@]}"; do max_len "$t" >/dev/null; done

echo "== building the fuzz targets (sanitizer $san)"
cargo fuzz build -s "$san"

mkdir -p fuzz/logs
total=0
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t"
  log="fuzz/logs/$t.log"
  echo "== fuzz $t: ${secs} s, sanitizer $san, max_len $(max_len "$t")"
  if ! cargo fuzz run -s "$san" "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- \
      -max_total_time="$secs" -rss_limit_mb=2048 -max_len="$(max_len "$t")" \
      -timeout=10 -print_final_stats=1 >"$log" 2>&1; then
    tail -n 40 "$log"
    # The cause and the input last, so the end of a CI log is enough to reproduce.
    grep -m 1 -A 1 -E 'panicked at|ERROR: (AddressSanitizer|libFuzzer)' "$log" || true
    input=$(ls -t "fuzz/artifacts/$t"/* 2>/dev/null | head -n 1 || true)
    if [ -n "$input" ]; then
      echo "input $input ($(wc -c <"$input") bytes), first 2 KB as base64:"
      head -c 2048 "$input" | base64 -w 0
      echo
    fi
    echo "FAIL: fuzz target $t found a bug; input saved under fuzz/artifacts/$t/" >&2
    exit 1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  cov=$(grep -E '^#[0-9]+' "$log" | tail -n 1 | grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [^ ]+' || true)
  echo "   $t: ${runs:-?} executions, $cov"
  total=$((total + ${runs:-0}))
done
echo "fuzzing: $total executions, 0 crashes"
