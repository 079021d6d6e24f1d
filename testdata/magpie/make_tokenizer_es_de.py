#!/usr/bin/env python3
"""Writes testdata/magpie/tokenizer_es_de.json: upstream NeMo 3.0.0's Spanish and German front
ends (IpaG2p + IPATokenizer, Magpie v2602's `spanish_phoneme` / `german_phoneme` configuration)
on hand-picked edge cases and seeded random texts, for crates/rill-text/tests/oracle_es_de.rs.

    pip download nemo_toolkit==3.0.0 --no-deps -d /tmp/nemo && unzip -q /tmp/nemo/*.whl -d /tmp/nemo/w
    python3 testdata/magpie/make_tokenizer_es_de.py --nemo /tmp/nemo/w \\
        --es-dict es_ES_nv230301.dict --de-dict de_nv221025.dict --de-heteronyms de_nv230119.heteronym

The reference is NeMo's own code from the nemo_toolkit==3.0.0 wheel, unmodified: IpaG2p
(i18n_ipa.py, base.py, g2p/utils.py) and IPATokenizer (tts_tokenizers.py, tokenizer_utils.py,
ipa_lexicon.py, tokenizer_spec.py). Their heavy imports (`nemo.utils`, `transformers`,
`tokenizers`, `omegaconf`, `packaging.version`) are stubbed, so torch is not needed.

Configuration (v2602, NeMo-Speech.cpp `load_tokenizer_profile`): IpaG2p(phoneme_probability=0.8,
ignore_ambiguous_words=False, use_chars=True, use_stresses=True), then phoneme_probability = 1.0
(rill's deterministic behaviour; NeMo's runner only does this for English); IPATokenizer(punct=True,
apostrophe=True, pad_with_space=True). es-ES: grapheme_case upper, prefix '', no heteronyms.
de-DE: grapheme_case mixed, prefix '#', heteronyms de_nv230119.heteronym.

German: the checkpoint's de_nv230119.dict is not available here, so German runs on NeMo's previous
dictionary de_nv221025.dict (same format). NeMo derives a 149-symbol table from it (v2602's has
150); the ids recorded are those of NeMo's own table for that dictionary (recorded as
`tokens`), and v2602's 150-symbol table (NVIDIA NeMo-Speech.cpp `exact_ipa_tokens`, transcribed
below) is recorded next to it.
"""
import argparse
import hashlib
import json
import logging
import pathlib
import random
import sys
import tempfile
import unicodedata

HERE = pathlib.Path(__file__).resolve().parent

FILES = [
    'nemo/collections/common/tokenizers/text_to_speech/ipa_lexicon.py',
    'nemo/collections/common/tokenizers/text_to_speech/tokenizer_utils.py',
    'nemo/collections/common/tokenizers/text_to_speech/tts_tokenizers.py',
    'nemo/collections/common/tokenizers/tokenizer_spec.py',
    'nemo/collections/tts/g2p/models/base.py',
    'nemo/collections/tts/g2p/models/i18n_ipa.py',
    'nemo/collections/tts/g2p/utils.py',
]

STUBS = {
    'nemo/utils/__init__.py': 'import logging as _logging\nlogging = _logging.getLogger("nemo")\n',
    'nemo/utils/decorators.py': 'def experimental(obj):\n    return obj\n',
    'transformers/__init__.py': 'class PreTrainedTokenizerBase:\n    pass\n',
    'tokenizers/__init__.py': 'class Tokenizer:\n    pass\n',
    'omegaconf/__init__.py': 'def open_dict(x):\n    raise NotImplementedError\n',
    'packaging/__init__.py': '',
    'packaging/version.py': 'class InvalidVersion(Exception):\n    pass\n\nclass Version:\n'
                            '    def __init__(self, v):\n        raise NotImplementedError\n',
}

# NVIDIA NeMo-Speech.cpp, src/tts/tokenizer/tokenizer_impl.cpp, `exact_ipa_tokens`: the v2602
# tables (the checkpoint's own `spanish_phoneme` and `german_phoneme`).
V2602_ES = ['!', '"', "'", '(', ')', ',', '-', '.', '/', ':', ';', '?'] + \
    [chr(c) for c in range(ord('A'), ord('Z') + 1)] + \
    ['[', ']', 'a', 'b', 'd', 'e', 'f', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o', 'p', 'r', 's', 't',
     'u', 'w', 'x', '{', '}', '¡', '«', '»', '¿', 'Á', 'Ç', 'É', 'Í', 'Î', 'Ñ', 'Ó', 'Ö', 'Ú', 'Ü',
     'Ý', 'ð', 'ŋ', 'ɛ', 'ɟ', 'ɡ', 'ɣ', 'ɪ', 'ɲ', 'ɾ', 'ʃ', 'ʊ', 'ʎ', 'ʒ', 'ʝ', 'ˈ', 'ˌ', 'ː',
     '\u032f', '\u0361', 'β', 'θ', '‹', '›', ' ', '<pad>', '<oov>']
