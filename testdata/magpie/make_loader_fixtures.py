#!/usr/bin/env python
"""Tiny Magpie-shaped checkpoints in the formats users have, written with the real tools.

  python make_loader_fixtures.py [--dict path/ipa_cmudict-0.7b_nv23.01.txt] [--heteronyms path/heteronyms-052722]

Needs torch (PyPI torch==2.12.0 was used), numpy, pyyaml and the PyPI `gguf` package (0.19.0).
Writes into loaders/ beside this script:

  tiny_magpie.nemo       an uncompressed tar like NeMo's save_to: ./<uuid>_ipa_cmudict-0.7b_nv23.01.txt
                         (a few lines of the real dictionary), ./<uuid>_heteronyms-052722,
                         ./model_config.yaml (NeMo-style, v2602-era legacy prior keys), ./model_weights.ckpt
                         (torch.save of an OrderedDict state dict, causal_mask buffers included; one
                         transposed view and eight views sharing one storage, as torch.save keeps them).
  tiny_magpie_bad.f16.gguf  the same with three faults (a missing tap, a contradicting metadata
                         value, an unsupported EOS method) that must all be reported at once.
  tiny_magpie_badmeta.f16.gguf  sound tensors with four metadata/config faults (reported together).
  tiny_magpie.f16.gguf   the same weights converted the way NeMo-Speech.cpp conversion/tts.py does
                         (causal masks skipped, conv FFN weights split per tap into `.k{j}` (out, in),
                         >=2-D non-bias floats f16, the rest f32, int64 -> int32, magpietts.* metadata
                         and magpietts.config_json).
  tiny_codec.nemo        a NanoCodec-shaped AudioCodecModel archive (64 base channels, the released
                         rates and kernels; weight norm as torch parametrizations; an encoder tensor and
                         a loss buffer that loaders must ignore).
  tiny_codec.f16.gguf    its decoder converted as NeMo-Speech.cpp conversion/codec.py does (weight norm
                         folded, short names, grouped transposed convs expanded to dense, alpha_inv,
                         the FSQ codebook, nano_codec.* metadata).
  torch_dtypes.ckpt      a bare torch.save of mixed dtypes (f16, bf16, f64, int32, int64, bool), a
                         nn.Parameter, a 0-dim tensor, a strided view and a storage offset.
  torch_module.ckpt      torch.save of a real nn.Module state_dict (its _metadata attribute, a weight-norm
                         parametrization, a 0-dim buffer).
  expected.json          for every file: each tensor the Rust loaders must produce, with shape and the
                         sha256 of its little-endian values after the documented widening (floats as
                         f32, integers as i64), plus the config and inference parameters to be read.

Dimensions: d_model 64 (one 64-wide head), 1 encoder layer (kernel 3), 1 decoder layer,
8 codebooks of 4 codes + 8 specials, local transformer 32 wide, 2 speakers x 3 context frames.
"""
from __future__ import annotations

import argparse
import collections
import hashlib
import io
import json
import tarfile
from pathlib import Path

import gguf
import numpy as np
import torch
import yaml

HERE = Path(__file__).resolve().parent
OUT = HERE / 'loaders'

D, TEXT, ENC_POS, FFN, ENC_K = 64, 12, 16, 128, 3
DEC_POS, XATTN = 32, 16
BOOKS, VOCAB = 8, 12
LT, LT_FFN, LT_POS = 32, 64, 10
SPEAKERS, CTX = 2, 3
SPEAKER_NAMES = ['John', 'Sofia', 'Aria', 'Jason', 'Leo']  # conversion/tts.py writes these names as-is
WORDS = ('HELLO', 'WORLD', 'READ', 'LIVE')
DICT_NAME = 'ipa_cmudict-0.7b_nv23.01.txt'
HET_NAME = 'heteronyms-052722'


