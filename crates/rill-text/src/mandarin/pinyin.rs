//! pypinyin 0.55.0's `lazy_pinyin(word, style=Style.TONE3, neutral_tone_with_five=True,
//! errors=list)` as NeMo's `ChineseG2p` calls it on each jieba word, re-written:
//! `simpleseg` splits the word into runs of what `RE_HANS` calls Han and the rest; the
//! rest comes out character by character (the `errors` callback); each Han run is cut by
//! `mmseg` (forward matching on the prefix set of `PHRASES_DICT`, `no_non_phrases=True`)
//! and each piece read as a phrase or character by character from `PINYIN_DICT` (after
//! `cc_cedict.load()`). The TONE3 strings are precomputed by pypinyin itself
//! (`make_mandarin_tables.py`); a Han character without a reading comes out as itself
//! plus `5`, as pypinyin's neutral-tone rule makes it.

use super::FastMap;

/// Code points `pypinyin.constants.RE_HANS` matches (UCS-4 build), as merged, sorted
/// ranges (the recording checks them against a scan of all of Unicode).
pub const RE_HANS_RANGES: [(u32, u32); 14] = [
    (0x3007, 0x3007),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xE815, 0xE864),
    (0xF900, 0xFAFF),
    (0x20000, 0x2A6DF),
    (0x2A703, 0x2B81D),
    (0x2B825, 0x2BF6E),
    (0x2C029, 0x2CE93),
    (0x2D016, 0x2D016),
    (0x2D11B, 0x2EBD9),
    (0x2F80A, 0x2FA1F),
    (0x30000, 0x3134A),
    (0x31350, 0x32389),
];

/// Whether pypinyin reads `c` as Han (`RE_HANS.match(c)`).
pub fn is_hans(c: char) -> bool {
    let cp = c as u32;
    RE_HANS_RANGES
        .binary_search_by(|&(lo, hi)| {
            if hi < cp {
                std::cmp::Ordering::Less
            } else if lo > cp {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// A syllable (or passed-through character) and the input character it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// TONE3 pinyin (`zhong1`, `le5`) or a non-Han character as it was.
    pub text: String,
    /// The character read (a phrase whose reading has another length: its first).
    pub source: char,
}

/// pypinyin's dictionaries as NeMo loads them.
#[derive(Debug)]
pub struct Pinyin {
    /// `PINYIN_DICT` (first reading, TONE3) for the characters `RE_HANS` matches.
    chars: FastMap<char, String>,
    /// `PHRASES_DICT`: `None` when the reading is the characters' own one by one.
    phrases: FastMap<String, Option<Vec<String>>>,
    /// mmseg's `PrefixSet` of the phrases.
    prefixes: FastMap<String, ()>,
}

impl Pinyin {
    /// From the generated tables (`c\tpinyin` lines; `phrase` or `phrase\tpy py…` lines).
    pub fn from_tables(chars: &str, phrases: &str) -> Result<Self, String> {
        let mut map = FastMap::with_capacity_and_hasher(42_000, Default::default());
        for line in chars.lines() {
            let (c, py) = line
                .split_once('\t')
                .ok_or_else(|| format!("bad pinyin line {line:?}"))?;
            let mut it = c.chars();
            let (Some(c), None) = (it.next(), it.next()) else {
                return Err(format!("bad pinyin line {line:?}"));
            };
            map.insert(c, py.to_string());
        }
        let mut ph = FastMap::with_capacity_and_hasher(48_000, Default::default());
        let mut prefixes = FastMap::with_capacity_and_hasher(100_000, Default::default());
        for line in phrases.lines() {
            let (phrase, reading) = match line.split_once('\t') {
                Some((p, r)) => (p, Some(r.split(' ').map(str::to_string).collect())),
                None => (line, None),
            };
            for (i, c) in phrase.char_indices() {
                prefixes.insert(phrase[..i + c.len_utf8()].to_string(), ());
            }
            ph.insert(phrase.to_string(), reading);
        }
        Ok(Pinyin {
            chars: map,
            phrases: ph,
            prefixes,
        })
    }

    /// `lazy_pinyin(word, …)` with where each item came from.
    pub fn lazy_pinyin(&self, word: &str) -> Vec<Reading> {
        let chars: Vec<char> = word.chars().collect();
        let mut out = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            let han = is_hans(chars[i]);
            let mut j = i + 1;
            while j < chars.len() && is_hans(chars[j]) == han {
                j += 1;
            }
            if han {
                for (a, b) in self.mmseg(&chars[i..j]) {
                    self.read(&chars[i + a..i + b], &mut out);
                }
            } else {
                out.extend(chars[i..j].iter().map(|&c| Reading {
                    text: c.to_string(),
                    source: c,
                }));
            }
            i = j;
        }
        out
    }

    /// `DefaultConverter._phrase_pinyin` + the style conversion, on one mmseg piece.
    fn read(&self, piece: &[char], out: &mut Vec<Reading>) {
        let word: String = piece.iter().collect();
        if let Some(Some(reading)) = self.phrases.get(&word) {
            for (k, py) in reading.iter().enumerate() {
                let source = piece.get(k).or(piece.first()).copied().unwrap_or(' ');
                out.push(Reading {
                    text: py.clone(),
                    source,
                });
            }
            return;
        }
        for &c in piece {
            let text = match self.chars.get(&c) {
                Some(py) => py.clone(),
                // No reading: the character itself, and the neutral-tone rule adds 5.
                None => format!("{c}5"),
            };
            out.push(Reading { text, source: c });
        }
    }

    /// `mmseg.Seg.cut` with `no_non_phrases=True`: the pieces as (start, end) offsets.
    fn mmseg(&self, text: &[char]) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut at = 0;
        let mut word = String::new();
        while at < text.len() {
            let remain = &text[at..];
            let mut last_valid = 0;
            let mut whole = true;
            word.clear();
            for (index, &c) in remain.iter().enumerate() {
                word.push(c);
                if self.prefixes.contains_key(&word) {
                    if self.phrases.contains_key(&word) {
                        last_valid = index + 1;
                    }
                } else {
                    whole = false;
                    break;
                }
            }
            if last_valid > 0 {
                out.push((at, at + last_valid));
                at += last_valid;
            } else if whole {
                // All of the rest is a prefix of some phrase, but no phrase itself:
                // character by character, and done.
                out.extend((at..text.len()).map(|k| (k, k + 1)));
                break;
            } else {
                out.push((at, at + 1));
                at += 1;
            }
        }
        out
    }
}
