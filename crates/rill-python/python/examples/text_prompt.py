"""Generate music from a text prompt: upstream's MusicCoCa picks the style, rill plays it.

MusicCoCa (the text/audio → style model) is not part of rill. This example uses
upstream's implementation, ``magenta_rt.musiccoca``, for users who have it and its
assets; rill then generates on the CPU without MLX.

Set-up (once):

    pip install rill-mrt magenta-rt          # magenta-rt brings magenta_rt.musiccoca
    # MusicCoCa's assets, where magenta_rt looks for them
    # ($MAGENTA_HOME/magenta-rt-v2/resources/musiccoca, default ~/Documents/Magenta/...):
    mrt models init                          # upstream's command; or by hand:
    # huggingface-cli download google/magenta-realtime-2 --include "resources/musiccoca/*" \\
    #     --local-dir ~/Documents/Magenta/magenta-rt-v2
    # and the MRT2 weights (see the README's "Real weights"):
    huggingface-cli download google/magenta-realtime-2 checkpoints/mrt2_small.safetensors \\
        --local-dir ~/Documents/Magenta/magenta-rt-v2

Run:

    python text_prompt.py "disco funk with a slap bass" --seconds 10 -o disco.wav
    python text_prompt.py "ambient piano" --notes 60,64,67 --drums off --checkpoint mrt2_small.safetensors

Without MusicCoCa, ``--style-codes C0,...,C11`` gives the 12 style codes directly.
"""

import argparse
import sys
import time

import numpy as np

import rill_mrt


def style_codes(prompt: str) -> list:
    """The 12 MusicCoCa RVQ codes of a text prompt (upstream's embed + tokenize)."""
    try:
        from magenta_rt import musiccoca
    except ImportError:
        sys.exit(
            "this example needs upstream's MusicCoCa: pip install magenta-rt (plus its assets, "
            "see the top of this file), or pass --style-codes"
        )
    model = musiccoca.MusicCoCa()
    embedding = model.embed(prompt)  # [768] float32
    return [int(c) for c in np.asarray(model.tokenize(embedding)).reshape(-1)[:12]]


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
    p.add_argument("-o", "--output", default="rill_prompt.wav")
    args = p.parse_args()

    if args.style_codes:
        codes = [int(c) for c in args.style_codes.split(",")]
    elif args.prompt:
        codes = style_codes(args.prompt)
    else:
        p.error("give a prompt or --style-codes")
    print("style codes:", ",".join(map(str, codes)))

    # The conditioning dictionary is upstream's (MagentaRT2System.generate).
    conditioning = {"mulan_tokens_25hz": codes}
    if args.notes:
        roll = np.full(128, -1)  # -1: the model decides
        roll[[int(n) for n in args.notes.split(",")]] = 3  # 3: on
        conditioning["pianoroll_with_onsets_tokens"] = roll
    if args.drums:
        conditioning["drum_pianoroll_tokens"] = [1 if args.drums == "on" else 0]

    mrt = rill_mrt.MagentaRT2(
        checkpoint=args.checkpoint,
        precision=args.precision,
        temperature=args.temperature,
        top_k=args.top_k,
        cfg_scales={"musiccoca": args.cfg, "notes": 1.0, "drums": 1.0},
    )
    print(mrt)

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