def state_dict(rng):
  sd = collections.OrderedDict()

  def f(name, *shape):
    sd[name] = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))

  def mask(name, n):
    sd[name] = torch.tril(torch.ones(n, n)).view(1, 1, n, n)

  # One transformer layer's self-attention and feed-forward blocks (width d, `pos`
  # positions, a kernel-k feed-forward of width ffn), in NeMo's key order.
  def self_attention(p, d, pos):
    f(p + 'norm_self.weight', d)
    f(p + 'self_attention.qkv_net.weight', 3 * d, d)
    f(p + 'self_attention.o_net.weight', d, d)
    mask(p + 'self_attention.causal_mask', pos)

  def pos_ff(p, d, ffn, k):
    f(p + 'norm_pos_ff.weight', d)
    f(p + 'pos_ff.proj.conv.weight', ffn, d, k)
    f(p + 'pos_ff.o_net.conv.weight', d, ffn, k)

  f('text_embedding.weight', TEXT, D)
  f('encoder.position_embeddings.weight', ENC_POS, D)
  self_attention('encoder.layers.0.', D, ENC_POS)
  pos_ff('encoder.layers.0.', D, FFN, ENC_K)
  f('encoder.norm_out.weight', D)
  f('decoder.position_embeddings.weight', DEC_POS, D)
  p = 'decoder.layers.0.'
  self_attention(p, D, DEC_POS)
  f(p + 'norm_xattn_query.weight', D)
  f(p + 'cross_attention.q_net.weight', XATTN, D)
  f(p + 'cross_attention.kv_net.weight', 2 * XATTN, D)
  f(p + 'cross_attention.o_net.weight', D, XATTN)
  f(p + 'norm_xattn_memory.weight', D)
  pos_ff(p, D, FFN, 1)
  f('decoder.norm_out.weight', D)
  # A transposed (non-contiguous) view: torch.save keeps the storage and the strides.
  sd['final_proj.weight'] = torch.from_numpy(
    rng.standard_normal((D, BOOKS * VOCAB)).astype(np.float32)).t()
  f('final_proj.bias', BOOKS * VOCAB)
  # Views of one storage, all but the first at a storage offset.
  shared = torch.from_numpy(rng.standard_normal((BOOKS * VOCAB, D)).astype(np.float32))
  for c in range(BOOKS):
    sd[f'audio_embeddings.{c}.weight'] = shared[c * VOCAB:(c + 1) * VOCAB]
  f('local_transformer_in_projection.weight', LT, D)
  f('local_transformer_in_projection.bias', LT)
  f('local_transformer.position_embeddings.weight', LT_POS, LT)
  self_attention('local_transformer.layers.0.', LT, LT_POS)
  pos_ff('local_transformer.layers.0.', LT, LT_FFN, 1)
  for c in range(BOOKS):
    f(f'local_transformer_out_projections.{c}.weight', VOCAB, LT)
    f(f'local_transformer_out_projections.{c}.bias', VOCAB)
  f('baked_context_embedding.weight', SPEAKERS, CTX * D)
  sd['_baked_embedding_T'] = torch.tensor(CTX, dtype=torch.int64)
  sd['_baked_embedding_D'] = torch.tensor(D, dtype=torch.int64)
  sd['baked_context_embedding_len'] = torch.tensor([CTX, CTX], dtype=torch.int64)
  # Module.state_dict() carries this attribute; torch.save pickles it through BUILD.
  sd._metadata = collections.OrderedDict([('', {'version': 1}), ('encoder', {'version': 1})])
  return sd


