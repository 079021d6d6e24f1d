"""Generate music from a text prompt: MusicCoCa picks the style, rill plays it.

rill runs MusicCoCa (the text/audio → style model) itself, from the assets of
upstream's download; a text can go straight into the conditioning dictionary.

Set-up (once):

    pip install rill-mrt
    # MusicCoCa's assets and the MRT2 weights, where upstream's download puts them
    # (rill looks there, beside the checkpoint, in $MAGENTA_HOME or --musiccoca DIR):
    huggingface-cli download google/magenta-realtime-2 --include "resources/musiccoca/*" \\
        --local-dir ~/Documents/Magenta/magenta-rt-v2
    huggingface-cli download google/magenta-realtime-2 checkpoints/mrt2_small.safetensors \\
        --local-dir ~/Documents/Magenta/magenta-rt-v2

Run:

    python text_prompt.py "disco funk with a slap bass" --seconds 10 -o disco.wav
    python text_prompt.py "ambient piano" --notes 60,64,67 --drums off --mapper

``--style-codes C0,...,C11`` gives the 12 style codes directly (no MusicCoCa needed).
"""

import argparse
import time

import numpy as np

import rill_mrt


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("prompt", nargs="?", help="text describing the style")
    p.add_argument("--style-codes", help="12 comma-separated MusicCoCa codes instead of a prompt")
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--notes", help="MIDI pitches to hold on, comma-separated (default: free)")
    p.add_argument("--drums", choices=["on", "off"], help="default: the model decides")
    p.add_argument("--checkpoint", help="mrt2_small.safetensors (default: upstream's locations)")
    p.add_argument("--precision", default=None, help=f"one of {rill_mrt.precisions()}")
    p.add_argument("--temperature", type=float, default=1.3)
    p.add_argument("--top-k", type=int, default=40)
    p.add_argument("--cfg", type=float, default=3.0, help="style guidance (-1..7)")
    p.add_argument("--musiccoca", help="MusicCoCa's assets folder (default: found as upstream downloads it)")
    p.add_argument(
        "--mapper", action="store_true", help="map the text embedding (seed 0), as upstream's CLI and C++ engine"
    )
    p.add_argument("-o", "--output", default="rill_prompt.wav")
    args = p.parse_args()

    if not (args.style_codes or args.prompt):
        p.error("give a prompt or --style-codes")

    mrt = rill_mrt.MagentaRT2(
        checkpoint=args.checkpoint,
        precision=args.precision,
        temperature=args.temperature,
        top_k=args.top_k,
        cfg_scales={"musiccoca": args.cfg, "notes": 1.0, "drums": 1.0},
        musiccoca_dir=args.musiccoca,
    )
    print(mrt)
    if args.style_codes:
        style = [int(c) for c in args.style_codes.split(",")]
    elif args.mapper:
        style = mrt.tokenize_style(mrt.embed_style(args.prompt, use_mapper=True, seed=0))
    else:
        style = args.prompt  # embedded and tokenised by generate (no mapper, as embed_style)
    print("style codes:", ",".join(map(str, mrt.conditioning_tokens({"mulan_tokens_25hz": style})[:12] - 7)))

    # The conditioning dictionary is upstream's (MagentaRT2System.generate).
    conditioning = {"mulan_tokens_25hz": style}
    if args.notes:
        roll = np.full(128, -1)  # -1: the model decides
        roll[[int(n) for n in args.notes.split(",")]] = 3  # 3: on
        conditioning["pianoroll_with_onsets_tokens"] = roll
    if args.drums:
        conditioning["drum_pianoroll_tokens"] = [1 if args.drums == "on" else 0]

    # One second per call, continuing from the previous call's state, as a live
    # application would (the result equals a single call of the whole length).
    frames = max(1, int(args.seconds * 25))
    chunks, state, start = [], None, time.time()
    while frames > 0:
        n = min(25, frames)
        wav, state = mrt.generate(conditioning, frames=n, state=state)
        chunks.append(wav.samples)
        frames -= n
    audio = rill_mrt.Waveform(np.concatenate(chunks), mrt.sample_rate)
    took = time.time() - start
    print(f"{audio.seconds:.1f} s of audio in {took:.1f} s (real-time factor {took / audio.seconds:.2f})")
    audio.write(args.output)
    print("wrote", args.output)


if __name__ == "__main__":
    main()
