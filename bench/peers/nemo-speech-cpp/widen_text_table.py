#!/usr/bin/env python
"""Turn the oracle's English-only random Magpie .nemo into a v2602-shaped one (2362-row text table).

  python widen_text_table.py IN.nemo OUT.nemo [--seed 0]

The oracle (make_checkpoint.py) builds Magpie with only the english_phoneme tokenizer, so
text_embedding has 98 rows (BOS 96, EOS 97). NeMo-Speech.cpp's tokenizer hard-codes the released
v2602 ids (English offset 0, EOS 2361), so it needs the released 2362-row table. This script:
  * replaces text_embedding.weight with a [2362, 768] table from the same portable recipe
    (portable_init.tensor_values(seed, "text_embedding.weight", [2362, 768], 0, 1)); as values depend
    only on (seed, name, flat index), rows 0..97 equal the oracle's rows;
  * lists the ten v2602 text tokenizers in model_config.yaml in the released order (the nine
    non-English entries are name-only stubs: neither converter nor runtime reads them);
  * keeps every other member and tensor as it is.
Nothing else is changed; the result is what NeMo-Speech.cpp's convert_model.py is then run on.
"""
import argparse, io, sys, tarfile, tempfile
from pathlib import Path

import numpy as np
import torch
import yaml

V2602 = [('english_phoneme', None), ('spanish_phoneme', 103), ('german_phoneme', 150),
         ('mandarin_phoneme', 109), ('japanese_phoneme', 175), ('french_chartokenizer', 384),
         ('hindi_chartokenizer', 191), ('italian_phoneme', 384), ('vietnamese_phoneme', 384),
         ('text_ce_tokenizer', 384)]
ROWS = 2362


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('inp'); ap.add_argument('out'); ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--oracle-dir', default=str(Path(__file__).resolve().parent),
                    help='folder holding portable_init.py (the oracle/ folder)')
    a = ap.parse_args()
    sys.path.insert(0, a.oracle_dir)
    import portable_init
    with tarfile.open(a.inp) as t:
        members = [(m, t.extractfile(m).read()) for m in t.getmembers() if m.isfile()]
    out = []
    for m, data in members:
        base = Path(m.name).name
        if base == 'model_weights.ckpt':
            sd = torch.load(io.BytesIO(data), map_location='cpu', weights_only=True)
            old = sd['text_embedding.weight']
            d = old.shape[1]
            new = np.asarray(portable_init.tensor_values(a.seed, 'text_embedding.weight', [ROWS, d], 0.0, 1.0),
                             dtype=np.float32).reshape(ROWS, d)
            assert np.array_equal(new[:old.shape[0]], old.numpy()), 'recipe mismatch with the oracle table'
            sd['text_embedding.weight'] = torch.from_numpy(new)
            buf = io.BytesIO(); torch.save(sd, buf); data = buf.getvalue()
            print(f'text_embedding.weight {tuple(old.shape)} -> {tuple(new.shape)}')
        elif base == 'model_config.yaml':
            cfg = yaml.safe_load(data.decode('utf-8'))
            tt = cfg['text_tokenizers']
            new_tt = {}
            for name, size in V2602:
                new_tt[name] = tt[name] if name in tt else {
                    '_target_': 'stub.not_buildable_offline', 'vocab_size': size}
            cfg['text_tokenizers'] = new_tt
            data = yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True).encode('utf-8')
        m2 = tarfile.TarInfo(m.name); m2.size = len(data); m2.mode = m.mode; m2.mtime = m.mtime
        out.append((m2, data))
    with tarfile.open(a.out, 'w') as t:
        for m, data in out:
            t.addfile(m, io.BytesIO(data))
    print('wrote', a.out)


if __name__ == '__main__':
    main()