def model_config(dict_member, het_member):
  tr = dict(d_model=D, d_ffn=FFN, sa_n_heads=1, p_dropout=0.1, p_dropout_out=0.0,
            use_learnable_pos_emb=True, apply_norm_out=True, n_layers=1, is_causal=True)
  return {
    'target': 'nemo.collections.tts.models.magpietts.MagpieTTSModel',
    'nemo_version': '3.0.0',
    'model_type': 'decoder_ce',
    'embedding_dim': D,
    'codecmodel_path': 'nvidia/nemo-nano-codec-22khz-1.89kbps-21.5fps',
    'frame_stacking_factor': 1,
    'local_transformer_type': 'autoregressive',
    'local_transformer_n_layers': 1,
    'local_transformer_n_heads': 1,
    'local_transformer_hidden_dim': LT,
    'has_baked_context_embedding': True,
    'text_tokenizers': {'english_phoneme': {
      '_target_': 'nemo.collections.common.tokenizers.text_to_speech.tts_tokenizers.IPATokenizer',
      'punct': True, 'apostrophe': True, 'pad_with_space': False,
      'g2p': {'_target_': 'nemo.collections.tts.g2p.models.i18n_ipa.IpaG2p',
              'phoneme_dict': 'nemo:' + dict_member, 'heteronyms': 'nemo:' + het_member,
              'phoneme_probability': 0.8, 'ignore_ambiguous_words': False,
              'use_chars': True, 'use_stresses': True}}},
    'encoder': dict(tr, max_length_causal_mask=ENC_POS, kernel_size=ENC_K, has_xattn=False),
    'decoder': dict(tr, max_length_causal_mask=DEC_POS, kernel_size=1, has_xattn=True,
                    xa_d_head=XATTN, xa_d_memory=D, xa_n_heads=1, apply_norm_to_cond=True,
                    make_prior_window_strict=True),
    # v2602-era: the legacy prior keys (magpietts.py:301-313), non-default values everywhere.
    'inference_parameters': {
      'max_decoder_steps': 20, 'temperature': 0.55, 'topk': 7, 'cfg_scale': 2.25,
      'apply_attention_prior': True, 'prior_epsilon': 0.2, 'lookahead_window_size': 3,
      'estimate_alignment_from_layers': [0], 'apply_prior_to_layers': [0],
      'start_prior_after_n_audio_steps': 1, 'use_LT_kv_cache': True,
      'ignore_finished_sentence_tracking': True, 'eos_detection_method': 'argmax_or_multinomial_any',
      'min_generated_frames': 2},
  }


EXPECTED_PARAMS = dict(max_decoder_steps=20, temperature=0.55, topk=7, use_cfg=True, cfg_scale=2.25,
                       apply_attention_prior=True, attention_prior_epsilon=0.2,
                       attention_prior_lookahead_window=3, estimate_alignment_from_layers=[0],
                       apply_prior_to_layers=[0], start_prior_after_n_audio_steps=1,
                       min_generated_frames=2)


def digest(a: np.ndarray) -> dict:
  """Shape and sha256 of the values as the Rust loaders widen them (f32 / i64, little-endian)."""
  shape = list(a.shape)  # before ascontiguousarray, which makes 0-d arrays 1-d
  a = np.ascontiguousarray(a)
  wide = a.astype('<f4') if a.dtype.kind == 'f' else a.astype('<i8')
  return dict(shape=shape, sha256=hashlib.sha256(wide.tobytes()).hexdigest())


def torch_digest(t: torch.Tensor) -> dict:
  t = t.detach()
  if t.dtype == torch.bfloat16:
    return digest(t.float().numpy())
  return digest(t.numpy())


def write_nemo(path, sd, cfg, members):
  buf = io.BytesIO()
  torch.save(sd, buf)
  files = list(members) + [('model_config.yaml', yaml.safe_dump(cfg, sort_keys=False).encode()),
                           ('model_weights.ckpt', buf.getvalue())]
  with tarfile.open(path, 'w:') as tar:  # uncompressed, members './name' as NeMo writes them
    for name, data in files:
      info = tarfile.TarInfo('./' + name)
      info.size = len(data)
      info.mtime = 0
      tar.addfile(info, io.BytesIO(data))


def should_store_f32(name, t):
  return t.ndim <= 1 or name.endswith('.bias')


def gguf_array(name, t):
  """conversion/tts.py tensor_to_numpy with outtype f16."""
  t = t.detach().contiguous()
  if t.is_floating_point():
    t = t.to(torch.float32 if should_store_f32(name, t) else torch.float16)
  elif t.dtype == torch.int64:
    t = t.to(torch.int32)
  return t.numpy()


