#!/usr/bin/env python3
"""Writes testdata/magpie/tokenizer_{fr,it,vi,hi}.json and tokenizer_langs_table.json: NeMo 3.0.0's
own front ends for the ByT5 languages (fr, it, vi) and Hindi on everyday text, punctuation,
capitals, digits, accents, NFD input, mixed scripts, long texts, special-token literals and 300
seeded random texts per language; plus the v2602 aggregated table (offsets, sizes, BOS/EOS), the
Hindi token table, and NeMo's sentence splitting and split thresholds. Read by
crates/rill-text/tests/languages.rs.

    python3 -m venv venv && venv/bin/pip install transformers==5.25.0   # no torch needed
    pip download nemo_toolkit==3.0.0 --no-deps -d .
    venv/bin/python testdata/magpie/make_tokenizer_langs.py --wheel nemo_toolkit-3.0.0-py3-none-any.whl

The reference is upstream code, unmodified, read from the nemo_toolkit 3.0.0 wheel:
* `tts_tokenizers.py` (HindiCharsTokenizer, AggregatedTTSTokenizer, the versioned-default
  backfill), `ipa_lexicon.py`, `tokenizer_utils.py`, `tokenizer_spec.py`; `nemo.utils.logging` and
  `omegaconf.open_dict` are stubbed (the only heavy imports), transformers/tokenizers/packaging are
  the real packages.
* `tts_dataset_utils.py`'s `split_by_sentence`, `_get_sentence_separators_for_language` and
  `LanguageThresholds` with their constants, taken out of the module by `ast` (the module itself
  imports torch, librosa, ...) and run as they are.
* HF `transformers.ByT5Tokenizer()` (5.25.0), what NeMo's `AutoTokenizer.from_pretrained(
  "google/byt5-small")` builds (the hub config could not be fetched here: spec
  magpie_languages.md §5).
The Hindi config is v2602's (apostrophe true, pad_with_space true, no charset/punct version: the
backfill from nemo_version 2.6.0rc0 gives 1 and 1). The five phoneme tokenizers the aggregate also
holds (en, es, de, zh, ja) are stand-ins of their released sizes (96, 103, 150, 109, 175): only
their sizes matter to the offsets. Ids recorded are what `AggregatedTTSTokenizer.encode(text,
name)` returns, then EOS (`len(tokens) + 1`), the model input of one chunk.
"""
import argparse
import ast
import json
import logging
import pathlib
import random
import sys
import tempfile
import unicodedata
import zipfile

HERE = pathlib.Path(__file__).resolve().parent

FILES = [
    'nemo/collections/common/tokenizers/text_to_speech/ipa_lexicon.py',
    'nemo/collections/common/tokenizers/text_to_speech/tokenizer_utils.py',
    'nemo/collections/common/tokenizers/text_to_speech/tts_tokenizers.py',
    'nemo/collections/common/tokenizers/tokenizer_spec.py',
]
DATASET_UTILS = 'nemo/collections/tts/parts/utils/tts_dataset_utils.py'
SPLIT_NAMES = {'_TITLE_ABBREVIATIONS', '_DEFAULT_SENTENCE_ENDINGS', '_SENTENCE_ENDINGS',
               'split_by_sentence', '_get_sentence_separators_for_language', 'LanguageThresholds'}

STUBS = {
    'nemo/utils/__init__.py': 'import logging as _logging\nlogging = _logging.getLogger("nemo")\n',
    'omegaconf/__init__.py': ('import contextlib\n@contextlib.contextmanager\n'
                              'def open_dict(cfg):\n    yield cfg\n'),
}

V2602 = [('english_phoneme', 96), ('spanish_phoneme', 103), ('german_phoneme', 150),
         ('mandarin_phoneme', 109), ('japanese_phoneme', 175), ('french_chartokenizer', None),
         ('hindi_chartokenizer', None), ('italian_phoneme', None), ('vietnamese_phoneme', None),
         ('text_ce_tokenizer', None)]
LANG_TOKENIZER = {'fr': 'french_chartokenizer', 'it': 'italian_phoneme',
                  'vi': 'vietnamese_phoneme', 'hi': 'hindi_chartokenizer'}

