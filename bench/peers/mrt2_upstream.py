#!/usr/bin/env python
"""Times upstream Magenta RealTime 2 (PyPI magenta-rt 2.0.3, MLX on the CPU) through
its public API, as a user runs it: `MagentaRT2System(size='mrt2_small',
checkpoint=…, bits=…)` then `generate(conditioning, frames=N)`. No MusicCoCa is
needed: the style is given as upstream's default codes (its C++ engine's "piano"),
as `rill bench` does.

  python mrt2_upstream.py --checkpoint mrt2_small.safetensors --bits 8 --frames 10

--bits none: upstream's bf16 (its loader converts the weights to bf16);
8: its default deployment (bf16, then nn.quantize, groups of 64); 4: groups of 32.
Prints one JSON line: the mean ms per 40 ms frame over one generate() call of
--frames frames after a warm-up call, and the real-time factor.
"""

import argparse
import json
import os
import platform
import time

PIANO = [325, 98, 979, 657, 802, 453, 475, 622, 729, 934, 567, 782]


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


class NoStyleModel:
    """Stands in for MusicCoCa: the style arrives as codes, never as text."""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", required=True, help="an mrt2_small .safetensors")
    ap.add_argument("--bits", default="8", choices=["none", "8", "4"])
    ap.add_argument("--frames", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    args = ap.parse_args()

    import mlx.core as mx
    from magenta_rt.mlx.system import MagentaRT2System

    t = time.perf_counter()
    system = MagentaRT2System(
        size="mrt2_small",
        style_model=NoStyleModel(),
        checkpoint=os.path.abspath(args.checkpoint),
        bits=None if args.bits == "none" else int(args.bits),
    )
    load_s = time.perf_counter() - t
    conditioning = {"mulan_tokens_25hz": PIANO}
    _, state = system.generate(conditioning, frames=args.warmup)
    t = time.perf_counter()
    system.generate(conditioning, frames=args.frames, state=state)
    ms = (time.perf_counter() - t) * 1000 / args.frames
    print(json.dumps({
        "engine": "magenta-rt 2.0.3 (MLX " + mx.__version__ + ", CPU)",
        "precision": {"none": "bf16", "8": "int8 (nn.quantize, group 64)",
                      "4": "int4 (nn.quantize, group 32)"}[args.bits],
        "cpu": cpu_name(),
        "threads": os.cpu_count(),
        "frames": args.frames,
        "ms_per_frame": round(ms, 1),
        "rtf": round(ms / 40.0, 2),
        "load_s": round(load_s, 1),
    }))


if __name__ == "__main__":
    main()