def write_gguf(path, sd, cfg, drop=(), override=None, lens=None):
  """The conventions of NeMo-Speech.cpp conversion/tts.py (add_metadata, add_tensors).

  `drop` (tensor names) and `override` (typed key -> value) make the broken variant."""
  override = override or {}
  w = gguf.GGUFWriter(str(path), 'magpietts')
  inf = cfg.get('inference_parameters', {})
  enc, dec = cfg['encoder'], cfg['decoder']
  codebook = VOCAB - 8
  w.add_name('tiny MagpieTTS-shaped test model')
  w.add_description('rill loader fixture (random weights)')
  w.add_string('magpietts.nemo_target', cfg['target'])
  w.add_string('magpietts.nemo_version', cfg['nemo_version'])
  w.add_string('magpietts.model_type', cfg['model_type'])
  w.add_string('magpietts.codec_model', cfg['codecmodel_path'])
  w.add_string('magpietts.config_json', json.dumps(cfg, ensure_ascii=False, sort_keys=True))
  w.add_array('magpietts.speaker_names', SPEAKER_NAMES)
  w.add_array('magpietts.baked_context_lens', lens or [int(x) for x in sd['baked_context_embedding_len']])
  for key, value in [
      ('text_vocab_size', TEXT), ('audio_codebooks', BOOKS), ('audio_codebook_size', codebook),
      ('audio_vocab_size', VOCAB), ('audio_bos_id', codebook), ('audio_eos_id', codebook + 1),
      ('context_audio_bos_id', codebook + 2), ('context_audio_eos_id', codebook + 3),
      ('mask_token_id', codebook + 4), ('frame_stacking_factor', 1), ('embedding_dim', D),
      ('ffn_dim', dec['d_ffn']), ('context_length', dec['max_length_causal_mask']),
      ('encoder.layers', enc['n_layers']), ('encoder.heads', enc['sa_n_heads']),
      ('encoder.kernel_size', enc['kernel_size']), ('decoder.layers', dec['n_layers']),
      ('decoder.heads', dec['sa_n_heads']), ('decoder.cross_heads', dec['xa_n_heads']),
      ('decoder.cross_head_dim', dec['xa_d_head']), ('decoder.kernel_size', dec['kernel_size']),
      ('local_transformer.layers', 1), ('local_transformer.heads', 1),
      ('local_transformer.hidden_dim', LT), ('local_transformer.context_length', LT_POS),
      ('baked_context_length', CTX), ('baked_context_dim', D), ('baked_speakers', SPEAKERS),
      ('inference.max_decoder_steps', inf.get('max_decoder_steps', 500)),
      ('inference.topk', inf.get('topk', 80)),
      ('inference.min_generated_frames', inf.get('min_generated_frames', 4))]:
    w.add_int32('magpietts.' + key, int(override.get(key, value)))
  w.add_float32('magpietts.inference.temperature', float(inf.get('temperature', 0.6)))
  w.add_float32('magpietts.inference.cfg_scale', float(inf.get('cfg_scale', 2.5)))
  w.add_bool('magpietts.inference.apply_attention_prior', bool(inf.get('apply_attention_prior', False)))
  # As upstream: the typed keys read only the new names, so a legacy config gets the defaults here
  # (0.1 / 5) while config_json holds the real values (0.2 / 3) -- the loader must prefer the JSON.
  w.add_float32('magpietts.inference.attention_prior_epsilon', float(inf.get('attention_prior_epsilon', 0.1)))
  w.add_int32('magpietts.inference.attention_prior_lookahead_window', int(inf.get('attention_prior_lookahead_window', 5)))
  w.add_int32('magpietts.inference.start_prior_after_n_audio_steps', int(inf.get('start_prior_after_n_audio_steps', 0)))
  w.add_int32('magpietts.inference.attention_prior_advance_threshold', int(inf.get('attention_prior_advance_threshold', 8)))
  w.add_int32('magpietts.inference.attention_prior_decay_threshold', int(inf.get('attention_prior_decay_threshold', 10)))
  for key in ('estimate_alignment_from_layers', 'apply_prior_to_layers'):
    if inf.get(key):
      w.add_array('magpietts.inference.' + key, [int(x) for x in inf[key]])
  stored = {}
  for name, t in sd.items():
    if name.endswith('.causal_mask'):
      continue
    if name.endswith('.pos_ff.proj.conv.weight') or name.endswith('.pos_ff.o_net.conv.weight'):
      for k in range(t.shape[2]):
        if f'{name}.k{k}' in drop:
          continue
        a = gguf_array(name, t[:, :, k])
        w.add_tensor(f'{name}.k{k}', a)
        stored[f'{name}.k{k}'] = a
      continue
    a = gguf_array(name, t)
    w.add_tensor(name, a)
    stored[name] = a
  w.write_header_to_file()
  w.write_kv_data_to_file()
  w.write_tensors_to_file()
  w.close()
  return stored


