"""Records test vectors for rill's `mlx-int8` format: MLX's CPU int8 product on bf16.

Run with the oracle's MLX (`mlx[cpu]==0.32.4`, see the oracle's SETUP.md):

    python make_mlx_int8.py            # writes mlx_int8.npz next to this file

Upstream's default deployment quantises bf16 weights with `mx.quantize(w, 64, 8)`
(scales and biases stored in bf16) and multiplies with `mx.quantized_matmul` on bf16
activations; on CPU that is a bf16 running sum (see `src/gemv_mlx8.rs`). Keys:

    w       [40,4096] f32   the weights (rounded to bf16 by the test, as upstream's loader)
    x       [4096]    f32   bf16 activation values
    q       [40,4096] u8    quantised values (unpacked)
    scales, biases [40,64] f32   the bf16 scales and biases, widened
    y       [40]      f32   mx.quantized_matmul(x, q, scales, biases, transpose=True), bf16 widened
    deq     [40,4096] f32   mx.dequantize(q, scales, biases) (QuantizedEmbedding rows), widened
"""

import os

import mlx.core as mx
import numpy as np

ROWS, COLS = 40, 4096


def main():
    rng = np.random.default_rng(20261201)
    w = rng.normal(0.0, 1.0 / np.sqrt(COLS), (ROWS, COLS)).astype(np.float32)
    w[3] *= 40.0  # a row with a large range
    x = np.array(mx.array(rng.normal(0.0, 1.0, COLS).astype(np.float32)).astype(mx.bfloat16).astype(mx.float32))
    wq, sc, bi = mx.quantize(mx.array(w).astype(mx.bfloat16), group_size=64, bits=8)
    y = mx.quantized_matmul(mx.array(x).astype(mx.bfloat16)[None], wq, sc, bi, transpose=True, group_size=64, bits=8)
    q = mx.dequantize(wq, mx.ones_like(sc), mx.zeros_like(bi), group_size=64, bits=8)
    deq = mx.dequantize(wq, sc, bi, group_size=64, bits=8)
    f = lambda a: np.array(a.astype(mx.float32))
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'mlx_int8.npz')
    np.savez_compressed(out, w=w, x=x, q=f(q).astype(np.uint8), scales=f(sc), biases=f(bi), y=f(y)[0], deq=f(deq))
    print('wrote', out)


if __name__ == '__main__':
    main()
