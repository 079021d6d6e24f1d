#!/usr/bin/env python3
"""Writes testdata/magpie/tokenizer_ja.json: NeMo 3.0.0's own Japanese front end
(JapaneseKatakanaAccentG2p + JapanesePhonemeTokenizer, configured as the v2602 checkpoint's
`japanese_phoneme`) on pyopenjtalk 0.4.1 with OpenJTalk's MeCab dictionary, for hand-written
sentences (`tokenizer_ja_sentences.txt`: kana, kanji, numbers, Latin, full- and half-width
forms, punctuation, emoji, other scripts), long texts, and seeded random mixes of dictionary
words and of digit forms. Read by crates/rill-text/tests/japanese.rs.

The reference, built exactly so:

    apt-get install open-jtalk-mecab-naist-jdic      # Debian/Ubuntu 1.11-3
    python3 -m venv venv
    venv/bin/pip download pyopenjtalk==0.4.1 --no-deps -d sdist
    CMAKE_POLICY_VERSION_MINIMUM=3.5 venv/bin/pip install sdist/pyopenjtalk-0.4.1.tar.gz
    pip download nemo_toolkit==3.0.0 --no-deps -d .
    OPEN_JTALK_DICT_DIR=/var/lib/mecab/dic/open-jtalk/naist-jdic \\
    venv/bin/python testdata/magpie/make_tokenizer_ja.py \\
        --wheel nemo_toolkit-3.0.0-py3-none-any.whl --dict-src open_jtalk/src/mecab-naist-jdic

pyopenjtalk 0.4.1 is built from its sdist (CMake 4 needs `CMAKE_POLICY_VERSION_MINIMUM=3.5`
for its bundled OpenJTalk); `OPEN_JTALK_DICT_DIR` points it at Debian's compiled dictionary
(`open-jtalk-mecab-naist-jdic` 1.11-3, byte-identical to `mecab-dict-index` run on
r9y9/open_jtalk's `src/mecab-naist-jdic`) instead of the download pyopenjtalk would fetch.
`--dict-src` is that source folder (naist-jdic.csv, unidic-csj.csv), only sampled for the
random texts' words.

NeMo's code is upstream, unmodified, read from the nemo_toolkit 3.0.0 wheel:
`g2p/models/ja_jp_ipa.py` (JapaneseKatakanaAccentG2p), `g2p/models/base.py`, `g2p/utils.py`,
`tts_tokenizers.py` (JapanesePhonemeTokenizer), `ipa_lexicon.py`, `tokenizer_utils.py`;
`nemo.utils.logging`, `omegaconf`, `packaging`, `tokenizers` and `transformers` are stubbed.
Config, as v2602's `japanese_phoneme`: g2p ascii_letter_prefix "", ascii_letter_case upper;
tokenizer punct true, apostrophe false, pad_with_space true.

Per text: `text`; `g2p` = the G2P's output on `japanese_text_preprocessing` of the text with
every `\\s` removed (what magpietts `do_tts` does for ja before encoding); `ids` = the
tokenizer's `encode` of that text, **relative to the ja table** (add 458, the offset of
`japanese_phoneme` in v2602's aggregate, and EOS 2361 for model input); `words` =
`LanguageThresholds().get_word_count(text, "ja")` on the raw text (pyopenjtalk words whose
string is not blank, characters as fallback; threshold 80), taken out of tts_dataset_utils.py
by make_tokenizer_langs.py's `build_tree`. `tokens` is the 175-symbol table.
"""
import argparse
import json
import logging
import pathlib
import random
import re
import sys
import tempfile

import make_tokenizer_langs

