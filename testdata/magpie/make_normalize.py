"""Records NeMo's text normaliser for one language on the corpus normalize_{lang}.txt.

Writes normalize_{lang}.json (--lang en, es, de, fr, it, vi, hi, zh or ja; English by default): every corpus sentence with NeMo's output, plus the package
versions. This is the call NeMo 3.0.0's MagpieTTSModel.do_tts(apply_TN=True) makes
(nemo/collections/tts/models/magpietts.py, _get_normalized_text):

    Normalizer(input_case='cased', lang=language).normalize(transcript, verbose=False)

(punct_pre_process and punct_post_process keep their defaults, False.)

Run from the repository root, in a virtual environment with the reference:

    python3.11 -m venv tn-venv && tn-venv/bin/pip install nemo_text_processing==1.2.0 pynini==2.1.6.post1
    tn-venv/bin/python testdata/magpie/make_normalize.py --lang es

(--cache-dir DIR keeps the compiled grammars between runs; it does not change the output.
Give zh and ja different folders: NeMo names the Japanese grammar's cache file zh_tn_*, so
one folder would hand the Mandarin grammar to Japanese or the other way round.)

Recorded with Python 3.11, nemo_text_processing 1.2.0, pynini 2.1.6.post1 (building the
English grammars takes a few minutes on first use, the others about a minute).
"""

import argparse
import json
import os
import sys
from importlib.metadata import version

from nemo_text_processing.text_normalization.normalize import Normalizer

HERE = os.path.dirname(os.path.abspath(__file__))


NAMES = {
    "en": "English",
    "es": "Spanish",
    "de": "German",
    "fr": "French",
    "it": "Italian",
    "vi": "Vietnamese",
    "hi": "Hindi",
    "zh": "Mandarin",
    "ja": "Japanese",
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lang", default="en", choices=sorted(NAMES))
    parser.add_argument("--cache-dir", default=None)
    args = parser.parse_args()
    lang = args.lang
    with open(os.path.join(HERE, f"normalize_{lang}.txt"), encoding="utf-8") as f:
        sentences = [line.rstrip("\n") for line in f if line.strip() and not line.startswith("#")]
    normalizer = Normalizer(input_case="cased", lang=lang, cache_dir=args.cache_dir)
    cases = []
    for text in sentences:
        cases.append({"input": text, "expected": normalizer.normalize(text, verbose=False)})
    out = {
        "about": f"NeMo's {NAMES[lang]} text normaliser (Normalizer(input_case='cased', "
        f"lang='{lang}').normalize(text, verbose=False), as MagpieTTSModel.do_tts(apply_TN=True) "
        f"calls it) on normalize_{lang}.txt; written by make_normalize.py",
        "python": sys.version.split()[0],
        "nemo_text_processing": version("nemo_text_processing"),
        "pynini": version("pynini"),
        "cases": cases,
    }
    with open(os.path.join(HERE, f"normalize_{lang}.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{len(cases)} sentences recorded")


if __name__ == "__main__":
    main()
