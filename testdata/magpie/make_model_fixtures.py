#!/usr/bin/env python3
"""Slims the Magpie TTS oracle recordings into the fixtures `crates/rill-magpie` tests read.

Source: the upstream NeMo 3.0.0 oracle (`oracle/magpie/recordings/` of the shared oracle, see its
README): `magpie_{cached,plain,eos,layers,noprior_uncached}.npz`, text "Hello world, I read the rill docs.", speaker 0,
weights seed 0, sampler seed 0. The sha256 of every source file is stored in each output
(`source_sha256`) and checked here. Outputs keep float32 (integers as int32) and only the arrays
the tests gate; per-step arrays may keep a subset of steps (`<key>_steps` says which).

  python3 make_model_fixtures.py ORACLE_RECORDINGS_DIR [ORACLE_RESULTS_DIR]

Also writes `model_manifest.json` (name, shape, dtype, init rule, sha256 of every state-dict entry
for seed 0) from `results/manifest_magpie.json`, and `torch_rng.json` (MT19937 / exponential /
multinomial vectors) by running the oracle's numpy `torch_rng_ref.py` next to the recordings.
"""
import hashlib
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent



# scenario -> {key: steps kept (None = the whole array)}
PLAN = {
    'cached': {
        'text_tokens': None, 'enc_layer0_out': None, 'text_encoder_out': None,
        'dec_out_step0': None, 'dec_input_last': None, 'dec_layer0_last': None, 'dec_hidden': None,
        'xattn_probs_last': None, 'align_scores': None, 'attended_timestep': None,
        'attn_prior_in': None, 'attn_prior_next': None, 'lt_logits': None,
        'final_logits_raw': [0, 1, 31], 'lt_in_proj': [0, 1], 'lt_codes': None,
        'argmax_codes': None, 'mn_rows': None, 'mn_result': None,
    },
    'plain': {
        'text_tokens': None, 'dec_out_step0': None, 'dec_hidden': None,
        'lt_logits': [0, 1, 2, 3, 31], 'final_logits_raw': [0], 'lt_codes': None,
        'argmax_codes': None,
    },
    'eos': {
        'text_tokens': None, 'dec_hidden': None, 'lt_logits': [12, 13], 'lt_codes': None,
        'argmax_codes': None, 'predicted_codes': None, 'eos_frame_index': None,
    },
    # NeMo's uncached do_tts (full recompute every step) with the prior off: what the
    # host-owned cached step must equal (spec T1: with the prior off they agree).
    'noprior_uncached': {
        'text_tokens': None, 'dec_hidden': None, 'lt_logits': [0, 8, 16, 31],
        'final_logits_raw': [0, 31], 'lt_codes': None, 'argmax_codes': None,
    },
    'layers': {
        'text_tokens': None, 'dec_hidden': None, 'xattn_probs_last': None,
        'attended_timestep': None, 'attn_prior_next': None, 'lt_logits': [0, 8, 16, 31],
        'lt_codes': None, 'argmax_codes': None,
    },
}


def sha256(p):
  return hashlib.sha256(Path(p).read_bytes()).hexdigest()


def slim(rec_dir: Path, scenario: str):
  src = rec_dir / f'magpie_{scenario}.npz'
  z = np.load(src)
  meta = json.loads(str(z['meta_json']))
  out = {}
  for key, steps in PLAN[scenario].items():
    a = z[key]
    if steps is not None:
      a = a[steps]
      out[f'{key}_steps'] = np.asarray(steps, np.int32)
    if a.dtype.kind == 'f':
      a = a.astype(np.float32)
    elif a.dtype.kind in 'iub':
      a = a.astype(np.int32)
    out[key] = a
  if scenario == 'cached':
    # the exact exponential noise of the first sampling call (2 rows x 2024), for the RNG test
    out['mn_noise_first'] = z['mn_noise_first'][:2 * 2024].astype(np.float32)
  info = dict(source=src.name, source_sha256=sha256(src), scenario=meta['scenario'],
              use_cfg=meta['use_cfg'], speaker=meta['speaker'], sampling_seed=meta['sampling_seed'],
              inference_parameters=meta['inference_parameters'], decoder_steps=meta['decoder_steps'],
              weight_patch=meta.get('weight_patch'))
  out['info_json'] = np.frombuffer(json.dumps(info).encode(), np.uint8)  # UTF-8 bytes
  dst = HERE / f'model_{scenario}.npz'
  np.savez_compressed(dst, **out)
  print(f'{dst.name}: {dst.stat().st_size / 1e6:.2f} MB from {src.name} ({info["source_sha256"][:16]}…)')


def manifest(res_dir: Path):
  m = json.loads((res_dir / 'manifest_magpie.json').read_text())
  keep = ('name', 'shape', 'dtype', 'kind', 'mean_f64_bits', 'std_f64_bits', 'value', 'sha256')
  rows = [{k: t[k] for k in keep if k in t} for t in m['tensors']]
  out = dict(source='results/manifest_magpie.json',
             source_sha256=sha256(res_dir / 'manifest_magpie.json'),
             seed=m['seed'], num_params=m['num_params'],
             sha256_of='the tensor bytes as numpy holds them: float32 / int64 little-endian, row-major',
             tensors=rows)
  (HERE / 'model_manifest.json').write_text(json.dumps(out, indent=0) + '\n')
  print(f'model_manifest.json: {len(rows)} tensors')


def rng_vectors(rec_dir: Path):
  spec = importlib.util.spec_from_file_location('torch_rng_ref', rec_dir.parent / 'torch_rng_ref.py')
  ref = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(ref)
  cases = []
  for seed in (0, 1, 12345, 2**32 + 7):
    g = ref.MT19937(seed)
    u32 = g.next_u32_block(8)
    g = ref.MT19937(seed)
    u = g.uniform_f64(700)  # crosses a twist (624 words = 312 doubles)
    g = ref.MT19937(seed)
    q = g.exponential_f32(700)
    cases.append(dict(seed=seed, u32_first8=[int(x) for x in u32],
                      uniform_f64_bits=[f'{int(x):016x}' for x in u.view(np.uint64)[[0, 1, 2, 311, 312, 699]]],
                      uniform_idx=[0, 1, 2, 311, 312, 699],
                      exponential_f32_bits=[f'{int(x):08x}' for x in q.view(np.uint32)]))
  # one multinomial call: probabilities from a fixed softmax, noise from seed 5
  rs = np.random.RandomState(3)
  p = rs.standard_normal((2, 2024)).astype(np.float32)
  p = np.exp(p - p.max(-1, keepdims=True))
  p = (p / p.sum(-1, keepdims=True)).astype(np.float32)
  g = ref.MT19937(5)
  q = g.exponential_f32(2 * 2024).reshape(2, 2024)
  pick = np.argmax(p / q, -1)
  out = dict(source='torch_rng_ref.py (numpy MT19937 == torch CPU generator, per its --selftest)',
             source_sha256=sha256(rec_dir.parent / 'torch_rng_ref.py'), cases=cases,
             multinomial=dict(seed=5, probs_f32_bits=[f'{int(x):08x}' for x in p.view(np.uint32).ravel()],
                              rows=2, cols=2024, picks=[int(x) for x in pick]))
  (HERE / 'torch_rng.json').write_text(json.dumps(out) + '\n')
  print('torch_rng.json written')


def main():
  rec = Path(sys.argv[1])
  res = Path(sys.argv[2]) if len(sys.argv) > 2 else rec.parent / 'results'
  for s in PLAN:
    slim(rec, s)
  manifest(res)
  rng_vectors(rec)


if __name__ == '__main__':
  main()
