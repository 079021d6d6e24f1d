#!/usr/bin/env python
"""SpectroStream encoder fixture: upstream's unmodified MLX encoder on random weights.

  make_encoder_fixture.py --oracle ORACLE_DIR --codec-manifest manifest_mrt2_small.json \
      --work SCRATCH --out-dir testdata/mrt2/encoder [--seed 0] [--codec-seed 0]

ORACLE_DIR holds the oracle's portable_init.py and synth_checkpoint.py (shared/oracle).
Steps:
 1. manifest_spectrostream_encoder.json: every `params/encoder/...` tensor of upstream's
    encoder.safetensors (name, shape, mean, std as exact f64 bits), kernels
    std = gain / sqrt(kt*kf*cin) (gains below keep activations O(1)), biases std 0.02.
 2. SCRATCH/ckpt/encoder.safetensors: portable init (fnv1a64 + splitmix64, weights seed
    --seed), canonical bytes as synth_checkpoint.py / `rill_checkpoint::synth` write them;
    SCRATCH/ckpt/codec.safetensors: the `params/soundstream/...` tensors of mrt2_small's
    manifest (weights seed --codec-seed; the RVQ codebook the encoder quantises with).
 3. Upstream's SpectroStream (stft_spectrostream_40ms_generic_48khz_stereo_config,
    rvq_truncation_level=12) loaded with upstream's `load_spectrostream_weights`, which
    reads encoder.safetensors beside the checkpoint.
 4. Two deterministic stereo signals (seeded noise + tones, f32, 48 kHz): `long` (3 s,
    a multiple of 1920 samples like upstream's 28 s trace) and `odd` (24100 samples: odd
    STFT frame counts reach the strided convs' right padding). For each: the STFT front
    end (`ss.stft.layer`), the encoder's 256-d frames (`ss.encoder.layer`), the 64-level
    greedy RVQ codes (`ss.quantizer.embeddings_to_codes_layer`, encoded_truncation_level
    None = 64), checked equal to `ss.waveform_to_codes_layer.layer` (the function
    upstream exports as spectrostream_encoder.mlxfn); per-level greedy margins in f64
    (second-best minus best squared distance of the f64 residual given upstream's
    earlier codes). The same function exported with `mx.export_function` and
    re-imported is run too and its disagreements are reported in encoder.json
    (EXPORT_NOTE: on mlx 0.32.4 CPU it does not reproduce the layer path).
Writes OUT_DIR/encoder.npz (np.savez_compressed) and OUT_DIR/encoder.json.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import sys
import time

import numpy as np

SR = 48000
# Kernel gains per conv kind: chosen (by the activation report in encoder.json) so that
# the activations stay O(1) through the residual stack and the 256-d frames have an rms
# comparable to the RVQ codebook's (std 0.5 per dim).
EXPORT_NOTE = (
    'mx.export_function on mlx 0.32.4 (CPU) serialises a non-contiguous constant (the loader '
    'stores each conv kernel as a transposed view, np.transpose(kernel, (3, 0, 1, 2))) as its raw '
    'buffer, so the re-imported encoder computes with scrambled kernels: every frame differs at '
    'level 0 with large margins (exported_fn_* fields). A contiguous copy of the same kernel '
    'exports correctly. The recorded codes are the layer path (waveform_to_codes_layer.layer).')
GAINS = {'base': 1.0, '3x3': 1.0, 'down': 1.0, 'shortcut': 0.7, 'out': 1.0}
BIAS_STD = 0.02


def encoder_tensors():
  """(name, shape, kind) of every encoder tensor, in upstream's JAX param layout."""
  p = 'params/encoder/'
  out = []

  def conv(path, shape, kind):
    out.append((p + path + '/conv/kernel', list(shape), kind))
    out.append((p + path + '/conv/bias', [shape[3]], 'bias'))

  conv('base_conv_first', (7, 7, 2, 32), 'base')
  blocks = [('encoder_0', 32, 64, (3, 4)), ('encoder_1', 64, 64, (3, 4)),
            ('encoder_2', 64, 128, (3, 6)), ('encoder_3', 128, 128, (3, 4)),
            ('encoder_4', 128, 128, (3, 4)), ('encoder_5', 128, 256, (4, 4)),
            ('encoder_6', 512, 256, (4, 3)), ('bottleneck', 256, 256, (3, 3))]
  for name, ci, co, (kt, kf) in blocks:
    conv(f'{name}/conv2d_3x3', (3, 3, ci, ci), '3x3')
    conv(f'{name}/conv2d_{kt}x{kf}_a', (kt, kf, ci, co), 'down')
    if ci != co:
      conv(f'{name}/shortcut_layer/conv1x1', (1, 1, ci, co), 'shortcut')
  conv('output_convs/conv1x1_last', (1, 1, 1280, 256), 'out')
  conv('output_convs/shortcut_layer/conv1x1_b1', (1, 1, 1280, 1280), 'out')
  conv('output_convs/shortcut_layer/conv1x1_b2', (1, 1, 1280, 256), 'out')
  return sorted(out)


