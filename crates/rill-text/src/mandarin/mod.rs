//! NeMo 3.0.0's Mandarin front end as the v2602 checkpoint's `mandarin_phoneme` tokenizer
//! is configured (spec `magpie_languages.md` §3 "zh"): `ChineseG2p` (upper-cases the
//! text, `jieba.cut`, `pypinyin.lazy_pinyin` per word in TONE3 with `5` for the neutral
//! tone, each syllable → its phonemes from `ipa_dict_nv23.05.txt` + `#tone`, a syllable
//! the dictionary lacks dropped, an A–Z letter or any other character passed on) and
//! `ChinesePhonemesTokenizer.encode_from_g2p` (the 109-symbol table, spaces folded and
//! padded, what the table lacks dropped). Ids are relative to the zh table (v2602 puts
//! it at offset 349).
//!
//! jieba and pypinyin are ported by hand ([`jieba`], [`pinyin`]) because no crate gives
//! their exact output: `jieba-rs` uses cppjieba's dictionary and HMM, which differ from
//! Python jieba's, and the `pinyin` crate reads character by character without
//! pypinyin's phrases or the cc_cedict override NeMo loads. Their tables are the pinned
//! PyPI packages' own (jieba 0.42.1, pypinyin 0.55.0, pypinyin-dict 0.9.0, all MIT),
//! written by `testdata/magpie/make_mandarin_tables.py` and embedded gzip-compressed
//! (feature `mandarin`, on by default). `tests/mandarin.rs` checks every id, G2P symbol,
//! jieba word and pinyin against NeMo's own code on the recorded texts.

pub mod jieba;
pub mod pinyin;

use std::collections::HashMap;

use crate::hindi::DEFAULT_PUNCTUATION;
use crate::unicode::{py_lower, py_upper};
use jieba::Jieba;
use pinyin::Pinyin;

/// FNV-1a: the tables' keys are fixed dictionary entries, so a fast non-keyed hash
/// halves their load time against SipHash without opening them to collisions.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// A `HashMap` with [`Fnv`].
pub(crate) type FastMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<Fnv>>;

/// Number of ids of the zh table (v2602: 109).
pub const MANDARIN_TABLE_SIZE: usize = 109;

/// `ChinesePhonemesTokenizer.ZH_PUNCT_LIST` before `DEFAULT_PUNCTUATION`.
pub const ZH_PUNCTUATION: [char; 19] = [
    '，', '。', '？', '！', '；', '：', '、', '‘', '’', '“', '”', '（', '）', '【', '】', '「',
    '」', '《', '》',
];

/// The checkpoint's Mandarin pinyin → phoneme dictionary (NVIDIA, Apache-2.0; 5,419 B).
pub const IPA_DICT_ZH: &str = include_str!("../../data/ipa_dict_nv23.05.txt");

/// `ChineseG2p` + `ChinesePhonemesTokenizer` with their tables.
#[derive(Debug)]
pub struct MandarinFrontEnd {
    jieba: Jieba,
    pinyin: Pinyin,
    /// Syllable (lower case, no tone) → phonemes.
    syllables: HashMap<String, Vec<String>>,
    tokens: Vec<String>,
    ids: HashMap<String, u32>,
}

/// One G2P symbol and the input character it stands for (what to report if the
/// tokenizer drops it).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Symbol {
    text: String,
    source: char,
}

impl MandarinFrontEnd {
    /// From the generated tables' text and the pinyin dictionary's.
    pub fn from_tables(
        jieba_dict: &str,
        jieba_hmm: &str,
        pinyin_chars: &str,
        pinyin_phrases: &str,
        ipa_dict: &str,
    ) -> Result<Self, String> {
        let syllables = parse_ipa_dict(ipa_dict);
        let tokens = table(&syllables);
        let mut ids = HashMap::new();
        for (i, t) in tokens.iter().enumerate() {
            // `_token2id` is a dict comprehension: a repeated token keeps its last index.
            ids.insert(t.clone(), i as u32);
        }
        Ok(MandarinFrontEnd {
            jieba: Jieba::from_tables(jieba_dict, jieba_hmm)?,
            pinyin: Pinyin::from_tables(pinyin_chars, pinyin_phrases)?,
            syllables,
            tokens,
            ids,
        })
    }

