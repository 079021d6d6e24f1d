//! NeMo 3.0.0's `JapaneseKatakanaAccentG2p` (`ja_jp_ipa.py`) and
//! `JapanesePhonemeTokenizer.encode_from_g2p` (`tts_tokenizers.py`) as v2602's
//! `japanese_phoneme` configures them: ascii_letter_prefix "", ascii_letter_case upper;
//! punct true, apostrophe false, pad_with_space true.
//!
//! Per NJD node, with its string NFKC-normalised: an A–Z string of a filler (a word
//! OpenJTalk only spelled) is emitted as Latin letters; a symbol (記号 that is not
//! アルファベット) becomes itself if it is one of the 59 ja punctuation marks, else one
//! space; a node without a reading becomes one space when its string is not blank;
//! every other node joins the accent chain, which is emitted when the next node does
//! not continue it: each mora (`[ア-ンヴ][ャュョァィゥェォヮ]?|[ァィゥェォヵヶッャュョヮ]|ー`
//! over the readings) preceded by its pitch (0 or 1) from the accent of the chain's
//! first word that does not continue a chain.

use std::collections::HashMap;
use std::sync::OnceLock;

use unicode_normalization::UnicodeNormalization;

use super::njd::NjdWord;
use crate::unicode::is_py_space;

/// The 175 symbols of v2602's `japanese_phoneme` table, in id order (`ー` is in it
/// twice, as a kana and as a punctuation mark; like Python's dict, the second wins).
#[rustfmt::skip]
pub const JAPANESE_TOKENS: [&str; 175] = [
    " ", "0", "1", "ァ", "ア", "ィ", "イ", "ゥ", "ウ", "ェ", "エ", "ォ", "オ", "カ", "ガ", "キ", "ギ", "ク",
    "グ", "ケ", "ゲ", "コ", "ゴ", "サ", "ザ", "シ", "ジ", "ス", "ズ", "セ", "ゼ", "ソ", "ゾ", "タ", "ダ", "チ",
    "ヂ", "ッ", "ツ", "ヅ", "テ", "デ", "ト", "ド", "ナ", "ニ", "ヌ", "ネ", "ノ", "ハ", "バ", "パ", "ヒ", "ビ",
    "ピ", "フ", "ブ", "プ", "ヘ", "ベ", "ペ", "ホ", "ボ", "ポ", "マ", "ミ", "ム", "メ", "モ", "ャ", "ヤ", "ュ",
    "ユ", "ョ", "ヨ", "ラ", "リ", "ル", "レ", "ロ", "ヮ", "ワ", "ヲ", "ン", "ヴ", "ヵ", "ヶ", "ー", "A", "B",
    "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M", "N", "O", "P", "Q", "R", "S", "T",
    "U", "V", "W", "X", "Y", "Z", "!", "\"", "(", ")", ",", "-", ".", "/", ":", ";", "?", "[",
    "]", "{", "}", "«", "»", "•", "‥", "…", "‹", "›", "※", "◦", "、", "。", "〃", "〈", "〉", "《",
    "》", "「", "」", "『", "』", "【", "】", "〒", "〓", "〔", "〕", "〖", "〗", "〘", "〙", "〚", "〛", "〜",
    "〽", "・", "・・・", "ー", "﹅", "﹆", "！", "＊", "？", "｟", "｠", "<pad>", "<oov>",
];

/// Number of ids of the ja table.
pub const JAPANESE_TABLE_SIZE: usize = JAPANESE_TOKENS.len();

/// `get_ipa_punctuation_list("ja-JP")`: the table from `!` to before `<pad>`.
const PUNCT: std::ops::Range<usize> = 114..173;

/// The space's id (it pads every text).
pub const SPACE_ID: u32 = 0;

fn token2id() -> &'static HashMap<&'static str, u32> {
    static MAP: OnceLock<HashMap<&'static str, u32>> = OnceLock::new();
    MAP.get_or_init(|| {
        JAPANESE_TOKENS
            .iter()
            .enumerate()
            .map(|(i, &t)| (t, i as u32))
            .collect()
    })
}

fn is_punct(s: &str) -> bool {
    JAPANESE_TOKENS[PUNCT].contains(&s)
}

/// Python `str.isspace()`.
fn py_isspace(s: &str) -> bool {
    !s.is_empty() && s.chars().all(is_py_space)
}

fn push_space(out: &mut Vec<String>) {
    if out.last().is_none_or(|s| s != " ") {
        out.push(" ".to_string());
    }
}