COMMON = [
    '', ' ', '   ', '\t\n', 'a', 'A', '1', '.', '—', '😀', '<pad>', '</s>', '<unk>', '<extra_id_0>',
    'x <pad> y', 'a </s>', 'a</s> ', '</s></s>', ' <unk> b', 'a <extra_id_124> b', '<extra_id_125>',
    '<extra_id_07>', '<extra_id_-1>', '<<pad>>', '<pad\n>', 'a\u3000<pad>\u2028b',
    'Hello world, I read the rill docs.', "don't ’tis “quoted” «guillemets» ‹x›",
    '123 4.5 6,7 1/2 3-4 50% $5 €10 #1 @x &y *z _ = + ~ ` ^ | \\ < >',
    'tab\there\nnew line\r\x0bvt\x1cfs\x00nul\x7f',
    'Ω ß ẞ ﬁ \u212a \u212b ı İ ǅ',
    'e\u0301 combining; n\u0303o; a\u20dd; \u0915\u093c; \u0928\u093c',
    '中文 日本語 한국어 Русский العربية עברית ไทย',
    'MIXED case WoRdS and ALLCAPS',
    'Dr. Smith is here. Good morning! How are you? Fine... ok',
]

SENTENCES = {
    'fr': [
        "Bonjour, comment allez-vous aujourd'hui ?",
        "L'été dernier, nous sommes allés à la plage près de Nice.",
        'Où se trouve la bibliothèque ? Je voudrais emprunter « Les Misérables ».',
        "Il fait très beau ; c'est parfait pour une promenade.",
        'Noël, Pâques, la Fête nationale : que de fêtes !',
        'Ça coûte 12,50 € — trop cher, non ?',
        'Œuvre, cœur, sœur, bœuf, naïve, Noël, maïs, aiguë.',
        'LES MAJUSCULES ÉTAIENT ÀCCENTUÉES.',
        "Aujourd'hui, le 14 juillet 2026, à 9 h 30.",
        'Il a dit : « Je reviendrai demain. » Puis il est parti.',
    ],
    'it': [
        'Buongiorno, come stai oggi?',
        "Perché l'Italia è così bella? Perché sì!",
        'Città, università, virtù, caffè, però, più.',
        "Un po' di pane e un bicchiere d'acqua, per favore.",
        'La Divina Commedia è stata scritta da Dante Alighieri nel XIV secolo.',
        'Il treno parte alle 15:45 dal binario 3.',
        'È VERO: ABBIAMO VINTO!',
        "Qual è il tuo nome? Mi chiamo Lucia, e tu?",
        'Giovedì 3 dicembre, 18 °C e sole.',
        'Ho mangiato gli gnocchi, la pizza e il tiramisù.',
    ],
    'vi': [
        'Xin chào, bạn có khỏe không?',
        'Tôi đang học tiếng Việt ở Hà Nội.',
        'Hôm nay trời đẹp quá; chúng ta đi dạo nhé!',
        'Phở bò, bánh mì, cà phê sữa đá: món nào cũng ngon.',
        'Thành phố Hồ Chí Minh có hơn 9 triệu dân.',
        'Cảm ơn bạn rất nhiều! Hẹn gặp lại.',
        'Ngữ pháp tiếng Việt không có chia động từ.',
        'ĐÂY LÀ CHỮ IN HOA CÓ DẤU.',
        'Năm 2026, tháng 12, ngày 6.',
        'Người ta nói: "Đi một ngày đàng, học một sàng khôn."',
    ],
    'hi': [
        'नमस्ते, आप कैसे हैं?',
        'मैं आज बाज़ार जा रहा हूँ।',
        'भारत की राजधानी नई दिल्ली है।',
        'क्या आप मेरी मदद कर सकते हैं? धन्यवाद!',
        'हिंदी भाषा देवनागरी लिपि में लिखी जाती है॥',
        'मौसम आज बहुत अच्छा है; चलो घूमने चलें।',
        'अंगड़ाई, ज़रूर, फ़िल्म, क़लम, ग़ज़ल, ड़, ढ़।',
        'Thank you, धन्यवाद! OK ok 42 ४२।',
        "राम's book और सीता’s pen",
        'ऋषि, ॠ, ऍ, ऑ, ळ, ऩ, ऱ, ॊ, ॢ, ॣ, ॆ, ः, ँ।',
        'मैं ठीक हूँ। आप कैसे हैं? सब ठीक॥ अच्छा!',
    ],
}

