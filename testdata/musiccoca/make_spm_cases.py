"""Writes spm_cases.json: what sentencepiece 0.2.1 and Python's str.lower() give, for
rill-musiccoca's SentencePiece and lowercasing tests.

Usage: python make_spm_cases.py DIR   (DIR = this directory; the oracle's venv has
sentencepiece 0.2.1). Reads DIR/spm.model (the oracle's tiny unigram model); trains two
more small unigram models into DIR (spm_bytes.model: identity normaliser, byte fallback,
user-defined symbols, no dummy prefix, extra whitespace kept, whitespace as suffix;
spm_plain.model: identity normaliser, whitespace not escaped, no dummy prefix) so those
code paths are covered too; spm_rules.model: a small charsmap built from RULES below; spm_ties.model and
spm_tenths.model: that one with tied scores, and with tenths and user-defined pieces);
writes DIR/spm_cases.json.
"""
import io
import json
import os
import random
import sys

import sentencepiece as spm

WORDS = """jazz piano trio heavy metal guitar riff ambient electronic disco funk lofi hip hop
beat with rain string quartet baroque deep house bpm cinematic orchestral strings brass swells
cafe smooth saxophone synthwave 80s retro rock reggae dub bass drums techno trance dubstep
drum and bass acoustic folk country blues soul r&b gospel choir vocals female male upbeat sad
happy dark bright warm lush sparse minimal 120 90 70s 60s in c minor major slow fast tempo
punk grunge indie pop k-pop j-pop bossa nova samba latin afrobeat chill lo-fi vinyl crackle
808 synth pad arpeggio lead, melody. harmony / bassline kick snare hi-hat cymbal violin cello
flute clarinet trumpet trombone tuba harp organ rhodes wurlitzer marimba vibraphone sitar""".split()

PROMPTS = [
    "a jazz piano trio", "heavy metal guitar riff", "ambient electronic", "disco funk",
    "lofi hip hop beat with rain", "string quartet, baroque", "Deep House, 124 BPM",
    "cinematic orchestral strings with brass swells", "Café jazz — smooth saxophone!",
    "  synthwave   80s  retro  ", "reggae dub bass", "JAZZ", "Jazz Piano", "jAzZ pIaNo",
    "0123456789", "3", "5", "35", "333 555", "1999", "the 80s", "120 bpm", "90s hip-hop",
    "rock'n'roll", "r&b", "drum & bass", "what?!", "(live)", '"quoted"', "a;b:c", "a/b-c.d,e",
    "...", "---", "'", "é", "É", "café", "CAFÉ", "naïve", "Straße", "STRASSE", "ß", "ẞ",
    "音楽", "ジャズ", "재즈", "音楽 jazz", "🎹🎸", "jazz 🎷 sax", "👍🏽", "e\u0301", "E\u0301",
    "a\u0300\u0301\u0302", "\u05e9\u05dc\u05d5\u05dd", "مرحبا موسيقى", "\u202eevil\u202c",
    "ｊａｚｚ", "ＪＡＺＺ　ＰＩＡＮＯ", "①②③", "ﬁne ﬂute", "㎏ ㍻ ™", "½ ¼", "x²", "Ⅻ", "ℌ",
    "ﾊﾟﾝｸ", "\u3000jazz\u3000", "jazz\tpiano", "jazz\npiano", "jazz\r\npiano", "jazz\u00a0piano",
    "jazz\u2009piano", "jazz\u200bpiano", "jazz\ufeffpiano", "jazz  piano", "jazz     piano",
    " jazz", "jazz ", "   jazz   ", "\t\n jazz \t\n", "", " ", "   ", "\t", "\n", "\u00a0",
    "\u3000", "\x00", "a\x00b", "\x00jazz\x00", "\x01\x02\x7f", "\x1b[31mred", "\ufffd",
    "\ud7ff", "\ue000", "\U0010ffff", "\U0001d11e", "ΟΔΟΣ", "ΣΑΣ", "Σ", "ΑΣ.", "ΑΣ Α", "ΑΣ'Α",
    "İstanbul", "I\u0307", "ǅ", "ΐ", "ŉ", "K", "Å", "Ω", "Ⓐ", "Ａ", "𐐀", "ꭰ", "ᏸ", "ǈ",
    "▁", "▁jazz", "jazz▁", "▁▁", "<unk>", "</s>", "<pad>", "<s>", "<sep>", "<0x41>",
    "jazzpiano", "pianojazz", "jazzzzzz", "aaaaaaaaaa", "zzz", "q", "x y z",
    "hip hop hip hop hip hop", "lo-fi hip-hop", "k-pop", "synth-pop", "electro-swing",
]


