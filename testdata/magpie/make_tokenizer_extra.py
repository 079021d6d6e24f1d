#!/usr/bin/env python3
"""Writes testdata/magpie/tokenizer_en_extra.json: upstream NeMo's English front end on edge cases
the oracle's 12 sentences do not reach (`'s` / `s` rules, `|...|` spans, hyphen storms, Unicode
oddities, control characters) and on 600 deterministic random texts (word salad of dictionary
words, heteronyms, suffixes, punctuation and odd code points), for
crates/rill-text/tests/oracle_tokenizer.rs.

    python3 testdata/magpie/make_tokenizer_extra.py --nemo PATH/TO/NeMo --data crates/rill-text/data

The reference is NeMo's own code, unmodified: IpaG2p (i18n_ipa.py, base.py, g2p/utils.py) and
IPATokenizer (tts_tokenizers.py, tokenizer_utils.py, ipa_lexicon.py), read from a NeMo git
repository or checkout (`--nemo`; run here on GitHub NVIDIA/NeMo at 8cfedd72, 2025-09-20). Those
files import nothing heavy except `transformers.PreTrainedTokenizerBase` (a type only) and
`nemo.utils.{logging, decorators.experimental}`, which this script stubs, so torch is not needed.
The configuration is the released `english_phoneme` one (spec section 3.2) with
phoneme_probability = 1.0, as the oracle's record_tokenizer.py sets it. Before writing, the script
re-runs the oracle's 12 recorded sentences (tokenizer_en.json, recorded with nemo_toolkit 3.0.0)
and refuses to write unless every G2P output and id matches, i.e. these NeMo files behave as 3.0.0.
"""
import argparse
import json
import logging
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent

FILES = [
    'nemo/collections/common/tokenizers/text_to_speech/ipa_lexicon.py',
    'nemo/collections/common/tokenizers/text_to_speech/tokenizer_utils.py',
    'nemo/collections/common/tokenizers/text_to_speech/tts_tokenizers.py',
    'nemo/collections/tts/g2p/models/base.py',
    'nemo/collections/tts/g2p/models/i18n_ipa.py',
    'nemo/collections/tts/g2p/utils.py',
]

STUBS = {
    'nemo/utils/__init__.py': 'import logging as _logging\nlogging = _logging.getLogger("nemo")\n',
    'nemo/utils/decorators.py': 'def experimental(obj):\n    return obj\n',
    'transformers/__init__.py': 'class PreTrainedTokenizerBase:\n    pass\n',
}

SENTENCES = [
    "The airport's runway and the airports' gates.",
    "Jones's car, Bess's cat and the boss's dogs.",
    'cats dogs houses airports thermostats zqxs',
    "O'Neil's rock-and-roll e-mail X-ray.",
    "|ˈhɛloʊ| |a b c| |<pad>| |<oov>| || |unclosed",
    "x|y|z and a lone pipe |",
    'ſ ß ﬁ \u212a \u212b ı İ',
    'Ðe þorn æsc ø Ø ÿ',
    '\u0663 \u096a 5th 1st 2nd x\u00b2',
    'ðə kæt ə ɛ ʃ θ ˈ',
    'tab\there\nnew line\r\x0bvt\x1cfs\x00nul',
    'Hangul \ud55c\uad6d\uc5b4 and Devanagari \u0939\u093f\u0928\u094d\u0926\u0940 and emoji \U0001F600.',
    "a--b --- -x- x-'- 'tis 'bout rock'n'roll",
    'MIXED case WoRdS and ALLCAPS',
    'What?! No... Yes!!! (really) [maybe] {sure} / slash: colon; semi',
    '\u201cSmart quotes\u201d and \u2018single ones\u2019 and \u2019tis',
    'e\u0301 combining acute; n\u0303o; a\u20dd enclosing',
    'Mr. Dr. Mrs. vs. etc. e.g. i.e.',
    'read reads reading live lives wind winds',
    "don't can't won't shouldn't y'all ma'am",
    "NVIDIA's GPUs, CPU's, TTS-based IPA.",
    'hello-world-wide-web',
    '123-456 3-D 4-H 1-2-3',
    'supercalifragilisticexpialidocious',
    '|x',
    "read's lives's",
    '\u01c4emal \u01c5 \u01c6',
    '\u03b1\u03b2\u03b3 \u0391\u0392\u0393 \u043f\u0440\u0438\u0432\u0435\u0442',
    '\uff21\uff22\uff23 fullwidth',
    '\U0001D15E\U0001D165 musical',
    '',
    '   ',
    '\u2014',
]


