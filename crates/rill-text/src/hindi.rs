//! NeMo 3.0.0's `HindiCharsTokenizer` as v2602 was trained with it: charset version 1
//! (`get_grapheme_character_set("hi-IN", case="mixed")` + `ascii_lowercase`), punctuation
//! version 1 (`sorted(DEFAULT_PUNCTUATION)`), `apostrophe: true`, `pad_with_space: true`
//! (`tts_tokenizers.py` `HindiCharsTokenizer`, `BaseCharsTokenizer`, `ipa_lexicon.py`;
//! spec `magpie_languages.md` §1, §3 "hi").
//!
//! The table is rebuilt here the way NeMo builds it, so its traps come out the same:
//! "mixed" case on a caseless script lists the 73 Devanagari characters twice and the
//! `{token: id}` dict keeps the second copy (ids 74..=146); upper-case Latin, digits
//! and `॥` are not in the table and are dropped (`Thank you` → `hank you`).

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::ipa::any_locale_text_preprocessing;

/// `GRAPHEME_CHARACTER_SETS["hi-IN"]` in NeMo 3.0.0's order.
pub const HINDI_GRAPHEMES: [char; 73] = [
    'अ', 'आ', 'इ', 'ई', 'उ', 'ऊ', 'ऋ', 'ॠ', 'ए', 'ऐ', 'ओ', 'औ', 'ऍ', 'ऑ', //
    'क', 'ख', 'ग', 'घ', 'ङ', 'च', 'छ', 'ज', 'झ', 'ञ', 'ट', 'ठ', 'ड', 'ढ', 'ण', 'त', 'थ', 'द', 'ध',
    'न', 'प', 'फ', 'ब', 'भ', 'म', 'य', 'र', 'ल', 'व', 'श', 'ष', 'स', 'ह', 'ळ', 'ऩ', 'ऱ', 'ा', 'ि',
    'ी', 'ु', 'ू', 'ृ', 'ॄ', 'े', 'ै', 'ो', 'ौ', 'ॅ', 'ॉ', 'ँ', 'ं', 'ः', '्', '़', 'ॊ', 'ॢ', 'ॣ', 'ॆ', '।',
];

/// NeMo's `DEFAULT_PUNCTUATION` (its tuple order).
pub const DEFAULT_PUNCTUATION: [char; 15] = [
    ',', '.', '!', '?', '-', ':', ';', '/', '"', '(', ')', '[', ']', '{', '}',
];

/// Number of ids of the table (v2602: 191).
pub const HINDI_TABLE_SIZE: usize = 191;

/// The token list in NeMo's order: space, the graphemes twice, a–z, `'`, the sorted
/// punctuation, `<pad>`, `<oov>`.
pub fn hindi_tokens() -> Vec<String> {
    let mut tokens = vec![" ".to_string()];
    for _copy in 0..2 {
        // case="mixed": charset.upper() + charset.lower(), both the identity here.
        tokens.extend(HINDI_GRAPHEMES.iter().map(|c| c.to_string()));
    }
    tokens.extend(('a'..='z').map(|c| c.to_string()));
    tokens.push("'".into());
    let mut punct = DEFAULT_PUNCTUATION;
    punct.sort_unstable();
    tokens.extend(punct.iter().map(|c| c.to_string()));
    tokens.push("<pad>".into());
    tokens.push("<oov>".into());
    tokens
}

/// `{token: index}` with the last index of a repeated token, as Python's dict
/// comprehension builds `_token2id`.
fn char_ids() -> &'static HashMap<char, u32> {
    static IDS: OnceLock<HashMap<char, u32>> = OnceLock::new();
    IDS.get_or_init(|| {
        let mut ids = HashMap::new();
        for (i, t) in hindi_tokens().iter().enumerate() {
            let mut chars = t.chars();
            if let (Some(c), None) = (chars.next(), chars.next()) {
                ids.insert(c, i as u32);
            }
        }
        ids
    })
}

/// `HindiCharsTokenizer.encode`: ids in the Hindi table (offset not applied), with the
/// space padding; characters it skips go to `dropped` (spaces it folds do not).
pub fn encode(text: &str, dropped: &mut Vec<char>) -> Vec<u32> {
    let ids = char_ids();
    let space = ids[&' '];
    let mut out: Vec<u32> = vec![space];
    for c in any_locale_text_preprocessing(text).chars() {
        if c == ' ' {
            if out.len() > 1 && out.last() != Some(&space) {
                out.push(space);
            }
        } else if let Some(&id) = ids.get(&c) {
            // Every DEFAULT_PUNCTUATION mark is in the table too.
            out.push(id);
        } else {
            dropped.push(c);
        }
    }
    while out.len() > 1 && out.last() == Some(&space) {
        out.pop();
    }
    out.push(space);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_and_second_copy() {
        let t = hindi_tokens();
        assert_eq!(t.len(), HINDI_TABLE_SIZE);
        assert_eq!(
            (t[0].as_str(), t[189].as_str(), t[190].as_str()),
            (" ", "<pad>", "<oov>")
        );
        let mut d = Vec::new();
        assert_eq!(encode("अ", &mut d), [0, 74, 0]);
        assert_eq!(
            encode(" Thank  you ", &mut d),
            [0, 154, 147, 160, 157, 0, 171, 161, 167, 0]
        );
        assert_eq!(d, ['T']);
    }
}