def cases_for(sp, texts, lower=True):
    out = []
    for t in texts:
        row = {"text": t, "ids": sp.EncodeAsIds(t)}
        if lower:
            row["lower"] = t.lower()
            row["lower_ids"] = sp.EncodeAsIds(t.lower())
        out.append(row)
    return out


def random_texts(rng, n):
    pools = [
        [chr(c) for c in range(0x20, 0x7F)],
        list("abcdefghijklmnopqrstuvwxyz ,.-'/"),
        [chr(c) for c in range(0xA0, 0x250)],
        [chr(c) for c in range(0x3000, 0x3100)] + [chr(c) for c in range(0xFF00, 0xFFF0)],
    ]
    out = []
    for i in range(n):
        k = rng.randrange(6)
        length = rng.randrange(1, 40)
        if k < 4:
            s = "".join(rng.choice(pools[k]) for _ in range(length))
        elif k == 4:
            s = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 8)))
            s = "".join(c.upper() if rng.random() < 0.2 else c for c in s)
        else:
            # Any scalar value (no surrogates), including controls and unassigned ones.
            cs = []
            while len(cs) < length:
                c = rng.randrange(0x110000)
                if not 0xD800 <= c < 0xE000:
                    cs.append(chr(c))
            s = "".join(cs)
        out.append(s)
    return out


# A few normalisation rules (source code points -> target code points, hex), so a small
# model has a precompiled charsmap too: multi-character keys, keys sharing prefixes, a
# rule to nothing, rules to spaces, and to "▁".
RULES = [
    ("FF21", "61"), ("FF22", "62"), ("FF21 FF22", "78 79"), ("FF21 FF22 FF23", "7A"),
    ("41", "61"), ("42", "62"), ("4A", "6A"), ("5A", "7A"), ("FB01", "66 69"),
    ("3000", "20"), ("09", "20"), ("0A", "20 20"), ("200B", ""), ("E9", "65 301"),
    ("65 301", "E9"), ("2581", "20"), ("33", "20 33 20"), ("A0", "2581"),
]


def train(path, **kw):
    rng = random.Random(7)
    lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randrange(2, 9))) for _ in range(3000)]
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=buf, model_type="unigram",
        num_threads=1, character_coverage=1.0, pad_id=0, eos_id=1, unk_id=2, bos_id=-1, **kw)
    data = buf.getvalue()
    if "normalization_rule_tsv" in kw:
        # The trainer records the rules file's path; keep machine paths out of the model.
        from sentencepiece import sentencepiece_model_pb2 as pb
        m = pb.ModelProto()
        m.ParseFromString(data)
        m.normalizer_spec.ClearField("normalization_rule_tsv")
        data = m.SerializeToString()
    with open(path, "wb") as f:
        f.write(data)
    return spm.SentencePieceProcessor(model_file=path)