def make_manifest(pi):
  tensors = []
  for name, shape, kind in encoder_tensors():
    if kind == 'bias':
      std, fan_in, gain = BIAS_STD, None, None
    else:
      fan_in = float(shape[0] * shape[1] * shape[2])
      gain = GAINS[kind]
      std = gain / np.sqrt(fan_in)
    std = float(std)
    tensors.append(dict(name=name, shape=shape, dtype='float32', mean=0.0, std=std,
                        mean_f64_bits=pi.f64_hex(0.0), std_f64_bits=pi.f64_hex(std),
                        init='bias' if kind == 'bias' else 'kernel', fan_in=fan_in, gain=gain))
  n = sum(int(np.prod(t['shape'])) for t in tensors)
  return dict(
      format='portable-init manifest (see shared/oracle/PORTABLE.md)',
      model='spectrostream_encoder', recipe='portable_init v1', dtype='float32',
      layout='JAX (params/encoder/..., conv kernels [kt, kf, cin, cout])',
      num_tensors=len(tensors), num_params=n,
      rules=dict(kernel='uniform, mean 0, std = gain / sqrt(kt*kf*cin)', bias=f'std {BIAS_STD}',
                 gains=GAINS),
      notes='Random weights for upstream SpectroStream encoder.safetensors; the RVQ codebook '
            'comes from manifest_mrt2_small.json (params/soundstream/quantizer/embedding).',
      tensors=tensors)


def write_synth(pi, sc, manifest, seed, path):
  """synth_checkpoint.py's canonical file (same bytes as rill_checkpoint::synth)."""
  tensors, js, nbytes = sc.build_header(manifest, seed)
  fh = hashlib.sha256()
  with open(path, 'wb') as f:
    head = len(js).to_bytes(8, 'little') + js
    f.write(head)
    fh.update(head)
    for t in tensors:
      mean, std = pi.f64_from_hex(t['mean_f64_bits']), pi.f64_from_hex(t['std_f64_bits'])
      for c in pi.iter_tensor_chunks(seed, t['name'], t['shape'], mean, std):
        b = c.astype('<f4').tobytes()
        f.write(b)
        fh.update(b)
  return fh.hexdigest()


def signal(n, seed):
  """Seeded stereo test signal: noise + tones + a chirp, f32 [n, 2]."""
  rng = np.random.default_rng(seed)
  t = np.arange(n, dtype=np.float64) / SR
  noise = rng.standard_normal((n, 2))
  left = 0.05 * noise[:, 0] + 0.3 * np.sin(2 * np.pi * 440.0 * t) + 0.15 * np.sin(2 * np.pi * 3217.0 * t + 0.3)
  chirp = np.sin(2 * np.pi * (200.0 * t + 1500.0 * t * t))
  right = 0.08 * noise[:, 1] + 0.2 * np.sin(2 * np.pi * 277.0 * t + 1.0) + 0.2 * chirp
  env = 0.6 + 0.4 * np.sin(2 * np.pi * 1.7 * t)
  return np.stack([left * env, right], 1).astype(np.float32)


