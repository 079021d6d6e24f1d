#!/usr/bin/env bash
# Build NeMo-Speech.cpp (CPU, TTS only) and make the random-weight GGUF pair in NVIDIA's layout
# that both it and rill load (for ../race_magpie.py). Scratch: $W (default target/peers of the
# repository). Needs: git, gcc/g++ (build-essential), python3 + venv, PyPI access, about 10 GB.
# Sources: NeMo-Speech.cpp and ggml from GitHub, or local git mirrors (NSC_MIRROR, GGML_MIRROR);
# the Magpie oracle (ORACLE_SRC, default ../shared/oracle beside the repository: NeMo 3.0.0's
# random-weight .nemo recipe). Stages can be skipped with SKIP_BUILD=1 / SKIP_VENV=1 / SKIP_CKPT=1.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../../.." && pwd)"
W=${W:-$REPO/target/peers}
NSC=$W/nemo-speech-cpp
NSC_MIRROR=${NSC_MIRROR:-https://github.com/NVIDIA/NeMo-Speech.cpp}
GGML_MIRROR=${GGML_MIRROR:-https://github.com/ggml-org/ggml}
ORACLE_SRC=${ORACLE_SRC:-$REPO/../shared/oracle}
PY=$W/oracle/magpie/.venv/bin/python
mkdir -p "$W"

if [ -z "${SKIP_BUILD:-}" ]; then
  # 1. NeMo-Speech.cpp 4f9676226f667d14608487df744f375db87127f8, ggml c03b4e2bcece5134827881af90242086daf75be5
  [ -d "$NSC" ] || git clone -q "$NSC_MIRROR" "$NSC"
  git -C "$NSC" checkout -q 4f9676226f667d14608487df744f375db87127f8
  git -C "$NSC" config submodule.ggml.url "$GGML_MIRROR"
  git -C "$NSC" -c protocol.file.allow=always submodule update --init ggml   # only submodule needed
  # CMake >= 3.26 is required (bookworm's apt cmake is 3.25.1): take it and ninja from PyPI.
  [ -x "$W/venv-build/bin/cmake" ] || { python3 -m venv "$W/venv-build"; nice -n 19 "$W/venv-build/bin/pip" install -q cmake ninja; }
  export PATH=$W/venv-build/bin:$PATH
  # = the cpu-tts preset, spelled out; ggml-patches/ are NOT applied (CPU presets never apply them).
  nice -n 19 cmake -S "$NSC" -B "$NSC/build/cpu-tts" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DNEMO_SPEECH_GGML_PATCHED=OFF -DNEMO_SPEECH_BUILD_ASR=OFF -DNEMO_SPEECH_BUILD_DIAR=OFF \
    -DNEMO_SPEECH_BUILD_TTS=ON -DNEMO_SPEECH_BUILD_NMT=OFF -DNEMO_SPEECH_BUILD_CLI=ON \
    -DNEMO_SPEECH_BUILD_MIC_CAPTURE=OFF -DNEMO_SPEECH_BUILD_HTTP=OFF -DNEMO_SPEECH_BUILD_GRPC=OFF \
    -DNEMO_SPEECH_BUILD_EXAMPLES=OFF -DNEMO_SPEECH_BUILD_TESTS=OFF -DNEMO_SPEECH_BUILD_TOOLS=OFF \
    -DNEMO_SPEECH_WITH_FLASHLIGHT=OFF -DNEMO_SPEECH_WITH_NORM=OFF -DNEMO_SPEECH_TTS_WITH_JA=OFF \
    -DNEMO_SPEECH_TTS_WITH_ZH=OFF -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF
  time nice -n 19 cmake --build "$NSC/build/cpu-tts" -j2
fi

if [ -z "${SKIP_VENV:-}" ]; then
  # 2. Oracle venv (upstream NeMo 3.0.0 + torch 2.12.0; also runs NeMo-Speech.cpp's converter, + gguf).
  [ -d "$W/oracle" ] || { cp -r "$ORACLE_SRC" "$W/oracle"; chmod -R u+w "$W/oracle"; }
  cd "$W/oracle/magpie"
  [ -x .venv/bin/python ] || python3 -m venv .venv
  nice -n 19 .venv/bin/pip install -q --upgrade pip
  nice -n 19 .venv/bin/pip install -q torch==2.12.0 gguf pyyaml
  nice -n 19 .venv/bin/pip install -q torch==2.12.0 nemo_toolkit==3.0.0 "hydra-core==1.3.2" "lightning==2.4.0" \
    "omegaconf==2.3.0" torchmetrics transformers wandb webdataset nv_one_logger_core nv_one_logger_training_telemetry \
    nv_one_logger_pytorch_lightning_integration einops janome jieba librosa matplotlib nltk pandas pypinyin \
    pypinyin-dict braceexpand kaldialign "lhotse>=1.33.0" packaging sacrebleu scipy soundfile whisper_normalizer \
    "datasets>=3.2.0" "sentencepiece<1.0.0"
fi

if [ -z "${SKIP_CKPT:-}" ]; then
  # 3. Random .nemo pair (seed 0, upstream save_to), widen Magpie's text table to v2602's 2362 rows,
  #    convert both with NeMo-Speech.cpp's own convert_model.py (unmodified, default --outtype = f16).
  CK=${CK:-$W/ckpt}; G=${G:-$W/gguf}; mkdir -p "$CK" "$G"
  cd "$W/oracle/magpie"
  nice -n 19 "$PY" make_checkpoint.py --seed 0 --out "$CK" --manifest-dir "$CK/results"
  nice -n 19 "$PY" "$HERE/widen_text_table.py" "$CK/magpie_seed0.nemo" "$CK/magpie_v2602_seed0.nemo" --oracle-dir "$W/oracle"
  cd "$NSC"
  nice -n 19 "$PY" convert_model.py "$CK/magpie_v2602_seed0.nemo" --outfile "$G/magpie_v2602_seed0.f16.gguf"
  nice -n 19 "$PY" convert_model.py "$CK/nanocodec_seed0.nemo" --outfile "$G/nanocodec_seed0.decoder.f16.gguf"
  # NeMo-Speech.cpp's English front end reads *ipa_cmudict* and *heteronyms-052722* from a directory.
  mkdir -p "$G/tokenizer"; tar -xf "$CK/magpie_v2602_seed0.nemo" -C "$G/tokenizer" --exclude='./model_weights.ckpt'
  sha256sum "$G"/*.gguf; "$PY" "$HERE/gguf_tensor_digest.py" "$G"/*.gguf
fi

# 4. The race: ../race_magpie.py (W=$W). One short run each (32 frames, 2 threads, seed 0):
#   G=$W/gguf; TEXT="Hello world, I read the rill docs."
#   $NSC/build/cpu-tts/bin/nemo-speech --verbose synthesize "$TEXT" --magpie-model $G/magpie_v2602_seed0.f16.gguf \
#     --codec-model $G/nanocodec_seed0.decoder.f16.gguf --tokenizer-dir $G/tokenizer --language en --device cpu \
#     --threads 2 --steps 32 --seed 0 --no-warmup -o nsc.wav --force
#   target/release/rill speak --checkpoint $G/magpie_v2602_seed0.f16.gguf \
#     --codec $G/nanocodec_seed0.decoder.f16.gguf --text "$TEXT" --language en --threads 2 --max-frames 32 --seed 0 -o rill.wav