V2602_DE = ['!', '"'] + ['#' + chr(c) for c in range(ord('A'), ord('Z') + 1)] + \
    ['#' + chr(c) for c in range(ord('a'), ord('z') + 1)] + \
    ['#' + c for c in 'ÄÅÖÜßàáäåçèéêëíóöøü'] + \
    ["'", '(', ')', ',', '-', '.', '/', '1', ':', ';', '?', '[', ']', 'a', 'b', 'd', 'e', 'f', 'h',
     'i', 'j', 'k', 'l', 'm', 'n', 'o', 'p', 'r', 's', 't', 'u', 'v', 'w', 'x', 'y', 'z', '{', '}',
     '«', '»', 'ç', 'ð', 'ø', 'ŋ', 'œ', 'ɐ', 'ɑ', 'ɒ', 'ɔ', 'ə', 'ɛ', 'ɜ', 'ɡ', 'ɪ', 'ɹ', 'ɾ', 'ʃ',
     'ʊ', 'ʌ', 'ʒ', 'ˈ', 'ˌ', 'ː', '\u0303', 'θ', '‒', '–', '—', '‘', '‚', '“', '„', '‹', '›', ' ',
     '<pad>', '<oov>']

COMMON = [
    '', '   ', '  doble  espacio  ', '\t tab \n newline', '|ab c| |a b| || |<pad>| |<oov>| |x',
    'x|y|z |', '123 4.5 6-7 -8 9- 3,14 1/2', 'a1b 2c d3', '\u0663\u0664 \u096a', 'x\u00b2 \u00bd',
    '\u2019quote\u2019 \u2018left\u2019 \u201cdouble\u201d \u201edown\u201c \u201aone\u2018',
    '«guillemets» ‹single› ¿qué? ¡sí! — – ‒ … ·', '(paren) [bracket] {brace} / : ; " ! ? , .',
    'e\u0301 n\u0303 u\u0308 o\u0308 a\u030a A\u030a \u212b \u212a', 'ﬁ ﬂ ſ ß ẞ ǅ ǆ Ǆ',
    'Hangul \ud55c\uad6d\uc5b4 Devanagari \u0939\u093f\u0928\u094d\u0926\u0940 emoji \U0001F600',
    '\u03b1\u03b2\u03b3 \u043f\u0440\u0438\u0432\u0435\u0442 \u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627',
    'rock-and-roll x-ray a--b --- -x- x-\'- \'tis \'n\'', 'ÀÖØöøÿ Ā ā Ő ő Ł ł', '\x00\x1c\x0b\u3000\u00a0',
    '_ = + * & ^ % $ # @ ~ `', 'MiXeD CaSe WORDS lower UPPER Title', 'Ü-Bahn Öl-Preis ÄRGER ärger',
]

ES = COMMON + [
    '¿Dónde está la biblioteca?', 'Hola, ¿cómo estás? Muy bien, gracias.',
    'El niño comió paella en Valencia.', 'La cigüeña voló sobre el pingüino.',
    'Mañana iremos al mercado a las 10:30.', 'El año 2024 fue muy bueno.',
    'Señor García, ¡bienvenido a España!', 'ÉL DIJO QUE NO', 'él dijo que no',
    'Me llamo José y vivo en Málaga.', 'La UNESCO y la ONU firmaron el acuerdo.',
    '«Cien años de soledad» es una novela de García Márquez.',
    'Hay que comprar pan, leche, huevos y azúcar.', 'Él está aquí; ella, allá.',
    'Dónde esta él?', 'pingüino PINGÜINO Pingüino', 'Ñandú ñandú ÑANDÚ',
    'ex-presidente anti-inflacionario bien-estar', "d'Artagnan O'Higgins l'Hospitalet",
    'Los días 1.º y 2.º de mayo.', 'Cuesta 5 € o $5 o 5%.', 'co\u0301mo esta\u0301s nin\u0303o',
    'COMO ESTAS', 'ÁRBOL árbol Árbol', 'quijote Quijote QUIJOTE', 'Whatsapp Facebook Google',
    'Barcelona, Madrid, Sevilla y Bilbao.', 'hola... adiós!!! ¿¿qué??',
    'el pájaro, la pájara y los pájaros', 'Aquí hay zorros, ciervos y jabalíes.',
]