def margins_f64(frames, codes, codebook):
  """Per-level greedy margins (second-best − best squared distance, f64) given `codes`,
  and whether `codes` is the f64 argmin."""
  t, levels = codes.shape
  cb = codebook.astype(np.float64)
  res = frames.astype(np.float64).copy()
  margin = np.zeros((t, levels), np.float64)
  is_argmin = np.zeros((t, levels), bool)
  for k in range(levels):
    d = ((res[:, None, :] - cb[k][None]) ** 2).sum(-1)
    srt = np.sort(d, 1)
    margin[:, k] = srt[:, 1] - srt[:, 0]
    is_argmin[:, k] = d.argmin(1) == codes[:, k]
    res -= cb[k][codes[:, k]]
  return margin, is_argmin


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument('--oracle', required=True, help='directory of portable_init.py, synth_checkpoint.py')
  ap.add_argument('--codec-manifest', required=True, help='testdata/mrt2/manifest_mrt2_small.json')
  ap.add_argument('--work', required=True, help='scratch directory (checkpoints; never committed)')
  ap.add_argument('--out-dir', required=True, help='testdata/mrt2/encoder')
  ap.add_argument('--seed', type=int, default=0, help='encoder weights seed')
  ap.add_argument('--codec-seed', type=int, default=0, help='codebook (mrt2_small) weights seed')
  ap.add_argument('--signal-seed', type=int, default=11)
  ap.add_argument('--debug-out', default=None, help='also save every intermediate here')
  args = ap.parse_args()
  sys.path.insert(0, os.path.abspath(args.oracle))
  import portable_init as pi  # noqa: E402
  import synth_checkpoint as sc  # noqa: E402
  import magenta_rt  # noqa: F401,E402  (vendored sequence_layers import hook)
  import mlx.core as mx  # noqa: E402
  import sequence_layers.mlx as sl  # noqa: E402
  from magenta_rt.mlx import spectrostream  # noqa: E402
  from magenta_rt.mlx.spectrostream.load_weights import load_spectrostream_weights  # noqa: E402

  t0 = time.time()
  os.makedirs(args.out_dir, exist_ok=True)
  ck = os.path.join(args.work, 'ckpt')
  os.makedirs(ck, exist_ok=True)
  man = make_manifest(pi)
  with open(os.path.join(args.out_dir, 'manifest_spectrostream_encoder.json'), 'w') as f:
    json.dump(man, f, indent=1)
  enc_sha = write_synth(pi, sc, man, args.seed, os.path.join(ck, 'encoder.safetensors'))
  codec_man = pi.load_manifest(args.codec_manifest)
  codec_man = dict(codec_man, tensors=[t for t in codec_man['tensors']
                                       if t['name'].startswith('params/soundstream/')])
  codec_path = os.path.join(ck, 'codec.safetensors')
  write_synth(pi, sc, codec_man, args.codec_seed, codec_path)
  print(f'checkpoints written in {time.time() - t0:.1f}s; encoder sha256 {enc_sha}')

  cfg = spectrostream.stft_spectrostream_40ms_generic_48khz_stereo_config(
      rvq_truncation_level=12, use_unique_codes=False)
  ss = spectrostream.SpectroStream(cfg)
  log = io.StringIO()
  with contextlib.redirect_stdout(log):
    n_loaded = load_spectrostream_weights(ss, codec_path)
  assert 'NOT updated' not in log.getvalue() and 'Encoder weights not found' not in log.getvalue(), log.getvalue()
  # Round trip: upstream's loader put the file's kernel (JAX [kt,kf,ci,co]) into MLX [co,kt,kf,ci].
  base = ss.encoder.layers[0].child.layers[0].layers[0].inner
  want = pi.tensor_values(args.seed, 'params/encoder/base_conv_first/conv/kernel', (7, 7, 2, 32),
                          0.0, man['tensors'][[t['name'] for t in man['tensors']].index(
                              'params/encoder/base_conv_first/conv/kernel')]['std'])
  assert np.array_equal(np.array(base.kernel), want.transpose(3, 0, 1, 2))
  codebook = np.array(ss.quantizer.embedding)
  print(f'loaded {n_loaded:,} params')

  def run(x):
    seq = sl.Sequence(mx.array(x[None]), mx.ones((1, x.shape[0]), dtype=mx.bool_))
    stft = ss.stft.layer(seq)
    enc = ss.encoder.layer(stft)
    codes = ss.quantizer.embeddings_to_codes_layer.layer(enc)
    full = ss.waveform_to_codes_layer.layer(seq)
    mx.eval(stft.values, enc.values, enc.mask, codes.values, full.values)
    assert bool(np.array(enc.mask).all())
    c = np.array(codes.values)[0].astype(np.int32)
    assert np.array_equal(c, np.array(full.values)[0]), 'waveform_to_codes_layer differs'
    # The exported function (what the C++ engine runs, traced here at this length).
    fn_path = os.path.join(args.work, f'enc_{x.shape[0]}.mlxfn')

    def spectrostream_encode(w):
      s = sl.Sequence(w, mx.ones((1, w.shape[1]), dtype=mx.bool_))
      return ss.waveform_to_codes_layer.layer(s).values
    mx.export_function(fn_path, spectrostream_encode, mx.array(x[None]))
    exported = np.array(mx.import_function(fn_path)(mx.array(x[None]))[0])[0].astype(np.int32)
    return np.array(stft.values)[0], np.array(enc.values)[0], c, exported

  def stats(x):
    return dict(rms=float(np.sqrt(np.mean(np.square(x, dtype=np.float64)))),
                max_abs=float(np.abs(x).max()))

  out, info = {}, dict(signals={})
  for tag, n in (('long', 3 * SR), ('odd', 24100)):
    x = signal(n, args.signal_seed + (tag == 'odd'))
    t1 = time.time()
    stft, frames, codes, exported = run(x)
    dt = time.time() - t1
    # The exported-and-reimported function may round differently (compiled graph):
    # where it picks another code, the row's first disagreement and its f64 margin.
    diff = exported != codes
    first = [int(np.argmax(r)) if r.any() else -1 for r in diff]
    margin, is_argmin = margins_f64(frames, codes, codebook)
    out[f'{tag}_waveform'] = x
    if tag == 'long':
      out[f'{tag}_stft'] = stft.astype(np.float32)
    out[f'{tag}_frames'] = frames.astype(np.float32)
    out[f'{tag}_codes'] = codes
    out[f'{tag}_margin'] = margin
    # RVQ residual rms after each level (codebook quality for these frames).
    res = frames.astype(np.float64).copy()
    res_rms = []
    for k in range(codes.shape[1]):
      res -= codebook[k][codes[:, k]]
      res_rms.append(float(np.sqrt((res ** 2).mean())))
    info['signals'][tag] = dict(
        samples=n, stft_frames=int(stft.shape[0]), frames=int(frames.shape[0]),
        levels=int(codes.shape[1]), seconds_upstream=dt, stft=stats(stft), frames_stats=stats(frames),
        min_margin=float(margin.min()), margins_below_1e_5=int((margin < 1e-5).sum()),
        codes_are_f64_argmin=bool(is_argmin.all()),
        exported_fn_rows_differing=int(diff.any(1).sum()),
        exported_fn_first_diff=[(t, l, float(margin[t, l])) for t, l in enumerate(first) if l >= 0], f64_argmin_disagreements=int((~is_argmin).sum()),
        residual_rms_after_level=res_rms[:12] + [res_rms[-1]])
    print(tag, json.dumps(info['signals'][tag]))

  if args.debug_out:
    dbg = {}
    x = out['long_waveform']
    seq = sl.Sequence(mx.array(x[None]), mx.ones((1, x.shape[0]), dtype=mx.bool_))
    h = ss.stft.layer(seq)
    pc = ss.encoder.layers[0]
    g0 = sl.Sequence(h.values[..., :2], h.mask)
    for i, layer in enumerate(pc.child.layers):
      g0 = layer.layer(g0)
      mx.eval(g0.values)
      dbg[f'g0_{i}'] = np.array(g0.values)[0]
    for i, layer in enumerate(ss.encoder.layers):
      h = layer.layer(h)
      mx.eval(h.values)
      dbg[f'top_{i}'] = np.array(h.values)[0]
    np.savez(args.debug_out, **dbg)
    info['activations'] = {k: stats(v) for k, v in dbg.items()}
    print(json.dumps(info['activations'], indent=0))

  np.savez_compressed(os.path.join(args.out_dir, 'encoder.npz'), **out)
  import mlx
  info.update(
      upstream='magenta-rt==2.0.3 (magenta_rt.mlx.spectrostream), mlx ' + mlx.core.__version__,
      config='stft_spectrostream_40ms_generic_48khz_stereo_config(rvq_truncation_level=12, use_unique_codes=False)',
      encoder_weights_seed=args.seed, codec_weights_seed=args.codec_seed,
      codebook_tensor='params/soundstream/quantizer/embedding (manifest_mrt2_small.json)',
      signal_seed=args.signal_seed, encoder_safetensors_sha256=enc_sha, export_note=EXPORT_NOTE,
      encoder_params=man['num_params'], loaded_params=n_loaded,
      arrays={k: dict(shape=list(v.shape), dtype=str(v.dtype)) for k, v in out.items()})
  with open(os.path.join(args.out_dir, 'encoder.json'), 'w') as f:
    json.dump(info, f, indent=1)
  print(f'done in {time.time() - t0:.0f}s; npz {os.path.getsize(os.path.join(args.out_dir, "encoder.npz")) / 1e6:.2f} MB')


if __name__ == '__main__':
  main()