/// `[ア-ンヴ][ャュョァィゥェォヮ]?|[ァィゥェォヵヶッャュョヮ]|ー`, `re.findall`.
fn morae(pron: &str, out: &mut Vec<String>) {
    const SMALL_AFTER: &[char] = &['ャ', 'ュ', 'ョ', 'ァ', 'ィ', 'ゥ', 'ェ', 'ォ', 'ヮ'];
    const SMALL_ALONE: &[char] = &[
        'ァ', 'ィ', 'ゥ', 'ェ', 'ォ', 'ヵ', 'ヶ', 'ッ', 'ャ', 'ュ', 'ョ', 'ヮ',
    ];
    let chars: Vec<char> = pron.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if ('ア'..='ン').contains(&c) || c == 'ヴ' {
            let mut m = c.to_string();
            if let Some(&n) = chars.get(i + 1).filter(|n| SMALL_AFTER.contains(n)) {
                m.push(n);
                i += 1;
            }
            out.push(m);
        } else if SMALL_ALONE.contains(&c) || c == 'ー' {
            out.push(c.to_string());
        }
        i += 1;
    }
}

/// `_get_pitch_pattern`.
fn pitch(acc: usize, n: usize, i: usize) -> u8 {
    let high = match acc {
        0 => i > 0,
        1 => i == 0,
        a if a >= n => i > 0,
        a => i > 0 && i < a,
    };
    u8::from(high)
}

/// `_process_chain`.
fn flush(chain: &mut Vec<&NjdWord>, out: &mut Vec<String>) {
    if chain.is_empty() {
        return;
    }
    let acc = chain.iter().find(|w| !w.chained).unwrap_or(&chain[0]).acc;
    let mut all = Vec::new();
    for w in chain.iter() {
        morae(&w.pron, &mut all);
    }
    let n = all.len();
    for (i, m) in all.into_iter().enumerate() {
        out.push(pitch(acc, n, i).to_string());
        out.extend(m.chars().map(String::from));
    }
    chain.clear();
}

/// `JapaneseKatakanaAccentG2p.__call__` on pyopenjtalk's nodes; the strings of symbols
/// and unread words replaced by a space go to `dropped`.
pub fn g2p(words: &[NjdWord], dropped: &mut Vec<char>) -> Vec<String> {
    let mut out = Vec::new();
    let mut chain: Vec<&NjdWord> = Vec::new();
    for (idx, word) in words.iter().enumerate() {
        let string: String = word.string.nfkc().collect();
        if !string.is_empty()
            && string.chars().all(|c| c.is_ascii_uppercase())
            && word.pos == "フィラー"
        {
            flush(&mut chain, &mut out);
            out.extend(string.chars().map(String::from));
            continue;
        }
        if (word.pos == "記号" || word.pos == "補助記号") && word.pos_group1 != "アルファベット"
        {
            flush(&mut chain, &mut out);
            if py_isspace(&string) {
                push_space(&mut out);
            } else if is_punct(&string) {
                out.push(string);
            } else {
                dropped.extend(string.chars());
                push_space(&mut out);
            }
            continue;
        }
        if word.pron.is_empty() || word.mora_size == 0 {
            if !string.is_empty() && !py_isspace(&string) {
                dropped.extend(string.chars());
                push_space(&mut out);
            }
            continue;
        }
        chain.push(word);
        if !words.get(idx + 1).is_some_and(|w| w.chained) {
            flush(&mut chain, &mut out);
        }
    }
    flush(&mut chain, &mut out);
    out
}

/// `encode_from_g2p`: table-relative ids, one space between words at most, padded with
/// a space at both ends; symbols the table lacks go to `dropped`.
pub fn encode_from_g2p(symbols: &[String], dropped: &mut Vec<char>) -> Vec<u32> {
    let map = token2id();
    let mut ids = vec![SPACE_ID];
    for p in symbols {
        if p == " " {
            if ids.len() > 1 && ids.last() != Some(&SPACE_ID) {
                ids.push(SPACE_ID);
            }
            continue;
        }
        match map.get(p.as_str()) {
            Some(&id) if p != "<pad>" && p != "<oov>" => ids.push(id),
            _ => dropped.extend(p.chars()),
        }
    }
    while ids.len() > 1 && ids.last() == Some(&SPACE_ID) {
        ids.pop();
    }
    ids.push(SPACE_ID);
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_landmarks() {
        assert_eq!(JAPANESE_TOKENS[PUNCT.start], "!");
        assert_eq!(JAPANESE_TOKENS[PUNCT.end - 1], "｠");
        assert_eq!(JAPANESE_TOKENS[PUNCT.end], "<pad>");
        assert_eq!(PUNCT.len(), 59);
        assert_eq!(token2id()["ー"], 165);
    }

    #[test]
    fn morae_and_pitch() {
        let mut m = Vec::new();
        morae("キャリーパミュパミュ’ヰヵ", &mut m);
        assert_eq!(
            m,
            ["キャ", "リ", "ー", "パ", "ミュ", "パ", "ミュ", "ヰ", "ヵ"]
        );
        let p = |acc, n| (0..n).map(|i| pitch(acc, n, i)).collect::<Vec<_>>();
        assert_eq!(p(0, 3), [0, 1, 1]);
        assert_eq!(p(1, 3), [1, 0, 0]);
        assert_eq!(p(2, 4), [0, 1, 0, 0]);
        assert_eq!(p(5, 3), [0, 1, 1]);
    }
}
