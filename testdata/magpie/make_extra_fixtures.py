#!/usr/bin/env python3
"""Slims extra Magpie oracle recordings (other weights seeds, speakers, texts, sampler seeds)
into `testdata/magpie/extra/*.npz`, which `crates/rill-cli/tests/tts_extra.rs` checks
`rill speak --random-weights W --dump` against.

The recordings are made with the upstream NeMo 3.0.0 oracle (`oracle/magpie/` of the shared
oracle; its README sets up the venv), e.g.:

  python make_checkpoint.py --seed 3
  python record.py --scenario cached --ckpt out/magpie_seed3.nemo --text "…" \\
      --speaker 2 --sampling-seed 5 --max-frames 40 --out magpie_w3_spk2_s5.npz

then `python3 make_extra_fixtures.py WEIGHTS_SEED RECORDING.npz …` (one weights seed per call;
needs numpy). Each output keeps float32 (integers int32), every step of the per-step arrays
except the logits (a subset, `<key>_steps`), and `info_json` (UTF-8 bytes: text, weights seed,
speaker, sampler seed, scenario, inference parameters, source sha256).
"""
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
WHOLE = ('text_tokens', 'text_encoder_out', 'dec_hidden', 'lt_codes', 'argmax_codes',
         'attended_timestep', 'predicted_codes', 'codec_latents', 'audio')
SUBSET = ('lt_logits', 'final_logits_raw')


def slim(weights_seed: int, src: Path):
  z = np.load(src)
  meta = json.loads(str(z['meta_json']))
  steps = z['dec_hidden'].shape[0]
  keep = sorted({0, 1, 2, 3, steps // 2, steps - 2, steps - 1} & set(range(steps)))
  out = {}
  for key in WHOLE:
    if key not in z.files:  # attended_timestep exists only with the attention prior
      continue
    a = z[key]
    out[key] = a.astype(np.float32) if a.dtype.kind == 'f' else a.astype(np.int32)
  for key in SUBSET:
    out[key] = z[key][keep].astype(np.float32)
    out[f'{key}_steps'] = np.asarray(keep, np.int32)
  info = dict(source=src.name, source_sha256=hashlib.sha256(src.read_bytes()).hexdigest(),
              weights_seed=weights_seed, text=meta['text'], speaker=meta['speaker'],
              sampling_seed=meta['sampling_seed'], scenario=meta['scenario'],
              use_cfg=meta['use_cfg'], inference_parameters=meta['inference_parameters'],
              decoder_steps=meta['decoder_steps'])
  out['info_json'] = np.frombuffer(json.dumps(info).encode(), np.uint8)
  dst = HERE / 'extra' / src.name
  dst.parent.mkdir(exist_ok=True)
  np.savez_compressed(dst, **out)
  print(f'extra/{dst.name}: {dst.stat().st_size / 1e6:.2f} MB, {steps} steps, '
        f'{out["predicted_codes"].shape[1]} frames ({info["source_sha256"][:16]}…)')


if __name__ == '__main__':
  if len(sys.argv) < 3:
    sys.exit(__doc__)
  for p in sys.argv[2:]:
    slim(int(sys.argv[1]), Path(p))