HERE = pathlib.Path(__file__).resolve().parent
FILES = [
    'nemo/collections/common/tokenizers/text_to_speech/ipa_lexicon.py',
    'nemo/collections/common/tokenizers/text_to_speech/tokenizer_utils.py',
    'nemo/collections/common/tokenizers/text_to_speech/tts_tokenizers.py',
    'nemo/collections/common/tokenizers/tokenizer_spec.py',
    'nemo/collections/tts/g2p/models/ja_jp_ipa.py',
    'nemo/collections/tts/g2p/models/base.py',
    'nemo/collections/tts/g2p/utils.py',
]
STUBS = {
    'nemo/utils/__init__.py': 'import logging as _logging\nlogging = _logging.getLogger("nemo")\n',
    'omegaconf/__init__.py': ('import contextlib\n@contextlib.contextmanager\n'
                              'def open_dict(cfg):\n    yield cfg\n'),
    'packaging/__init__.py': '',
    'packaging/version.py': 'class InvalidVersion(Exception):\n    pass\nclass Version:\n    pass\n',
    'tokenizers/__init__.py': 'class Tokenizer:\n    pass\n',
    'transformers/__init__.py': 'class PreTrainedTokenizerBase:\n    pass\n',
}

# Random mixes: dictionary words, particles and endings, punctuation, numbers, Latin.
PART = ['は', 'が', 'を', 'に', 'で', 'と', 'の', 'も', 'から', 'まで', 'より', 'へ', 'や', 'か', 'ね', 'よ', 'です', 'ます',
        'でした', 'ました', 'でしょう', 'ましょう', 'ません', 'ない', 'たい', 'られる', 'させる', 'ている', 'てしまった',
        'だろう', 'らしい', 'そうだ']
PUNCT = list('、。！？「」『』（）【】…‥・〜ー―,.!?:;"\'()[]{}-/') + ['……', '――', '！？']
NUM = ['0', '1', '7', '10', '15', '100', '305', '1000', '2026', '12345', '1,000', '1,23,456', '12,34', '3.14', '0.001',
       '1.5', '10000000', '100000000000', '007', '0120', '1/3', '50%', '-3', '２０２６', '一二三', '百二十', '第3', '3つ',
       '4人', '5本', '6匹', '7日', '8時', '9分', '10円', '20歳', '30kg', '1km', '3月3日']
LATIN = ['AI', 'GPU', 'Python', 'NVIDIA', 'OK', 'USB', 'iPhone', 'ABC', 'x', 'Tokyo', 'the', 'CD', 'DVD', 'TV', 'PC',
         'SNS', 'IT', 'café', 'naïve', 'Ａｐｐｌｅ', 'ｘｙｚ', 'ｶﾀｶﾅ', 'ﾊﾞｯﾄ']


def random_texts(n, seed, words):
  rng = random.Random(seed)

  def piece():
    r = rng.random()
    if r < 0.45:
      return rng.choice(words)
    if r < 0.65:
      return rng.choice(PART)
    if r < 0.78:
      return rng.choice(PUNCT)
    if r < 0.9:
      return rng.choice(NUM)
    return rng.choice(LATIN)

  texts = []
  for k in range(n):
    m = rng.randrange(1, 12) if k % 10 else rng.randrange(20, 60)
    texts.append(''.join(piece() for _ in range(m)).replace('\n', ''))
  return texts


# Digit forms: integers, grouped and oddly grouped thousands, decimals, leading zeros,
# full-width digits, dates, times, phone numbers, kanji numerals, with units and context.
UNITS = ['', '', '円', '人', '個', '年', '月', '日', '時', '分', '秒', '％', '%', 'km', 'kg', 'メートル', '回', '本', '匹',
         '歳', '度', '号', '番', '倍', '億', '万', '兆']
PRE = ['', '', '', '第', '約', '計', '-', '+', '＋', '−', 'No.', '¥', '$', '#']
CTX = ['', 'は', 'です', 'の', 'から', 'まで', 'を', '、', '。', 'と', 'や', 'ぐらい', 'くらい', 'だけ']