def gguf_expected(stored):
  """What the Magpie GGUF mapping must produce: taps re-interleaved into (out, in, k), widened."""
  out, taps = {}, collections.defaultdict(dict)
  for name, a in stored.items():
    base, dot, k = name.rpartition('.k')
    if dot and k.isdigit() and base.endswith('conv.weight'):
      taps[base][int(k)] = a
    else:
      out[name] = digest(a)
  for base, ks in taps.items():
    out[base] = digest(np.stack([ks[k].astype(np.float32) for k in sorted(ks)], axis=2))
  return out


def dtypes_checkpoint(rng):
  base = torch.from_numpy(rng.standard_normal((4, 6)).astype(np.float32))
  sd = collections.OrderedDict()
  sd['f32'] = base.clone()
  sd['f16'] = base.to(torch.float16)
  sd['bf16'] = base.to(torch.bfloat16)
  sd['f64'] = base.double()
  sd['i32'] = torch.arange(-5, 7, dtype=torch.int32).view(3, 4)
  sd['i64'] = torch.tensor([-(2 ** 40), 0, 2 ** 40 + 3], dtype=torch.int64)
  sd['bool'] = torch.tensor([True, False, True])
  sd['scalar'] = torch.tensor(7, dtype=torch.int64)
  sd['param'] = torch.nn.Parameter(base[1:3].clone())
  sd['transposed'] = base.t()
  sd['offset_view'] = base.view(-1)[5:17].view(3, 4)
  return sd


# ---- NanoCodec (decoder part), tiny: 64 base channels, the released rates and kernels ----

CODEC_BASE, CODEC_RATES, CODEC_KERNELS, CODEC_DILATIONS = 64, [8, 8, 4, 2, 2], [3, 7, 11], [1, 3, 5]
FSQ_LEVELS, FSQ_BASES = [8, 7, 6, 6], [1, 8, 56, 336]
WN0, WN1 = '.conv.parametrizations.weight.original0', '.conv.parametrizations.weight.original1'