DE = COMMON + [
    'Guten Morgen, wie geht es Ihnen?', 'Ich habe im Jahr 2024 viel gelernt.',
    'im Jahr 2024 war es kalt', 'Die Straße ist sehr lang.', 'STRASSE Straße strasse',
    'Der Bäcker backt frische Brötchen.', 'Über den Wolken muss die Freiheit wohl grenzenlos sein.',
    '„Hallo“, sagte er. ‚Tschüss‘, sagte sie.', 'Das ist – wie man sagt – ganz einfach.',
    'Abend Abendbrot Abendessen Abbruch', "'n 'ne 'nem 'türlich", 'ABEND abend Abend aBEND',
    'Öl Äpfel Übel öl äpfel übel ÖL ÄPFEL ÜBEL', 'Müller-Lüdenscheidt Max-Planck-Institut',
    'Er wohnt in der Goethestraße 12.', 'Sie kauft 3 Äpfel und 2 Birnen.',
    'Der Zug fährt um 8:15 Uhr ab.', 'Das kostet 3,50 €.', 'z.B. usw. d.h. u.a. Nr. Dr.',
    'Fußball FUSSBALL fussball', 'Mädchen MÄDCHEN mädchen', 'Weißwurst weisswurst',
    'Die Bundesrepublik Deutschland wurde 1949 gegründet.', 'ich, du, er, sie, es; wir, ihr, sie.',
    'Hauptbahnhof Donaudampfschiffahrtsgesellschaftskapitän', 'Ärzte Öfen Übungen',
    'Mu\u0308ller Ba\u0308cker Sto\u0308rung', 'Das ist 100% richtig!', 'ÅNGSTRÖM Ångström',
    'Café Crème Noël naïve façade', 'Quatsch mit Soße', 'so-genannt Haus-Tür',
]


def dictionary_words(path, n, seed):
  rng = random.Random(seed)
  words = []
  with open(path, encoding='utf-8') as f:
    for line in f:
      if line[:1].isalpha() or line[:1] == "'":
        words.append(line.split()[0].split('(')[0])
  return rng.sample(words, n)


def random_texts(words, heteronyms, n, seed):
  """Deterministic word salad: dictionary words in random case, heteronyms, invented words,
  hyphen and apostrophe joins, punctuation, digits, `|...|` spans, NFD text, odd code points."""
  rng = random.Random(seed)
  invented = ['blorp', 'zqx', 'Frobnicate', 'xyzzy', 'rill', 'Magpie', 'NeMo', 'qwrtp']
  extras = [' ', ' ', ' ', '  ', ', ', '. ', '? ', '! ', '; ', ': ', '-', '--', "'", '"', '(', ')',
            '[', ']', '{', '}', '/', '|', '||', '| a b |', '\t', '\n', '3', '42', '3.14', '2024',
            '$5', '€', '\u2014', '\u2013', '\u2019', '\u201c', '\u201e', '\u201a', '\u2018', '«',
            '»', '¿', '¡', '\u00e9', '\u00df', '\u017f', '\u00e6', '\u0301', '\u0308', '\u0259',
            '\u02c8', '\uac00', '\u0939', '\u0663', '\U0001F600', '\x00', '_', '=', '#', '#a']

  def piece():
    r = rng.random()
    if r < 0.45:
      w = rng.choice(words)
    elif r < 0.52 and heteronyms:
      w = rng.choice(heteronyms)
    elif r < 0.56:
      w = rng.choice(invented)
    elif r < 0.6:
      w = chr(rng.choice([rng.randrange(0x20, 0x250), rng.randrange(0x250, 0x3100),
                          rng.randrange(0xAC00, 0xD7A4), rng.randrange(0x1F300, 0x1F700)]))
    else:
      return rng.choice(extras)
    case = rng.random()
    w = w.lower() if case < 0.45 else (w.capitalize() if case < 0.75 else
                                        (w.upper() if case < 0.9 else w))
    if rng.random() < 0.05:
      w = unicodedata.normalize('NFD', w)
    suffix = rng.random()
    if suffix < 0.06:
      w += '-' + rng.choice(words)
    elif suffix < 0.09:
      w += "'" + rng.choice(['s', 'n', 'l'])
    return w

  return [''.join(piece() for _ in range(rng.randrange(1, 14))) for _ in range(n)]


def build_tree(nemo: pathlib.Path, root: pathlib.Path):
  for rel in FILES:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text((nemo / rel).read_text(encoding='utf-8'), encoding='utf-8')
  for rel, text in STUBS.items():
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding='utf-8')
  for d in [p for p in root.rglob('*') if p.is_dir()]:
    if not (d / '__init__.py').exists():
      (d / '__init__.py').write_text('')