def random_texts(data: pathlib.Path, n: int, seed: int = 2026):
  """Deterministic word salad: dictionary words (every 509th entry), heteronyms, invented
  words, suffixes, hyphen and apostrophe joins, punctuation, spans and random code points."""
  import random
  rng = random.Random(seed)
  lines = (data / 'ipa_cmudict-0.7b_nv23.01.txt').read_text(encoding='utf-8').splitlines()
  entries = [l.split()[0] for l in lines if l[:1].isalpha() or l[:1] == "'"]
  words = [w.split('(')[0] for w in entries[::509]]
  heteronyms = (data / 'heteronyms-052722').read_text(encoding='utf-8').split()
  invented = ['blorp', 'zqx', 'Frobnicate', 'xyzzy', 'rill', 'Magpie', 'NeMo', 'qwrtp']
  extras = [' ', ' ', ' ', '  ', ', ', '. ', '? ', '! ', '; ', ': ', '-', '--', "'", '"', '(', ')',
            '[', ']', '{', '}', '/', '|', '||', '| a b |', '\t', '\n', '3', '42', '3.14', '$5',
            '\u2014', '\u2019', '\u201c', '\u00e9', '\u00df', '\u017f', '\u00e6', '\u0301',
            '\u0259', '\u02c8', '\uac00', '\u0663', '\U0001F600', '\x00', '\x1c', '_', '=']

  def piece():
    r = rng.random()
    if r < 0.35:
      w = rng.choice(words)
    elif r < 0.45:
      w = rng.choice(heteronyms)
    elif r < 0.5:
      w = rng.choice(invented)
    elif r < 0.55:
      w = chr(rng.choice([rng.randrange(0x20, 0x250), rng.randrange(0x250, 0x3100),
                          rng.randrange(0xAC00, 0xD7A4), rng.randrange(0x1F300, 0x1F700)]))
    else:
      return rng.choice(extras)
    case = rng.random()
    w = w.lower() if case < 0.6 else (w.capitalize() if case < 0.85 else w.upper())
    suffix = rng.random()
    if suffix < 0.1:
      w += "'s"
    elif suffix < 0.2:
      w += 's'
    elif suffix < 0.25:
      w += '-' + rng.choice(words).lower()
    return w

  return [''.join(piece() for _ in range(rng.randrange(1, 16))) for _ in range(n)]


def read_upstream(nemo: pathlib.Path, rel: str) -> str:
  if (nemo / rel).exists():
    return (nemo / rel).read_text(encoding='utf-8')
  return subprocess.run(['git', '--git-dir', str(nemo), 'show', f'HEAD:{rel}'], check=True,
                        capture_output=True, text=True).stdout


def build_tree(nemo: pathlib.Path, root: pathlib.Path):
  for rel in FILES:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(read_upstream(nemo, rel), encoding='utf-8')
  for rel, text in STUBS.items():
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding='utf-8')
  for d in [p for p in root.rglob('*') if p.is_dir()]:
    if not (d / '__init__.py').exists():
      (d / '__init__.py').write_text('')


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument('--nemo', required=True, type=pathlib.Path, help='NeMo checkout or git directory')
  ap.add_argument('--data', required=True, type=pathlib.Path, help='folder with the two data files')
  ap.add_argument('--out', default=str(HERE / 'tokenizer_en_extra.json'))
  a = ap.parse_args()
  logging.disable(logging.WARNING)  # NeMo warns about every dropped symbol
  with tempfile.TemporaryDirectory() as tmp:
    build_tree(a.nemo, pathlib.Path(tmp))
    sys.path.insert(0, tmp)
    from nemo.collections.common.tokenizers.text_to_speech.tts_tokenizers import IPATokenizer
    from nemo.collections.tts.g2p.models.i18n_ipa import IpaG2p
    g2p = IpaG2p(phoneme_dict=str(a.data / 'ipa_cmudict-0.7b_nv23.01.txt'),
                 heteronyms=str(a.data / 'heteronyms-052722'), phoneme_probability=0.8,
                 ignore_ambiguous_words=False, use_chars=True, use_stresses=True)
    tok = IPATokenizer(g2p=g2p, punct=True, apostrophe=True, pad_with_space=False)
    g2p.phoneme_probability = 1.0

    def run(text):
      pre = tok.text_preprocessing_func(text)
      try:
        ids = tok.encode(text)
      except Exception as e:  # NeMo fails on some inputs (only spaces: IndexError); recorded
        return dict(text=text, preprocessed=pre, g2p=g2p(pre), nemo_error=type(e).__name__)
      return dict(text=text, preprocessed=pre, g2p=g2p(pre), ids=ids)

    recorded = json.loads((HERE / 'tokenizer_en.json').read_text(encoding='utf-8'))
    assert list(tok.tokens) == recorded['tokens'], 'token table differs from the recording'
    for s in recorded['sentences']:
      got = run(s['text'])
      for key in ('preprocessed', 'g2p', 'ids'):
        assert got[key] == s[key], (s['text'], key, got[key], s[key])
    rows = [run(s) for s in SENTENCES]
    salad = [run(s) for s in random_texts(a.data, 600)]
  out = dict(description=__doc__, nemo_files=FILES, sentences=rows, random=salad)
  with open(a.out, 'w', encoding='utf-8') as f:
    json.dump(out, f, ensure_ascii=False, indent=1)
  print('checked the 12 recorded sentences; wrote', a.out, 'with', len(rows), 'sentences and',
        len(salad), 'random texts')


if __name__ == '__main__':
  main()
