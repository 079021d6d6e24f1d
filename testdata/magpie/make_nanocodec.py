#!/usr/bin/env python3
"""Slims the NanoCodec oracle outputs into the fixtures rill-nanocodec's tests read.

  python3 testdata/magpie/make_nanocodec.py ORACLE_DIR

ORACLE_DIR is the oracle's `magpie/` folder (upstream NeMo 3.0.0 run on random weights, seed 0).
Sources (their sha256 is also stored in the outputs):
  recordings/nanocodec_decode.npz   sha256 2ef6b707d690c46ded8a540a69c38a4eb9451d811b023b874f8265c26a623ced
      -> nanocodec_decode.npz (every array, float32 stage outputs, int64 codes; compressed)
  results/manifest_nanocodec.json   sha256 5901c9ab507834ff95d3212e17377145404e56b8f351febd6945e28920c6ccf8
      -> nanocodec_manifest.json (the 403 decoder + quantizer entries only)

The manifest's `sha256` of an entry is sha256 over the tensor's raw bytes in its torch dtype,
little-endian, C order (float32 for the weights, int32 for the FSQ buffers), as
`magpie_common.portable_state_dict` computes it.
"""
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def sha256(p):
    return hashlib.sha256(Path(p).read_bytes()).hexdigest()


def main():
    src = Path(sys.argv[1])
    rec = src / 'recordings' / 'nanocodec_decode.npz'
    man = src / 'results' / 'manifest_nanocodec.json'
    z = np.load(rec)
    keep = {}
    for k in z.files:
        if k == 'meta_json':
            continue
        a = z[k]
        keep[k] = a.astype(np.int64) if a.dtype.kind in 'iu' else a.astype(np.float32)
    keep['source_sha256'] = np.array(sha256(rec))
    np.savez_compressed(HERE / 'nanocodec_decode.npz', **keep)

    m = json.load(open(man))
    rows = []
    for t in m['tensors']:
        if not t['name'].startswith(('audio_decoder.', 'vector_quantizer.')):
            continue
        r = {k: t[k] for k in ('name', 'shape', 'dtype', 'kind', 'sha256')}
        if t['kind'] == 'uniform':
            r['mean_f64_bits'] = t['mean_f64_bits']
            r['std_f64_bits'] = t['std_f64_bits']
        rows.append(r)
    out = dict(source='results/manifest_nanocodec.json', source_sha256=sha256(man), seed=m['seed'],
               recipe=m['recipe'], sha256_of='raw little-endian bytes of the tensor in its torch dtype',
               tensors=rows)
    (HERE / 'nanocodec_manifest.json').write_text(json.dumps(out, indent=0) + '\n')
    for f in ('nanocodec_decode.npz', 'nanocodec_manifest.json'):
        print(f, (HERE / f).stat().st_size, sha256(HERE / f))
    print('sources:', rec.name, sha256(rec), man.name, sha256(man))


if __name__ == '__main__':
    main()
