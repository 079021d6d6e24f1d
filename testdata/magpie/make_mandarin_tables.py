#!/usr/bin/env python3
"""Writes rill's Mandarin tables, crates/rill-text/data/zh_*.txt.gz, from the PyPI packages NeMo
3.0.0's ChineseG2p runs on (read by crates/rill-text/src/mandarin/, feature `mandarin`):

| PyPI file | sha256 | licence |
|---|---|---|
| jieba-0.42.1.tar.gz | 055ca12f62674fafed09427f176506079bc135638a14e23e25be909131928db2 | MIT |
| pypinyin-0.55.0-py2.py3-none-any.whl | d53b1e8ad2cdb815fb2cb604ed3123372f5a28c6f447571244aca36fc62a286f | MIT |
| pypinyin_dict-0.9.0-py2.py3-none-any.whl | 10cfbe40af87d704b867533177be8cd72837da9e224755dd275798e88097067a | MIT |

(`--wheels DIR` prints the sha256 of the files in DIR to compare.)

    python3 -m venv venv && venv/bin/pip download --no-deps -d wheels \
        jieba==0.42.1 pypinyin==0.55.0 pypinyin-dict==0.9.0
    venv/bin/pip install wheels/*
    venv/bin/python testdata/magpie/make_mandarin_tables.py --wheels wheels

What is written is the packages' state as NeMo uses it, after loading, so nothing of their
loaders has to be reproduced:
* zh_jieba_dict.txt.gz: `jieba.dt.FREQ` after `jieba.initialize()` (dict.txt), only the words
  with a non-zero count ("word count" lines; a zero count behaves as jieba's prefix entries,
  which rill rebuilds), first line `total <jieba.dt.total>` (which counts duplicate lines).
* zh_jieba_hmm.txt.gz: `jieba.finalseg`'s start, transition and emission log-probabilities
  (`start S p`, `trans S T p`, `emit S <hex code point> p`), floats in Python's shortest
  round-trip form.
* zh_pinyin_chars.txt.gz: for every character pypinyin treats as Han (`RE_HANS`) that has a
  reading after `pypinyin_dict.pinyin_data.cc_cedict.load()` (NeMo's `zh_cn_pinyin.py` calls it
  first), the string `lazy_pinyin(c, style=TONE3, neutral_tone_with_five=True)` gives ("c\\tpy").
* zh_pinyin_phrases.txt.gz: every key of `PHRASES_DICT`, alone on its line when its TONE3 reading
  is its characters' readings one by one, else with that reading ("phrase\\tpy py ...").
The readings are converted with pypinyin's own UltimateConverter, so rill needs no tone-mark
conversion. Sizes (gzip -9): 1,701,485 + 265,706 + 172,182 + 270,961 bytes = 2.4 MB, most of it
jieba's dictionary (349,045 words), which jieba's route needs whole; the phrase table stores a
reading only for the 7,031 of 47,111 phrases not read character by character.
"""
import argparse
import gzip
import hashlib
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE.parent.parent / 'crates' / 'rill-text' / 'data'
PINNED = {'jieba': '0.42.1', 'pypinyin': '0.55.0', 'pypinyin_dict': '0.9.0'}


def write(path, lines):
  data = ('\n'.join(lines) + '\n').encode('utf-8')
  # mtime=0: the same bytes on every run.
  with open(path, 'wb') as f:
    with gzip.GzipFile(filename='', mode='wb', fileobj=f, compresslevel=9, mtime=0) as g:
      g.write(data)
  print('wrote', path, len(lines), 'lines', path.stat().st_size, 'bytes')


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument('--wheels', type=pathlib.Path, help='folder with the three downloaded files (prints their sha256)')
  ap.add_argument('--out', type=pathlib.Path, default=OUT)
  a = ap.parse_args()
  if a.wheels:
    for p in sorted(a.wheels.iterdir()):
      if p.name.startswith(('jieba', 'pypinyin')):
        print(p.name, hashlib.sha256(p.read_bytes()).hexdigest())
  import jieba
  import jieba.finalseg as fs
  import pypinyin
  from importlib.metadata import version
  for name, want in PINNED.items():
    got = version(name.replace('_', '-'))
    assert got == want, (name, got, want)
  from pypinyin import Style
  from pypinyin.constants import PHRASES_DICT, PINYIN_DICT, RE_HANS
  from pypinyin.converter import UltimateConverter
  from pypinyin_dict.pinyin_data import cc_cedict
  cc_cedict.load()
  conv = UltimateConverter(neutral_tone_with_five=True)

  def reading(word):
    out = []
    for item in conv.convert(word, Style.TONE3, False, lambda s: list(s), strict=True):
      out.extend(item)
    return out

  jieba.initialize()
  freq = jieba.dt.FREQ
  lines = [f'total {jieba.dt.total}']
  for w in sorted(k for k, v in freq.items() if v > 0):
    assert ' ' not in w and '\n' not in w, w
    lines.append(f'{w} {freq[w]}')
  write(a.out / 'zh_jieba_dict.txt.gz', lines)

  lines = [f'start {s} {fs.start_P[s]!r}' for s in 'BEMS']
  for s in 'BEMS':
    for t, p in sorted(fs.trans_P[s].items()):
      lines.append(f'trans {s} {t} {p!r}')
  for s in 'BEMS':
    for c, p in sorted(fs.emit_P[s].items()):
      assert len(c) == 1, c
      lines.append(f'emit {s} {ord(c):x} {p!r}')
  write(a.out / 'zh_jieba_hmm.txt.gz', lines)

  chars = {}
  lines = []
  for cp in sorted(PINYIN_DICT):
    c = chr(cp)
    if not RE_HANS.match(c):
      continue  # pypinyin never looks these up: they are not Han to it
    r = reading(c)
    assert len(r) == 1 and r[0] and '\t' not in r[0] and ' ' not in r[0], (c, r)
    chars[c] = r[0]
    lines.append(f'{c}\t{r[0]}')
  write(a.out / 'zh_pinyin_chars.txt.gz', lines)

  lines = []
  explicit = 0
  for p in sorted(PHRASES_DICT):
    assert RE_HANS.match(p) and '\t' not in p, p
    r = reading(p)
    assert all(x and ' ' not in x for x in r), (p, r)
    if r == [chars.get(c) for c in p]:
      lines.append(p)
    else:
      explicit += 1
      lines.append(p + '\t' + ' '.join(r))
  write(a.out / 'zh_pinyin_phrases.txt.gz', lines)
  print(explicit, 'phrases with their own reading')


if __name__ == '__main__':
  main()