def digit_texts(n, seed):
  rng = random.Random(seed)

  def num():
    r = rng.random()
    if r < 0.25:
      return str(rng.randrange(0, 10 ** rng.randrange(1, 16)))
    if r < 0.4:
      return f'{rng.randrange(0, 10**9):,}'
    if r < 0.5:  # odd comma groupings
      return ','.join(str(rng.randrange(1, 1000)) for _ in range(rng.randrange(2, 4)))
    if r < 0.62:
      return f'{rng.randrange(0, 10000)}.{rng.randrange(0, 10**rng.randrange(1, 5))}'
    if r < 0.7:
      return '0' + str(rng.randrange(0, 10**rng.randrange(1, 10)))
    if r < 0.78:
      return ''.join(chr(0xFF10 + int(c)) for c in str(rng.randrange(0, 10**rng.randrange(1, 8))))
    if r < 0.84:
      return f'{rng.randrange(1, 13)}/{rng.randrange(1, 32)}'
    if r < 0.9:
      return f'{rng.randrange(0, 24)}:{rng.randrange(0, 60):02d}'
    if r < 0.95:
      return f'{rng.randrange(0, 1000)}-{rng.randrange(0, 10000):04d}-{rng.randrange(0, 10000):04d}'
    return rng.choice(['一', '二十', '三百', '四千', '五万', '六億', '七兆', '百二十三', '千二百', '〇', '二〇二六', '十一',
                       '零'])

  return [''.join(rng.choice(PRE) + num() + rng.choice(UNITS) + rng.choice(CTX) for _ in range(rng.randrange(1, 4)))
          for _ in range(n)]


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument('--wheel', required=True, type=pathlib.Path, help='nemo_toolkit-3.0.0 wheel')
  ap.add_argument('--dict-src', required=True, type=pathlib.Path,
                  help="OpenJTalk's mecab-naist-jdic sources (naist-jdic.csv, unidic-csj.csv)")
  ap.add_argument('--out', default=str(HERE / 'tokenizer_ja.json'))
  a = ap.parse_args()
  logging.disable(logging.CRITICAL)  # NeMo logs every symbol it replaces
  import pyopenjtalk
  words = []
  for name in ['naist-jdic.csv', 'unidic-csj.csv']:
    with open(a.dict_src / name, encoding='utf-8') as f:
      for i, line in enumerate(f):
        if i % 7 == 0:
          words.append(line.split(',', 1)[0])
  sentences = (HERE / 'tokenizer_ja_sentences.txt').read_text(encoding='utf-8').split('\n')
  if sentences[-1] == '':
    sentences.pop()
  with tempfile.TemporaryDirectory() as tmp:
    make_tokenizer_langs.write_tree(a.wheel, pathlib.Path(tmp), FILES, STUBS)
    sys.path.insert(0, tmp)
    from nemo.collections.tts.g2p.models.ja_jp_ipa import JapaneseKatakanaAccentG2p
    from nemo.collections.common.tokenizers.text_to_speech.tts_tokenizers import JapanesePhonemeTokenizer
    g2p = JapaneseKatakanaAccentG2p(ascii_letter_prefix='', ascii_letter_case='upper')
    tok = JapanesePhonemeTokenizer(g2p, punct=True, apostrophe=False, pad_with_space=True)
    assert len(tok.tokens) == 175, len(tok.tokens)
    sys.path.insert(0, str(HERE))
    thresholds = make_tokenizer_langs.build_tree(a.wheel, pathlib.Path(tmp) / 'split')['LanguageThresholds']()

    def run(text):
      t = re.sub(r'\s+', '', text)  # magpietts do_tts, language ja
      return dict(text=text, g2p=g2p(tok.text_preprocessing_func(t)), ids=tok.encode(t),
                  words=thresholds.get_word_count(text, 'ja'))

    long = ['。'.join(sentences[i:i + 12]) for i in range(0, len(sentences), 12)]
    long += [' '.join(sentences[:60]), '\n'.join(sentences[60:])]
    out = dict(description=__doc__, offset=458, size=len(tok.tokens), tokens=list(tok.tokens),
               versions=dict(pyopenjtalk=pyopenjtalk.__version__, nemo_toolkit='3.0.0',
                             dictionary='open-jtalk-mecab-naist-jdic 1.11-3'),
               sentences=[run(t) for t in sentences + long],
               random=[run(t) for t in random_texts(400, 20261207, words)],
               digits=[run(t) for t in digit_texts(150, 7)])
    pathlib.Path(a.out).write_text(make_tokenizer_langs.rows_per_line(out, only_lists_of_rows=True), encoding='utf-8')
    print('wrote', a.out, len(out['sentences']), 'sentences,', len(out['random']), 'random,',
          len(out['digits']), 'digit texts')


if __name__ == '__main__':
  main()
