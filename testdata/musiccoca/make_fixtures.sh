#!/usr/bin/env bash
# Re-record the MusicCoCa gate set with the MusicCoCa oracle (DBraun's flax.nnx port, random weights).
# Usage: MC_ORACLE=<the oracle's directory, after its setup.sh> OUT=<scratch dir> bash make_fixtures.sh
# About 2 minutes on 2 cores and 0.9 GB in $OUT (the seed-1 weights, never committed).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${MC_ORACLE:?set MC_ORACLE to the MusicCoCa oracle directory}"
: "${OUT:?set OUT to a scratch directory}"
PY=${PY:-$MC_ORACLE/.venv/bin/python}
cd "$MC_ORACLE"
$PY make_weights.py --seed 1 --out "$OUT/seed1"
# Other weights and prompts than the oracle's developer set: capitals, digits the tiny
# tokenizer lacks, non-ASCII, runs of spaces, a prompt longer than the 127-token limit,
# a blend with audio and a non-positive weight, a 17 s clip (two windows, the last padded).
$PY record.py --weights "$OUT/seed1" --out "$here/gate_seed1.npz" --no-intermediates \
  --prompts "Deep House, 124 BPM" "cinematic orchestral strings with brass swells" \
            "Café jazz — smooth saxophone!" "  synthwave   80s  retro  " \
            "$(printf 'rock %.0s' $(seq 1 140))" "reggae dub bass" \
  --audio-seed 5 --long-audio-seconds 17 --blend "0=0.7,3=0.3,audio=0.5,1=-1"
$PY check_recording.py "$here/gate_seed1.npz" --weights "$OUT/seed1" | tail -1
cp "$OUT/seed1/weights_seed1.json" "$here/weights_seed1.json"