def sha256(path):
  return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument('--nemo', required=True, type=pathlib.Path,
                  help='the extracted nemo_toolkit==3.0.0 wheel (folder holding nemo/)')
  ap.add_argument('--es-dict', required=True, type=pathlib.Path)
  ap.add_argument('--de-dict', required=True, type=pathlib.Path)
  ap.add_argument('--de-heteronyms', required=True, type=pathlib.Path)
  ap.add_argument('--random', type=int, default=300, help='random texts per language')
  ap.add_argument('--out', default=str(HERE / 'tokenizer_es_de.json'))
  a = ap.parse_args()
  meta = (a.nemo.parent.glob('*.dist-info/METADATA'), a.nemo.glob('*.dist-info/METADATA'))
  versions = [l for m in meta for p in m for l in p.read_text().splitlines() if l.startswith('Version:')]
  assert versions == ['Version: 3.0.0'], f'expected the nemo_toolkit 3.0.0 wheel, found {versions}'
  logging.disable(logging.WARNING)  # NeMo warns about every dropped symbol
  with tempfile.TemporaryDirectory() as tmp:
    build_tree(a.nemo, pathlib.Path(tmp))
    sys.path.insert(0, tmp)
    from nemo.collections.common.tokenizers.text_to_speech.tts_tokenizers import IPATokenizer
    from nemo.collections.tts.g2p.models.i18n_ipa import IpaG2p

    def front_end(locale, dict_path, heteronyms, case, prefix):
      g2p = IpaG2p(phoneme_dict=str(dict_path), locale=locale,
                   heteronyms=str(heteronyms) if heteronyms else None, phoneme_probability=0.8,
                   ignore_ambiguous_words=False, use_chars=True, use_stresses=True,
                   grapheme_case=case, grapheme_prefix=prefix)
      tok = IPATokenizer(g2p=g2p, locale=locale, punct=True, apostrophe=True, pad_with_space=True)
      g2p.phoneme_probability = 1.0
      return g2p, tok

    def run(g2p, tok, text):
      pre = tok.text_preprocessing_func(text)
      row = dict(text=text, preprocessed=pre, g2p=g2p(pre))
      try:
        row['ids'] = tok.encode(text)
      except Exception as e:  # e.g. IndexError when only spaces are left; recorded
        row['nemo_error'] = type(e).__name__
      return row

    out = dict(description=__doc__, nemo_toolkit='3.0.0', nemo_files=FILES)
    g2p, tok = front_end('es-ES', a.es_dict, None, 'upper', '')
    assert list(tok.tokens) == V2602_ES, 'the es table is not v2602\'s'
    es_words = dictionary_words(a.es_dict, 400, 11)
    out['es'] = dict(
        dict_file=a.es_dict.name, dict_sha256=sha256(a.es_dict), tokens=list(tok.tokens),
        sentences=[run(g2p, tok, s) for s in ES],
        random=[run(g2p, tok, s) for s in random_texts(es_words, [], a.random, 2026)])
    g2p, tok = front_end('de-DE', a.de_dict, a.de_heteronyms, 'mixed', '#')
    heteronyms = a.de_heteronyms.read_text(encoding='utf-8').split()
    derived = set(tok.tokens)
    # The difference the data README states, checked: nv221025 lacks #Å, #å and 1, and has ʏ
    # and U+0329, which v2602's table lacks.
    assert set(V2602_DE) - derived == {'#Å', '#å', '1'}, set(V2602_DE) - derived
    assert derived - set(V2602_DE) == {'ʏ', '\u0329'}, derived - set(V2602_DE)
    de_words = dictionary_words(a.de_dict, 400, 12)
    out['de'] = dict(
        dict_file=a.de_dict.name, dict_sha256=sha256(a.de_dict), heteronyms_file=a.de_heteronyms.name,
        heteronyms_sha256=sha256(a.de_heteronyms), tokens=list(tok.tokens), v2602_tokens=V2602_DE,
        sentences=[run(g2p, tok, s) for s in DE + heteronyms[::150]],
        random=[run(g2p, tok, s) for s in random_texts(de_words, heteronyms, a.random, 2027)])
  with open(a.out, 'w', encoding='utf-8') as f:
    json.dump(out, f, ensure_ascii=False, indent=0)
  for lang in ('es', 'de'):
    d = out[lang]
    print(lang, len(d['tokens']), 'tokens,', len(d['sentences']), 'sentences,', len(d['random']),
          'random texts')
  print('wrote', a.out)


if __name__ == '__main__':
  main()