# Characters the seeded random texts are drawn from, per language.
POOLS = {
    'fr': "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZàâäæçéèêëîïôœùûüÿÀÂÇÉÈÊËÎÏÔŒÙÛÜŸ'’«»",
    'it': "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZàèéìíîòóùúÀÈÉÌÒÙ'’",
    'vi': ('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZđĐăâêôơưĂÂÊÔƠƯ'
           'áàảãạắằẳẵặấầẩẫậéèẻẽẹếềểễệíìỉĩịóòỏõọốồổỗộớờởỡợúùủũụứừửữựýỳỷỹỵ'),
    'hi': ''.join(chr(c) for c in range(0x0900, 0x0980)) + 'abcdefghijklmnopqrstuvwxyzABCXYZ',
}
EXTRAS = [' ', ' ', ' ', '  ', ', ', '. ', '? ', '! ', '; ', ': ', '-', '"', '(', ')', '[', ']',
          '{', '}', '/', "'", '’', '\t', '\n', '3', '42', '3.14', '…', '—', '–', '«', '»',
          '\u0301', '\u0300', '\u0303', '\u0323', '\u093c', '\u094d', '।', '॥', '😀', '\x00',
          '<pad>', '</s>', '<unk>', '<extra_id_3>', ' </s> ', '\u00a0', '\u3000']


def random_texts(lang, n, seed):
  rng = random.Random(seed)
  pool = POOLS[lang]

  def piece():
    r = rng.random()
    if r < 0.6:
      return ''.join(rng.choice(pool) for _ in range(rng.randrange(1, 9)))
    if r < 0.7:
      # any code point assigned in Python 3.11's Unicode (14.0)
      while True:
        c = chr(rng.choice([rng.randrange(0x20, 0x3000), rng.randrange(0xAC00, 0xD7A4),
                            rng.randrange(0x1F300, 0x1F700)]))
        if unicodedata.category(c) not in ('Cn', 'Cs'):
          return c
    return rng.choice(EXTRAS)

  texts = []
  for _ in range(n):
    t = ''.join(piece() for _ in range(rng.randrange(1, 24)))
    form = rng.random()
    if form < 0.15:
      t = unicodedata.normalize('NFD', t)
    elif form < 0.2:
      t = unicodedata.normalize('NFKC', t)
    texts.append(t)
  return texts


def long_texts(lang):
  base = SENTENCES[lang]
  return [' '.join(base * 4), ''.join(base * 3), ' '.join(base[::-1] * 8)]


def rows_per_line(obj, only_lists_of_rows=False):
  """JSON with one text (row) per line: small and diffable (with only_lists_of_rows, other
  lists stay on one line)."""
  dump = lambda v: json.dumps(v, ensure_ascii=False, separators=(',', ':'))
  parts = []
  for k, v in obj.items():
    if isinstance(v, list) and (not only_lists_of_rows or (v and isinstance(v[0], dict))):
      parts.append(dump(k) + ':[\n' + ',\n'.join(dump(r) for r in v) + '\n]')
    else:
      parts.append(dump(k) + ':' + dump(v))
  return '{\n' + ',\n'.join(parts) + '\n}\n'


def write_tree(wheel, root, files, stubs):
  """The wheel's `files` and the `stubs` under `root`, every folder a package (the
  make_tokenizer_*.py scripts import NeMo's modules from there, without torch)."""
  with zipfile.ZipFile(wheel) as z:
    for rel in files:
      path = root / rel
      path.parent.mkdir(parents=True, exist_ok=True)
      path.write_bytes(z.read(rel))
  for rel, text in stubs.items():
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding='utf-8')
  for d in [p for p in root.rglob('*') if p.is_dir()]:
    if not (d / '__init__.py').exists():
      (d / '__init__.py').write_text('')