def codec_state_dict(rng):
  """AudioCodecModel's keys (weight norm as torch parametrizations, spec 2.3), random values."""
  sd = collections.OrderedDict()

  def r(shape, mean=0.0, std=1.0):
    return torch.from_numpy((mean + std * rng.standard_normal(shape)).astype(np.float32))

  def conv(stem, bias, dim0, shape):
    sd[stem + '.conv.bias'] = r((bias,), 0.0, 0.02)
    sd[stem + WN0] = r((dim0, 1, 1), 0.8, 0.1)
    sd[stem + WN1] = r(shape)

  def alpha(stem, channels):
    sd[stem + '.activation.snake_act.alpha'] = r((1, channels // 2, 1), 1.0, 0.2)

  sd['audio_encoder.pre_conv.conv.bias'] = r((4,))  # not decoder: ignored by the loaders
  c0 = CODEC_BASE
  conv('audio_decoder.pre_conv', c0, c0, (c0, 32, 7))
  for i in range(len(CODEC_RATES)):
    alpha(f'audio_decoder.activations.{i}', c0 >> i)
  for i, rate in enumerate(CODEC_RATES):
    conv(f'audio_decoder.up_sample_conv_layers.{i}', c0 >> (i + 1), c0 >> i, (c0 >> i, 1, 2 * rate))
  for i in range(len(CODEC_RATES)):
    c = c0 >> (i + 1)
    for j, k in enumerate(CODEC_KERNELS):
      for m in range(len(CODEC_DILATIONS)):
        stem = f'audio_decoder.res_layers.{i}.res_blocks.{j}.res_blocks.{m}'
        alpha(stem + '.input_activation', c)
        alpha(stem + '.skip_activation', c)
        conv(stem + '.input_conv', c, c, (c, c, k))
        conv(stem + '.skip_conv', c, c, (c, c, k))
  cf = c0 >> len(CODEC_RATES)
  alpha('audio_decoder.post_activation', cf)
  conv('audio_decoder.post_conv', 1, 1, (1, cf, 3))
  for g in range(8):
    sd[f'vector_quantizer.fsqs.{g}.dim_base_index'] = torch.tensor(FSQ_BASES, dtype=torch.int32).view(1, 4, 1)
    sd[f'vector_quantizer.fsqs.{g}.num_levels'] = torch.tensor(FSQ_LEVELS, dtype=torch.int32).view(1, 4, 1)
  sd['mel_loss_fn.window'] = r((16,))  # a training buffer: ignored
  sd._metadata = collections.OrderedDict([('', {'version': 1})])
  return sd


def codec_config():
  return {
    'target': 'nemo.collections.tts.models.audio_codec.AudioCodecModel',
    'nemo_version': '3.0.0', 'sample_rate': 22050, 'samples_per_frame': 1024,
    'vector_quantizer': {'_target_': 'nemo.collections.tts.modules.audio_codec_modules.GroupFiniteScalarQuantizer',
                         'num_groups': 8, 'num_levels_per_group': FSQ_LEVELS},
    'audio_decoder': {'_target_': 'nemo.collections.tts.modules.audio_codec_modules.CausalHiFiGANDecoder',
                      'up_sample_rates': CODEC_RATES, 'input_dim': 32, 'base_channels': CODEC_BASE,
                      'activation': 'half_snake', 'output_activation': 'clamp', 'pad_mode': 'zeros',
                      'n_groups_equal_to_out_channels': True},
  }


def fold(sd, stem):
  """conversion/codec.py materialize_weight_norm: g * v / max(||v||, 1e-12) over all dims but 0."""
  g, v = sd[stem + WN0].float(), sd[stem + WN1].float()
  norm = v.norm(2, dim=tuple(range(1, v.ndim)), keepdim=True).clamp_min(1e-12)
  return (g * v / norm).contiguous()


def dense_transpose(w, cout):
  """conversion/codec.py conv_transpose_to_dense_ggml: grouped (Cin, Cout/g, K) -> dense (Cin, Cout, K)."""
  cin, per, k = w.shape
  groups = cout // per
  inper = cin // groups
  dense = torch.zeros((cin, cout, k), dtype=w.dtype)
  for gi in range(groups):
    for a in range(inper):
      for b in range(per):
        dense[gi * inper + a, gi * per + b] = w[gi * inper + a, b]
  return dense


def codec_short_name(stem):
  m = stem.replace('audio_decoder.', 'dec.')
  m = m.replace('dec.pre_conv', 'dec.pre').replace('dec.post_conv', 'dec.post')
  m = m.replace('dec.post_activation', 'dec.post_act').replace('dec.activations.', 'dec.act.')
  m = m.replace('dec.up_sample_conv_layers.', 'dec.up.')
  m = m.replace('dec.res_layers.', 'dec.res.').replace('.res_blocks.', '.', 2)
  for a, b in (('.input_activation', '.ia'), ('.skip_activation', '.sa'), ('.input_conv', '.ic'), ('.skip_conv', '.sc')):
    m = m.replace(a, b)
  return m


def write_codec_gguf(path, sd, cfg):
  """The conventions of NeMo-Speech.cpp conversion/codec.py (f16), returning what rill must rebuild:
  per state-dict stem the f16-rounded folded weight in torch's layout (grouped for the transposed
  convs), the bias and alpha as flat f32."""
  dec, q = cfg['audio_decoder'], cfg['vector_quantizer']
  w = gguf.GGUFWriter(str(path), 'nemo-nano-codec')
  w.add_name('tiny NanoCodec-shaped test decoder')
  w.add_string('nano_codec.nemo_target', cfg['target'])
  w.add_string('nano_codec.config_json', json.dumps(cfg, ensure_ascii=False, sort_keys=True))
  w.add_string('nano_codec.decoder.activation', dec['activation'])
  w.add_string('nano_codec.decoder.output_activation', dec['output_activation'])
  w.add_string('nano_codec.decoder.pad_mode', dec['pad_mode'])
  for key, value in [('sample_rate', 22050), ('samples_per_frame', 1024), ('num_codebooks', 8),
                     ('codebook_size', 2016), ('codebook_dim_per_group', 4), ('latent_dim', 32),
                     ('decoder.input_dim', 32), ('decoder.base_channels', CODEC_BASE),
                     ('decoder.in_kernel_size', 7), ('decoder.out_kernel_size', 3)]:
    w.add_int32('nano_codec.' + key, value)
  w.add_float32('nano_codec.frame_rate', 22050 / 1024)
  w.add_bool('nano_codec.decoder.n_groups_equal_to_out_channels', True)
  w.add_array('nano_codec.quantizer.num_levels_per_group', FSQ_LEVELS)
  w.add_array('nano_codec.quantizer.dim_base_index', FSQ_BASES)
  w.add_array('nano_codec.decoder.up_sample_rates', CODEC_RATES)
  w.add_array('nano_codec.decoder.resblock_kernel_sizes', CODEC_KERNELS)
  w.add_array('nano_codec.decoder.resblock_dilation_sizes', CODEC_DILATIONS)
  want = {}
  for name, t in sd.items():
    if not name.startswith('audio_decoder.'):
      continue
    if name.endswith(WN1):
      stem = name[:-len(WN1)]
      folded = fold(sd, stem)
      grouped16 = folded.to(torch.float16)
      want[stem + '.conv.weight'] = digest(grouped16.numpy())
      if '.up_sample_conv_layers.' in stem:
        folded = dense_transpose(folded, sd[stem + '.conv.bias'].numel())
      w.add_tensor(codec_short_name(stem) + '.w', folded.to(torch.float16).numpy())
    elif name.endswith('.conv.bias'):
      stem = name[:-len('.conv.bias')]
      w.add_tensor(codec_short_name(stem) + '.b', t.float().reshape(1, -1, 1).numpy())
      want[name] = digest(t.numpy())
    elif name.endswith('.activation.snake_act.alpha'):
      stem = name[:-len('.activation.snake_act.alpha')]
      short = codec_short_name(stem)
      w.add_tensor(short + '.alpha', t.float().numpy())
      w.add_tensor(short + '.alpha_inv', (1.0 / (t.float() + 1e-9)).numpy())
      want[name] = digest(t.reshape(-1).numpy())
  levels = np.array(FSQ_LEVELS)
  idx = np.arange(2016)[:, None]
  codes = ((idx // np.array(FSQ_BASES)) % levels - levels // 2) / (levels // 2)
  w.add_tensor('q.fsq.codebook', np.repeat(codes[None].astype(np.float32), 8, axis=0))
  w.write_header_to_file()
  w.write_kv_data_to_file()
  w.write_tensors_to_file()
  w.close()
  return want


def module_checkpoint():
  """A real nn.Module's state_dict (with _metadata) incl. a new-API weight-norm parametrization."""
  torch.manual_seed(0)
  m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.LayerNorm(4),
                          torch.nn.utils.parametrizations.weight_norm(torch.nn.Conv1d(4, 2, 3)))
  m.register_buffer('steps', torch.tensor(5))
  return m.state_dict()


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument('--dict', required=True, help='the real ipa_cmudict-0.7b_nv23.01.txt')
  ap.add_argument('--heteronyms', required=True, help='the real heteronyms-052722')
  args = ap.parse_args()
  OUT.mkdir(exist_ok=True)
  rng = np.random.default_rng(20261201)
  lines = [l for l in Path(args.dict).read_text(encoding='utf-8').splitlines(keepends=True)
           if l.split('  ')[0].split('(')[0] in WORDS]
  dict_bytes = ''.join(lines).encode()
  het_bytes = Path(args.heteronyms).read_bytes()[:200].rsplit(b'\n', 1)[0] + b'\n'
  dict_member = '7d0cd510aeb041b6920eab560beebbc3_' + DICT_NAME
  het_member = 'e1799b2766cc44d7b092afa3df433517_' + HET_NAME

  sd = state_dict(rng)
  cfg = model_config(dict_member, het_member)
  write_nemo(OUT / 'tiny_magpie.nemo', sd, cfg, [(dict_member, dict_bytes), (het_member, het_bytes)])
  stored = write_gguf(OUT / 'tiny_magpie.f16.gguf', sd, cfg)
  # Broken on purpose, three ways at once: a missing tap, a metadata value that contradicts
  # the tensors, an EOS method rill does not implement (tests expect all three reported).
  bad_cfg = json.loads(json.dumps(cfg))
  bad_cfg['inference_parameters']['eos_detection_method'] = 'argmax'
  write_gguf(OUT / 'tiny_magpie_bad.f16.gguf', sd, bad_cfg,
             drop={'encoder.layers.0.pos_ff.proj.conv.weight.k1'}, override={'encoder.layers': 2})
  csd, ccfg = codec_state_dict(rng), codec_config()
  write_nemo(OUT / 'tiny_codec.nemo', csd, ccfg, [])
  codec_gguf = write_codec_gguf(OUT / 'tiny_codec.f16.gguf', csd, ccfg)
  # Sound tensors, contradicting metadata: four problems the loader must list together.
  meta_cfg = json.loads(json.dumps(cfg))
  meta_cfg['inference_parameters']['apply_prior_to_layers'] = [0, 5]
  write_gguf(OUT / 'tiny_magpie_badmeta.f16.gguf', sd, meta_cfg,
             override={'encoder.layers': 2, 'audio_eos_id': 99}, lens=[CTX, 1])
  dsd = dtypes_checkpoint(rng)
  torch.save(dsd, OUT / 'torch_dtypes.ckpt')
  msd = module_checkpoint()
  torch.save(msd, OUT / 'torch_module.ckpt')

  expected = {
    'generator': dict(torch=torch.__version__, gguf='0.19.0', numpy=np.__version__),
    'config': dict(dim=D, text_vocab=TEXT, encoder_layers=1, encoder_kernel=ENC_K,
                   encoder_positions=ENC_POS, decoder_layers=1, decoder_positions=DEC_POS, heads=1,
                   ffn=FFN, xattn_dim=XATTN, codebooks=BOOKS, codebook_vocab=VOCAB, lt_dim=LT,
                   lt_ffn=LT_FFN, lt_positions=LT_POS, lt_layers=1, speakers=SPEAKERS,
                   context_frames=CTX),
    'inference_parameters': EXPECTED_PARAMS,
    'speaker_names': SPEAKER_NAMES[:SPEAKERS],
    'artifacts': {DICT_NAME: dict(member=dict_member, bytes=len(dict_bytes),
                                  sha256=hashlib.sha256(dict_bytes).hexdigest(), words=list(WORDS)),
                  HET_NAME: dict(member=het_member, bytes=len(het_bytes),
                                 sha256=hashlib.sha256(het_bytes).hexdigest())},
    'nemo_state_dict': {n: torch_digest(t) for n, t in sd.items()},
    'gguf_magpie': gguf_expected(stored),
    'torch_dtypes': {n: torch_digest(t) for n, t in dsd.items()},
    'torch_module': {n: torch_digest(t) for n, t in msd.items()},
    'codec_config': dict(input_dim=32, base_channels=CODEC_BASE, up_sample_rates=CODEC_RATES, in_kernel=7,
                         out_kernel=3, resblock_kernels=CODEC_KERNELS, resblock_dilations=CODEC_DILATIONS),
    'codec_nemo_state_dict': {n: torch_digest(t) for n, t in csd.items()},
    'codec_gguf_folded': codec_gguf,
  }
  (OUT / 'expected.json').write_text(json.dumps(expected, indent=1) + '\n')
  for p in sorted(OUT.iterdir()):
    print(p.name, p.stat().st_size, hashlib.sha256(p.read_bytes()).hexdigest())


if __name__ == '__main__':
  main()
