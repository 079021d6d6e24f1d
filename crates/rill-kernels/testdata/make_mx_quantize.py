"""Records `mx.quantize` test vectors for rill's MLX-exact affine quantiser.

Run with the oracle's MLX (`mlx[cpu]==0.32.4`, see the oracle's SETUP.md):

    python make_mx_quantize.py            # writes mx_quantize.npz next to this file

The output is deterministic (fixed numpy seed, MLX CPU). Keys, for each
(bits, group) in CONFIGS, suffix `_{bits}b{group}`:

    w              [16,128] f32   the input matrix (same for every config)
    q_*            [16,128*bits/32] u32   packed words as MLX stores them
                                  (value j of a word in bits [bits*j, bits*(j+1)), LSB first)
    scales_*, biases_* [16,128/group] f32
    x              [128] f32      an activation vector
    y_*            [16] f32       mx.quantized_matmul(x, q, scales, biases, transpose=True)
"""

import os
import sys

import mlx.core as mx
import numpy as np

ROWS, COLS = 16, 128
CONFIGS = [(8, 64), (4, 64), (4, 32)]


def matrix() -> np.ndarray:
    rng = np.random.default_rng(20260509)
    w = rng.normal(0.0, 1.0 / np.sqrt(COLS), (ROWS, COLS)).astype(np.float32)
    w[1] *= 100.0                                        # large magnitudes
    w[2] = np.abs(w[2]) + 0.1                            # positive only: max is the edge
    w[3] = -np.abs(w[3]) - 0.1                           # negative only: min is the edge
    w[4] = 0.0                                           # all zero
    w[5] = 0.25                                          # constant: zero range, scale clamp
    w[6] *= 1e-8                                         # range below the 1e-7 scale floor
    sym = rng.uniform(-1.0, 1.0, COLS).astype(np.float32)
    sym[::32] = 0.75
    sym[1::32] = -0.75                                   # |min| == |max| in every group
    w[7] = sym
    w[8] = (np.arange(COLS) % 17 - 8).astype(np.float32) / 16.0   # values on a grid (ties)
    w[9, :] = rng.normal(0.0, 0.01, COLS)
    w[9, 5] = 3.0                                        # one outlier per row
    w[9, 100] = -5.0
    w[10] = np.where(np.arange(COLS) % 2 == 0, 1e-40, -1e-39)  # subnormals
    w[11] = (w[11].view(np.uint32) & 0xFFFF0000).view(np.float32)  # bf16-representable
    return w


def main() -> None:
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mx_quantize.npz")
    w = matrix()
    x = np.random.default_rng(7).normal(0.0, 1.0, COLS).astype(np.float32)
    arrays = {"w": w, "x": x}
    wm, xm = mx.array(w), mx.array(x)
    for bits, group in CONFIGS:
        q, s, b = mx.quantize(wm, group_size=group, bits=bits)
        y = mx.quantized_matmul(xm[None], q, s, b, transpose=True, group_size=group, bits=bits)
        sfx = f"_{bits}b{group}"
        assert q.dtype == mx.uint32 and s.dtype == mx.float32 and b.dtype == mx.float32
        arrays["q" + sfx] = np.array(q)
        arrays["scales" + sfx] = np.array(s)
        arrays["biases" + sfx] = np.array(b)
        arrays["y" + sfx] = np.array(y)[0]
    np.savez(out, **arrays)
    print(f"mlx {mx.__version__}, numpy {np.__version__}: wrote {out} "
          f"({os.path.getsize(out)} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
