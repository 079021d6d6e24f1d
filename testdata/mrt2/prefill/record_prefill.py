#!/usr/bin/env python
"""Records upstream MRT2's state after an audio-continuation prefill (fixture `prefill.npz`).

Runs the oracle harness (`record.py`, `oracle_common.py`, unmodified; `--oracle` is their
directory) on upstream's unmodified `magenta_rt.mlx` (magenta-rt 2.0.3, mlx[cpu] 0.32.4), fp32,
mrt2_small with the random weights of seed 0 (the checkpoint rill's `synthetic_checkpoint`
writes; its sha256 is checked against `../synth_file_sha256.json`).

The prefill follows upstream's C++ engine (`core/src/mlx_engine.cpp`,
`MLXEngine::Impl::prefill_with_token_array`, "Option B"), done with the same Python model the
engine's `.mlxfn` is traced from:

  for s in 0 .. N-2:  decoder-internal previous_frame <- ids[s];
                      layer-0 step with forced_tokens = ids[s] under the prefill conditioning
                      (the depth loop is skipped, nothing sampled)
  then:               decoder-internal previous_frame <- ids[N-1]   (no model call)

with ids = code + 1024 k + 6. Prefill conditioning (`prefill_cond` in the engine): every note
masked (token 6); drum token 7 (raw 0, "no drums") when drumless, else 6; the CFG tokens of the
generation settings; style masked (mask_musiccoca_during_prefill = true, the default), or, with
the style kept, style levels 0..5 as code + 7 and 6..11 masked (kMusicCoCaRVQLevels −
kMusicCoCaMaskedTailLevels = 6 kept levels) -- case `P3`. `P4` keeps all 12 levels (not what the
engine does; recorded to tell the 6-vs-12 question apart from other differences).

Then M frames are generated (unmodified `step_with_emits`, tokens mode, like `record.py`) under
the generation conditioning built by upstream's `MagentaRT2System._build_conditioning` (all 12
style levels, as `D1`), the sampler key being key(seed) as in `record.py --seed`.

  $PY record_prefill.py --oracle ORACLE_DIR --checkpoint small_s0.safetensors --out prefill.npz
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

import numpy as np

CODEBOOK = 1024
RESERVED = 6  # decoder reserved ids
COND_OFFSET = 7  # conditioning token = raw + 7; masked (-1) -> 6
KEPT_LEVELS = 6  # kMusicCoCaRVQLevels - kMusicCoCaMaskedTailLevels

D1_STYLE = [660, 1016, 295, 206, 857, 841, 391, 857, 619, 70, 401, 22]
PIANO_STYLE = [325, 98, 979, 657, 802, 453, 475, 622, 729, 934, 567, 782]


def codes(seed, n):
  """N rows of raw codes: seeded uniform, with a repeated row and the range ends."""
  c = np.random.default_rng(seed).integers(0, CODEBOOK, size=(n, 12)).astype(np.int32)
  c[3] = c[1]
  c[5, :6] = 0
  c[5, 6:] = CODEBOOK - 1
  return c


CASES = [
    dict(name='P1', style=D1_STYLE, keep_style=0, notes=None, drums=None,
         cfg=dict(musiccoca=3.0, notes=1.0, drums=1.0), temperature=1.3, top_k=40, seed=42,
         codes_seed=1),
    dict(name='P2', style=PIANO_STYLE, keep_style=0, notes=[48, 55, 60], drums='off',
         cfg=dict(musiccoca=5.0, notes=2.0, drums=1.0), temperature=1.0, top_k=100, seed=7,
         codes_seed=2),
    dict(name='P3', style=PIANO_STYLE, keep_style=KEPT_LEVELS, notes=None, drums=None,
         cfg=dict(musiccoca=3.0, notes=1.0, drums=1.0), temperature=1.3, top_k=40, seed=42,
         codes_seed=3),
    dict(name='P4', style=PIANO_STYLE, keep_style=12, notes=None, drums=None,
         cfg=dict(musiccoca=3.0, notes=1.0, drums=1.0), temperature=1.3, top_k=40, seed=42,
         codes_seed=3),
]


def decision_margin(logits, gumbel, temperature, top_k):
  """As rill's tests/common `decision_margin` (f32 scores): distance to another decision."""
  logits = logits.astype(np.float32)
  s = np.sort(logits)[::-1]
  kth = s[top_k - 1] if top_k <= len(s) else -np.inf
  out = s[s < kth]
  score = logits + gumbel.astype(np.float32) * np.float32(temperature)
  kept = logits >= kth
  w = int(np.flatnonzero(kept)[np.argmax(score[kept])])
  others = kept.copy()
  others[w] = False
  lead = score[w] - score[others].max()
  drop_out = logits[w] - out[0] if len(out) else np.inf
  come = (~kept) & (score > score[w])
  come_in = (kth - logits[come]).min() if come.any() else np.inf
  return float(min(lead, drop_out, come_in)), w