def main():
    d = sys.argv[1]
    rng = random.Random(20261206)
    sp = spm.SentencePieceProcessor(model_file=f"{d}/spm.model")
    texts = PROMPTS + [" ".join(WORDS[i:i + 5]) for i in range(0, len(WORDS), 5)]
    texts += random_texts(rng, 140)
    long_text = " ".join(rng.choice(WORDS) for _ in range(2500))[:10000]
    texts.append(long_text)
    texts.append("".join(rng.choice("Jazz é音🎹 3\t") for _ in range(10000)))
    bytes_sp = train(f"{d}/spm_bytes.model", vocab_size=400, byte_fallback=True,
                     user_defined_symbols=["<sep>", "hip hop", "▁x", "zz"],
                     control_symbols=["<ctl>"], normalization_rule_name="identity",
                     add_dummy_prefix=False, remove_extra_whitespaces=False,
                     treat_whitespace_as_suffix=True)
    # The trainer refuses escape_whitespaces=false for unigram models, so it is set by
    # appending a second normalizer_spec (field 3) holding escape_whitespaces (field 5) = 0:
    # protobuf merges repeated occurrences of a singular message field.
    train(f"{d}/spm_plain.model", vocab_size=200, normalization_rule_name="identity",
          add_dummy_prefix=False)
    with open(f"{d}/spm_plain.model", "ab") as f:
        f.write(b"\x1a\x02\x28\x00")
    plain_sp = spm.SentencePieceProcessor(model_file=f"{d}/spm_plain.model")
    rules = f"{d}/rules.tsv.tmp"
    with open(rules, "w") as f:
        f.writelines(f"{a}\t{b}\n" for a, b in RULES)
    rules_sp = train(f"{d}/spm_rules.model", vocab_size=150, normalization_rule_tsv=rules)
    os.remove(rules)
    # Variants of the rules model (sentencepiece_model_pb2 needs protobuf): spm_ties.model,
    # every normal score 0 (ties everywhere: the first-found path must win); and
    # spm_tenths.model, scores in tenths and every 4th piece user-defined (sums that are
    # not f32 values: sentencepiece compares f64 candidates with f32 best scores).
    from sentencepiece import sentencepiece_model_pb2 as pb

    def variant(name, change):
        m = pb.ModelProto()
        m.ParseFromString(open(f"{d}/spm_rules.model", "rb").read())
        for i, p in enumerate(m.pieces):
            if p.type == 1:
                change(i, p)
        with open(f"{d}/{name}", "wb") as f:
            f.write(m.SerializeToString())
        return spm.SentencePieceProcessor(model_file=f"{d}/{name}")

    def ties(i, p):
        p.score = 0.0

    def tenths(i, p):
        p.score = rng.choice([-0.1, -0.2, -0.3, -1.1, -0.7])
        if i % 4 == 0:
            p.type = 4

    ties_sp = variant("spm_ties.model", ties)
    tenths_sp = variant("spm_tenths.model", tenths)
    mixed = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz ,.-'/3ＡＢ\u3000é") for _ in range(
        rng.randrange(1, 40))) for _ in range(400)]
    short = [t for t in texts if len(t) < 200]
    short += ["ＡＢＣ", "ＡＢ", "Ａ", "ＡＡＢＢＣ", "ﬁne", "é", "e\u0301", "A\u3000B", "a\u200bb",
              "\u2581x", "x\u00a0y", "333", "a\tb\nc", "JAZZ", " \u3000 ", "\u200b", "\u200b a"]
    lower = []
    for c in range(0x110000):
        if 0xD800 <= c < 0xE000:
            continue
        if chr(c).lower() != chr(c):
            lower.append([c, chr(c).lower()])
    sigma = ["ΣΑΣ ΣΑΣ.", "Σ", "ΑΣ", "ΑΣΑ", "Α\u0301Σ", "ΑΣ\u0301", "ΑΣ\u0301Α", "1Σ", "Σ1",
             "aΣ", "aΣb", "a'Σ", "a'Σ'", "a.Σ", "ΑΣ-", "ΑΣ\u00ad", "ΑΣ\u00adΑ", "ΣΣ", "ΑΣΣ", "ΑΣΣΑ"]
    json.dump({
        "generator": f"sentencepiece {spm.__version__}, Python {sys.version.split()[0]}",
        "models": {
            "spm.model": cases_for(sp, texts),
            "spm_bytes.model": cases_for(bytes_sp, short, lower=False),
            "spm_plain.model": cases_for(plain_sp, short, lower=False),
            "spm_rules.model": cases_for(rules_sp, short, lower=False),
            "spm_ties.model": cases_for(ties_sp, short + mixed, lower=False),
            "spm_tenths.model": cases_for(tenths_sp, short + mixed, lower=False),
        },
        "lower_table": lower,
        "lower_context": [[s, s.lower()] for s in sigma],
    }, open(f"{d}/spm_cases.json", "w"), ensure_ascii=True, indent=0)


if __name__ == "__main__":
    main()
