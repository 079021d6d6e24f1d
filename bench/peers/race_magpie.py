#!/usr/bin/env python3
"""Same-machine race: NVIDIA's NeMo-Speech.cpp (C++, ggml) against `rill speak`, Magpie
TTS + NanoCodec on the same random-weight GGUF pair in NVIDIA's layout, the same text,
seed and frame count, cold processes one after the other, ROUNDS alternations.

  bench/peers/race_magpie.py [--rounds 3] [--frames 200]

Needs what nemo-speech-cpp/reproduce.sh makes in $W (default target/peers): the
NeMo-Speech.cpp build, the GGUF pair (f16: at this commit its converter writes Magpie
as f16 or f32 only) and the English dictionary folder. Random weights still sample the end-of-speech token now and then,
and the two engines' samplers differ, so a run makes up to --frames frames (46.4 ms of
audio each), not the same number on both sides: compared per frame, over the whole
request and after the first audio (the streaming rate, where setup no longer counts). Each engine's own timing line is
read: synthesis time from the request to the last sample (model loading excluded),
first audio, and frames. Not run in CI.

Configurations (2 cores): NeMo-Speech.cpp with `--threads 1 --tts.codec-threads 1`
(decoder and codec one thread each, as rill's two stages) and with 2 + 2 (its
default for --threads 2: four threads on two cores); rill `--threads 2` (two
stages, one thread each), with the GGUF's f16 weights as they are (its default),
and with `--precision int8` (rill's own 8-bit format, which NeMo-Speech.cpp has no
counterpart of for Magpie).
"""

import argparse
import os
import pathlib
import re
import statistics
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
TEXT = ("The quick brown fox jumps over the lazy dog, and then it runs back home "
        "to read a book about streaming speech on ordinary computers.")
RATE = 22050


def cpu_name():
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def nemo_speech(w, magpie, frames, threads, out):
    cmd = [str(w / "nemo-speech-cpp/build/cpu-tts/bin/nemo-speech"), "--verbose", "synthesize",
           TEXT, "--magpie-model", str(magpie),
           "--codec-model", str(w / "gguf/nanocodec_seed0.decoder.f16.gguf"),
           "--tokenizer-dir", str(w / "gguf/tokenizer"), "--language", "en", "--device", "cpu",
           "--threads", str(threads), "--tts.codec-threads", str(threads),
           "--steps", str(frames), "--seed", "0", "--no-warmup", "-o", str(out), "--force"]
    log = subprocess.run(cmd, capture_output=True, text=True, check=True)
    text = log.stdout + log.stderr
    m = re.search(r"generated (\d+) codec frames and streamed (\d+) samples in ([\d.]+) s", text)
    ttfa = re.search(r"e2e_ttfa_ms=([\d.]+)", text)
    assert m and ttfa, text[-2000:]
    return dict(frames=int(m[1]), seconds=float(m[3]), first_audio=float(ttfa[1]) / 1000)


def rill(w, precision, frames, out):
    cmd = [os.environ.get("RILL_BIN", str(ROOT / "target/release/rill")), "speak",
           "--checkpoint", str(w / "gguf/magpie_v2602_seed0.f16.gguf"),
           "--codec", str(w / "gguf/nanocodec_seed0.decoder.f16.gguf"), "--text", TEXT,
           "--language", "en", "--threads", "2", "--max-frames", str(frames), "--seed", "0",
           "--precision", precision, "-o", str(out)]
    log = subprocess.run(cmd, capture_output=True, text=True, check=True)
    text = log.stdout + log.stderr
    m = re.search(r"\((\d+) frames, [\d.]+ s of audio\) in ([\d.]+) s: first audio after ([\d.]+) s",
                  text)
    assert m, text[-2000:]
    return dict(frames=int(m[1]), seconds=float(m[2]), first_audio=float(m[3]))


def streaming(res):
    """ms per frame after the first audio."""
    return (res["seconds"] - res["first_audio"]) * 1000 / (res["frames"] - 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--frames", type=int, default=200)
    args = ap.parse_args()
    w = pathlib.Path(os.environ.get("W", ROOT / "target/peers")).resolve()
    out = w / "race"
    out.mkdir(parents=True, exist_ok=True)
    runs = [("NeMo-Speech.cpp f16, 1+1 threads", lambda: nemo_speech(
                w, w / "gguf/magpie_v2602_seed0.f16.gguf", args.frames, 1, out / "nsc.wav")),
            ("NeMo-Speech.cpp f16, 2+2 threads", lambda: nemo_speech(
                w, w / "gguf/magpie_v2602_seed0.f16.gguf", args.frames, 2, out / "nsc.wav")),
            ("rill f16 weights (default), 2 threads", lambda: rill(
                w, "f32", args.frames, out / "rill.wav")),
            ("rill int8, 2 threads", lambda: rill(w, "int8", args.frames, out / "rill.wav"))]
    print(f"== {cpu_name()}, {os.cpu_count()} threads; up to {args.frames} frames "
          f"({args.frames * 1024 / RATE:.1f} s of audio) per run, {args.rounds} rounds")
    results = {name: [] for name, _ in runs}
    for r in range(args.rounds):
        for name, run in runs:
            res = run()
            assert res["frames"] >= 16, (name, res)
            results[name].append(res)
            print(f"round {r + 1}  {name:42s} {res['frames']:4d} frames {res['seconds']:6.2f} s  "
                  f"{res['seconds'] * 1000 / res['frames']:6.1f} ms/frame  "
                  f"after first audio {streaming(res):6.1f}  "
                  f"first audio {res['first_audio']:5.2f} s", flush=True)
    print("== medians")
    frame_s = 1024 / RATE
    for name, rs in results.items():
        ms = statistics.median(r["seconds"] * 1000 / r["frames"] for r in rs)
        fa = statistics.median(r["first_audio"] for r in rs)
        after = statistics.median(streaming(r) for r in rs)
        print(f"{name:42s} {ms:6.1f} ms/frame ({frame_s * 1000 / ms:4.2f}x real time), "
              f"after first audio {after:6.1f} ms/frame ({frame_s * 1000 / after:4.2f}x), "
              f"first audio {fa:5.2f} s")


if __name__ == "__main__":
    main()