def build_tree(wheel, root):
  write_tree(wheel, root, FILES, STUBS)
  with zipfile.ZipFile(wheel) as z:
    src = z.read(DATASET_UTILS).decode('utf-8')
  # The sentence splitter and thresholds, out of a module that imports torch.
  tree = ast.parse(src)
  keep = []
  for node in tree.body:
    names = set()
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
      names = {node.name}
    elif isinstance(node, ast.Assign):
      names = {t.id for t in node.targets if isinstance(t, ast.Name)}
    if names & SPLIT_NAMES:
      keep.append(node)
  assert {n.name if hasattr(n, 'name') else n.targets[0].id for n in keep} == SPLIT_NAMES, keep
  module = ast.Module(body=keep, type_ignores=[])
  scope = {}
  exec('from dataclasses import dataclass, field\nfrom typing import Dict, List\n', scope)
  exec(compile(module, DATASET_UTILS, 'exec'), scope)
  return scope


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument('--wheel', required=True, type=pathlib.Path, help='nemo_toolkit-3.0.0 wheel')
  ap.add_argument('--out', default=str(HERE), help='output folder')
  a = ap.parse_args()
  logging.disable(logging.WARNING)  # NeMo warns about every dropped character
  import warnings
  warnings.simplefilter('ignore')
  import transformers
  with tempfile.TemporaryDirectory() as tmp:
    split_scope = build_tree(a.wheel, pathlib.Path(tmp))
    sys.path.insert(0, tmp)
    from nemo.collections.common.tokenizers.text_to_speech import tts_tokenizers as tt
    from transformers import ByT5Tokenizer

    class StandIn(tt.BaseTokenizer):
      def __init__(self, n):
        super().__init__([f'<s{i}>' for i in range(n - 2)])

      def encode(self, text):
        raise AssertionError('stand-in')

    hi_cfg = {'_target_': 'nemo.collections.common.tokenizers.text_to_speech.tts_tokenizers.HindiCharsTokenizer',
              'apostrophe': True, 'pad_with_space': True}
    backfilled = tt.resolve_versioned_tokenizer_defaults(hi_cfg, '2.6.0rc0')
    assert backfilled == {'charset_version': 1, 'punct_version': 1}, backfilled
    hindi = tt.HindiCharsTokenizer(**{k: v for k, v in hi_cfg.items() if k != '_target_'})
    tokenizers = []
    for name, size in V2602:
      if size is not None:
        tokenizers.append(StandIn(size))
      elif name == 'hindi_chartokenizer':
        tokenizers.append(hindi)
      else:
        tokenizers.append(ByT5Tokenizer())
    agg = tt.AggregatedTTSTokenizer(tokenizers, [n for n, _ in V2602])
    bos, eos = len(agg.tokens), len(agg.tokens) + 1
    table = dict(
        description=__doc__, transformers=transformers.__version__,
        tokenizers=[dict(name=n, offset=agg.tokenizer_offsets[n], size=agg.num_tokens_per_tokenizer[n])
                    for n, _ in V2602],
        bos=bos, eos=eos, hindi_backfilled=backfilled, hindi_tokens=list(hindi.tokens),
        hindi_token2id={t: i for t, i in hindi._token2id.items()},
        byt5_vocab=ByT5Tokenizer().get_vocab(),
        thresholds=split_scope['LanguageThresholds']().thresholds,
        sentence_endings=split_scope['_SENTENCE_ENDINGS'],
    )
    (pathlib.Path(a.out) / 'tokenizer_langs_table.json').write_text(
        json.dumps(table, ensure_ascii=False, indent=1), encoding='utf-8')

    split = split_scope['split_by_sentence']
    thresholds = split_scope['LanguageThresholds']()
    for seed, lang in enumerate(['fr', 'it', 'vi', 'hi']):
      name = LANG_TOKENIZER[lang]

      def run(text):
        row = dict(text=text, ids=agg.encode(text, name) + [eos])
        row['split'] = thresholds.exceeds_threshold(text, lang)
        if row['split']:
          row['sentences'] = [dict(text=s, ids=agg.encode(s, name) + [eos])
                              for s in split(text, language=lang)]
        return row

      fixed = COMMON + SENTENCES[lang] + [unicodedata.normalize('NFD', s) for s in SENTENCES[lang]]
      fixed += long_texts(lang)
      out = dict(language=lang, tokenizer=name, offset=agg.tokenizer_offsets[name], eos=eos,
                 sentences=[run(t) for t in fixed],
                 random=[run(t) for t in random_texts(lang, 300, 7000 + seed)])
      path = pathlib.Path(a.out) / f'tokenizer_{lang}.json'
      path.write_text(rows_per_line(out), encoding='utf-8')
      print('wrote', path, len(out['sentences']), 'fixed +', len(out['random']), 'random texts')


if __name__ == '__main__':
  main()
