#!/usr/bin/env python
"""A recording with only the coarsest N MusicCoCa style levels fed (the finer ones masked).

Upstream's C++ engine (`core/src/mlx_engine.cpp`, `generate_frame`) keeps the coarsest
`kMusicCoCaRVQLevels - kMusicCoCaMaskedTailLevels` = 6 style levels and writes the mask id
(raw -1, token 6) into the other six; upstream's Python (`MagentaRT2System`) feeds all 12.
This wrapper runs the oracle's `record_portable.py` unmodified, except that the style list
it hands to the reference `MagentaRT2System._build_conditioning` has levels >= N set to -1
(the reference's own "masked" value), and adds `style_levels: N` to the metadata.

  $PY record_style_levels.py --oracle ORACLE_DIR --style-levels 6 -- <record_portable.py arguments>
"""

import argparse
import json
import os
import sys

import numpy as np


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument('--oracle', required=True, help="the oracle's script directory (record_portable.py)")
  ap.add_argument('--style-levels', type=int, required=True, choices=range(1, 13))
  args, rest = ap.parse_known_args()
  rest = [a for a in rest if a != '--']
  sys.path.insert(0, args.oracle)
  import record_portable as RP  # noqa: E402  (unmodified)

  n = args.style_levels
  original = RP.build_conditioning

  def build_conditioning(spec, style, *a, **kw):
    masked = list(style[:n]) + [-1] * (len(style) - n)
    return original(spec, masked, *a, **kw)

  RP.build_conditioning = build_conditioning
  sys.argv = [sys.argv[0]] + rest
  RP.main()

  # The metadata names the level count (both the .json and the npz's meta_json).
  ap2 = argparse.ArgumentParser()
  ap2.add_argument('--out')
  ap2.add_argument('--name')
  known, _ = ap2.parse_known_args(rest)
  base = os.path.join(known.out, known.name)
  with open(base + '.json') as f:
    meta = json.load(f)
  meta['style_levels'] = n
  meta['style_levels_note'] = f'style levels >= {n} fed as -1 (masked, token 6); style_codes lists all 12'
  js = json.dumps(meta, indent=1)
  with open(base + '.json', 'w') as f:
    f.write(js)
  with np.load(base + '.npz') as z:
    arrays = {k: z[k] for k in z.files}
  arrays['meta_json'] = np.array(js)
  np.savez_compressed(base + '.npz', **arrays)


if __name__ == '__main__':
  main()