    /// The embedded tables (feature `mandarin`), decompressed and parsed once.
    #[cfg(feature = "mandarin")]
    pub fn embedded() -> &'static MandarinFrontEnd {
        use std::sync::OnceLock;
        static SHARED: OnceLock<MandarinFrontEnd> = OnceLock::new();
        SHARED.get_or_init(|| {
            let text = |gz: &[u8]| String::from_utf8(gunzip(gz)).unwrap_or_default();
            // The tables are fixed at build time and checked by the tests.
            MandarinFrontEnd::from_tables(
                &text(include_bytes!("../../data/zh_jieba_dict.txt.gz")),
                &text(include_bytes!("../../data/zh_jieba_hmm.txt.gz")),
                &text(include_bytes!("../../data/zh_pinyin_chars.txt.gz")),
                &text(include_bytes!("../../data/zh_pinyin_phrases.txt.gz")),
                IPA_DICT_ZH,
            )
            .expect("the embedded Mandarin tables parse (checked by the tests)")
        })
    }

    /// The 109 symbols in id order.
    pub fn tokens(&self) -> &[String] {
        &self.tokens
    }

    /// The words `ChineseG2p` reads: `jieba.cut(text.upper())`.
    pub fn words(&self, text: &str) -> Vec<String> {
        self.jieba.cut(&py_upper(text))
    }

    /// `jieba.cut(text)` on `text` as given.
    pub fn jieba_cut(&self, text: &str) -> Vec<String> {
        self.jieba.cut(text)
    }

    /// `lazy_pinyin(word, style=TONE3, neutral_tone_with_five=True, errors=list)`.
    pub fn lazy_pinyin(&self, word: &str) -> Vec<String> {
        self.pinyin
            .lazy_pinyin(word)
            .into_iter()
            .map(|r| r.text)
            .collect()
    }

    /// `ChineseG2p(text)`: phonemes, `#1`…`#5`, letters and passed-through characters.
    pub fn g2p(&self, text: &str) -> Vec<String> {
        self.g2p_symbols(text, &mut Vec::new())
            .into_iter()
            .map(|s| s.text)
            .collect()
    }

    fn g2p_symbols(&self, text: &str, dropped: &mut Vec<char>) -> Vec<Symbol> {
        let mut out = Vec::new();
        for word in self.words(text) {
            for reading in self.pinyin.lazy_pinyin(&word) {
                let Some(last) = reading.text.chars().last() else {
                    continue;
                };
                if ('1'..='5').contains(&last) {
                    let syllable = &reading.text[..reading.text.len() - 1];
                    match self.syllables.get(syllable) {
                        Some(phonemes) => {
                            out.extend(phonemes.iter().map(|p| Symbol {
                                text: p.clone(),
                                source: reading.source,
                            }));
                            out.push(Symbol {
                                text: format!("#{last}"),
                                source: reading.source,
                            });
                        }
                        // NeMo logs and skips a syllable its dictionary lacks.
                        None => dropped.push(reading.source),
                    }
                } else if last.is_ascii_uppercase() {
                    out.push(Symbol {
                        text: last.to_string(),
                        source: reading.source,
                    });
                } else {
                    out.push(Symbol {
                        text: reading.text,
                        source: reading.source,
                    });
                }
            }
        }
        out
    }

    /// `ChinesePhonemesTokenizer.encode(text)`: ids in the zh table (offset not
    /// applied), with the space padding; input characters that end up without a symbol
    /// go to `dropped` (spaces it folds do not).
    pub fn encode(&self, text: &str, dropped: &mut Vec<char>) -> Vec<u32> {
        let symbols = self.g2p_symbols(text, dropped);
        let mut kept: Vec<&str> = Vec::with_capacity(symbols.len() + 2);
        for s in &symbols {
            let p = s.text.as_str();
            if p == " " {
                if kept.last().is_some_and(|&l| l != " ") {
                    kept.push(p);
                }
            } else if self.ids.contains_key(p) && (is_listed_symbol(p) || is_punctuation(p)) {
                kept.push(p);
            } else {
                dropped.extend(p.chars().filter(|&c| c != ' '));
                if p.is_empty() {
                    dropped.push(s.source);
                }
            }
        }
        while kept.last() == Some(&" ") {
            kept.pop();
        }
        let space = self.ids.get(" ").copied().unwrap_or(0);
        let mut ids = Vec::with_capacity(kept.len() + 2);
        ids.push(space);
        ids.extend(kept.iter().filter_map(|p| self.ids.get(*p).copied()));
        ids.push(space);
        ids
    }
}

/// A table symbol `encode_from_g2p` keeps as a phoneme, tone, letter or apostrophe
/// (anything but punctuation, space, `<pad>` and `<oov>`).
fn is_listed_symbol(p: &str) -> bool {
    p == "'" || p.chars().all(char::is_alphanumeric) || p.starts_with('#')
}

/// In `ZH_PUNCT_LIST` (`punct: true`).
fn is_punctuation(p: &str) -> bool {
    let mut it = p.chars();
    matches!((it.next(), it.next()), (Some(c), None)
        if ZH_PUNCTUATION.contains(&c) || DEFAULT_PUNCTUATION.contains(&c))
}

/// `ChineseG2p._parse_as_pinyin_dict` with `phoneme_prefix=""`, `phoneme_case="lower"`.
fn parse_ipa_dict(text: &str) -> HashMap<String, Vec<String>> {
    let mut dict = HashMap::new();
    for line in text.split_inclusive('\n') {
        if line.starts_with(";;;") || crate::unicode::py_strip(line).is_empty() {
            continue;
        }
        let mut parts = line.split('\t');
        let syllable = parts.next().unwrap_or("");
        let phonemes = parts.next().unwrap_or("");
        let phonemes: Vec<String> = py_lower(phonemes)
            .split(crate::unicode::is_py_space)
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect();
        dict.insert(py_lower(syllable), phonemes);
    }
    dict
}

/// The token list in NeMo's order: space, sorted phonemes, `#1`…`#5`, A–Z, `'`, the
/// Chinese then the default punctuation, `<pad>`, `<oov>`.
fn table(syllables: &HashMap<String, Vec<String>>) -> Vec<String> {
    let mut phonemes: Vec<String> = syllables.values().flatten().cloned().collect();
    phonemes.sort_unstable();
    phonemes.dedup();
    let mut tokens = vec![" ".to_string()];
    tokens.extend(phonemes);
    tokens.extend((1..=5).map(|t| format!("#{t}")));
    tokens.extend(('A'..='Z').map(|c| c.to_string()));
    tokens.push("'".into());
    tokens.extend(ZH_PUNCTUATION.iter().map(|c| c.to_string()));
    tokens.extend(DEFAULT_PUNCTUATION.iter().map(|c| c.to_string()));
    tokens.push("<pad>".into());
    tokens.push("<oov>".into());
    tokens
}

/// Decompresses an embedded table.
#[cfg(feature = "mandarin")]
fn gunzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::with_capacity(bytes.len() * 4);
    let _ = flate2::read::GzDecoder::new(bytes).read_to_end(&mut out);
    out
}