def sha256(path):
  h = hashlib.sha256()
  with open(path, 'rb') as f:
    for chunk in iter(lambda: f.read(1 << 24), b''):
      h.update(chunk)
  return h.hexdigest()


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument('--oracle', required=True, help='directory of record.py / oracle_common.py')
  ap.add_argument('--checkpoint', required=True, help='mrt2_small random weights, seed 0')
  ap.add_argument('--out', required=True)
  ap.add_argument('--prefill-frames', type=int, default=8)
  ap.add_argument('--frames', type=int, default=8)
  args = ap.parse_args()
  sys.path.insert(0, os.path.abspath(args.oracle))

  import magenta_rt  # noqa: F401  (installs the vendored sequence_layers import hook)
  import mlx.core as mx
  import sequence_layers.mlx as sl
  import record as R
  from magenta_rt.mlx import export as mrt_export
  from oracle_common import build_sampler, load_reference_weights
  from record_portable import build_conditioning

  here = os.path.dirname(os.path.abspath(__file__))
  want = json.load(open(os.path.join(here, '..', 'synth_file_sha256.json')))['0']
  got = sha256(args.checkpoint)
  assert got == want, f'checkpoint sha256 {got} is not the seed-0 synth file {want}'

  spec, sampler = build_sampler('mrt2_small', precision='fp32')
  load_reference_weights(sampler, spec, args.checkpoint, precision='fp32')
  l0 = sampler.layers[0]
  n, m = args.prefill_frames, args.frames
  offsets = (RESERVED + CODEBOOK * np.arange(12)).astype(np.int32)

  out, meta = {}, dict(
      upstream='magenta-rt 2.0.3 (magenta_rt.mlx), mlx[cpu] 0.32.4, fp32',
      model='mrt2_small', weights_seed=0, checkpoint_sha256=got,
      prefill_frames=n, frames=m, cases=[])
  for case in CASES:
    name = case['name']
    block, constants, _ = build_conditioning(
        spec, case['style'], case['notes'], 3, case['drums'], case['cfg'],
        case['temperature'], case['top_k'])
    gen_cond = np.array(block.values)[0, 0].astype(np.int32)
    pre = np.full(144, COND_OFFSET - 1, np.int32)
    k = case['keep_style']
    pre[:k] = np.array(case['style'][:k]) + COND_OFFSET
    pre[140] = COND_OFFSET + 0 if case['drums'] == 'off' else COND_OFFSET - 1
    pre[141:] = gen_cond[141:]  # the CFG tokens
    pre_block = sl.Sequence(mx.array(pre.reshape(1, 1, -1)), mx.array([[True]], dtype=mx.bool_))

    raw = codes(case['codes_seed'], n)
    ids = raw + offsets
    state = R.initial_state(sampler, spec, {}, case['seed'])
    st = state[0]

    def seed_prev(st, row):
      enc, prev_out, (rng, prev, temporal, step), countdown = st
      new = sl.Sequence.from_values(mx.array(row.reshape(1, 1, 12)).astype(prev.values.dtype))
      return (enc, prev_out, (rng, new, temporal, step), countdown)

    for s in range(n - 1):
      st = seed_prev(st, ids[s])
      _, st = l0.step(pre_block, st, forced_tokens=mx.array(ids[s].reshape(1, 1, 12)),
                      constants=constants, training=False)
      mx.eval(*mrt_export._flatten_state(st)[0])
    st = seed_prev(st, ids[n - 1])

    hooks = R.Hooks(sampler, None)
    hooks.install()
    try:
      lm, _, _, _ = R.run_lm(sampler, spec, block, constants, [st] + list(state[1:]), m, hooks,
                             print)
    finally:
      hooks.uninstall()
    tokens = lm['tokens'].astype(np.int32).reshape(m, 12)
    logits = np.stack(
        [lm['logits'][:, q, RESERVED + CODEBOOK * q: RESERVED + CODEBOOK * (q + 1)]
         for q in range(12)], 1)
    gumbel = np.stack(
        [lm['gumbel'][:, q, RESERVED + CODEBOOK * q: RESERVED + CODEBOOK * (q + 1)]
         for q in range(12)], 1)
    margin = np.zeros((m, 12), np.float32)
    for f in range(m):
      for q in range(12):
        margin[f, q], w = decision_margin(logits[f, q], gumbel[f, q], case['temperature'],
                                          case['top_k'])
        assert RESERVED + CODEBOOK * q + w == tokens[f, q], (name, f, q)
    out.update({
        f'{name}_prefill_codes': raw,
        f'{name}_prefill_cond': pre,
        f'{name}_cond': gen_cond,
        f'{name}_tokens': tokens,
        f'{name}_margin': margin,
        f'{name}_rng_key': lm['rng_key'].reshape(m, 12, 2).astype(np.uint32),
        f'{name}_temporal_out0': lm['temporal_out'].reshape(m, -1)[0].astype(np.float32),
        f'{name}_logits0': logits[0].astype(np.float32),
    })
    c = {k: v for k, v in case.items()}
    c['min_margin'] = float(margin.min())
    meta['cases'].append(c)
    print(f'{name}: tokens {tokens[0].tolist()} ... min margin {margin.min():.3e}', flush=True)
  np.savez_compressed(args.out, **out)
  with open(os.path.splitext(args.out)[0] + '.json', 'w') as f:
    json.dump(meta, f, indent=1)
    f.write('\n')


if __name__ == '__main__':
  main()
