//! NeMo's `IPATokenizer` for `english_phoneme` (`punct: true, apostrophe: true,
//! pad_with_space: false`): the 96-symbol table and `encode_from_g2p`
//! (`nemo/collections/common/tokenizers/text_to_speech/tts_tokenizers.py`).

use crate::TextError;

/// The `english_phoneme` symbols in id order (spec §3.2): the sorted union of the
/// dictionary's symbols, the apostrophe and NeMo's default punctuation, then space,
/// `<pad>` and `<oov>`. The same table in every Magpie release (English is the first
/// sub-tokenizer of the aggregated vocabulary, offset 0).
pub const ENGLISH_TOKENS: [&str; 96] = [
    "!", "\"", "'", "(", ")", ",", "-", ".", "/", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9",
    ":", ";", "?", "A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M", "N", "O", "P",
    "Q", "R", "S", "T", "U", "V", "W", "X", "Y", "Z", "[", "]", "a", "b", "d", "e", "f", "h", "i",
    "j", "k", "l", "m", "n", "o", "p", "s", "t", "u", "v", "w", "z", "{", "}", "À", "É", "æ", "ð",
    "ŋ", "ɑ", "ɔ", "ə", "ɚ", "ɛ", "ɝ", "ɡ", "ɪ", "ɹ", "ʃ", "ʊ", "ʌ", "ʒ", "ˈ", "ˌ", "θ", " ",
    "<pad>", "<oov>",
];

/// Id of the space symbol.
pub const SPACE_ID: u32 = 93;
/// Id of `<pad>` (never produced for ordinary text).
pub const PAD_ID: u32 = 94;

/// Id of one G2P symbol, or `None` for a symbol the tokenizer drops (NeMo logs a
/// warning and skips it: `—`, `$`, `_`, `=`, letters of other scripts, ...).
pub fn token_id(symbol: &str) -> Option<u32> {
    let mut chars = symbol.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) => char_id(c),
        _ => match symbol {
            "<pad>" => Some(PAD_ID),
            "<oov>" => Some(PAD_ID + 1),
            _ => None,
        },
    }
}

fn char_id(c: char) -> Option<u32> {
    // The 93 one-character symbols before the space are sorted by code point.
    ENGLISH_TOKENS[..SPACE_ID as usize]
        .binary_search_by(|t| t.chars().next().unwrap_or('\0').cmp(&c))
        .ok()
        .map(|i| i as u32)
        .or((c == ' ').then_some(SPACE_ID))
}

/// `encode_from_g2p`: keeps every symbol of the table (spaces included, even leading or
/// repeated ones — NeMo's "only after a non-space" branch falls through to the
/// "known symbol" branch), drops the rest, strips trailing spaces.
pub fn encode_from_g2p(symbols: &[String]) -> Vec<u32> {
    encode_from_g2p_reporting(symbols, &mut Vec::new())
}

/// [`encode_from_g2p`] that also collects the characters of every symbol it drops
/// (NeMo logs each as "unknown char/phoneme … will be skipped"); spaces are never
/// reported.
pub fn encode_from_g2p_reporting(symbols: &[String], dropped: &mut Vec<char>) -> Vec<u32> {
    let mut ids: Vec<u32> = Vec::with_capacity(symbols.len());
    for s in symbols {
        match token_id(s) {
            Some(id) => ids.push(id),
            None => dropped.extend(s.chars().filter(|&c| c != ' ')),
        }
    }
    while ids.last() == Some(&SPACE_ID) {
        ids.pop();
    }
    ids
}

/// Which text table a model was trained with, as far as rill knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextLayout {
    /// v2602's ten tokenizers (`languages::v2602_tokenizers`), 2362 rows: every
    /// language of [`crate::LANGUAGES`] sits at its offset.
    V2602,
    /// English only at `english_offset`: the oracle's English-only model (98 rows),
    /// or a model whose other tables rill does not know (e.g. v2607); other languages
    /// are refused rather than mis-tokenised.
    EnglishOnly,
}

/// Where each language's ids sit in a model's text vocabulary and what its specials
/// are. NeMo's aggregated tokenizer puts BOS and EOS right after all sub-tokenizers
/// (`bos_id = len(tokens)`, `eos_id = len(tokens) + 1`), so both follow from the row
/// count of `text_embedding`: the released v2602 has 2362 rows (EOS 2361), the oracle's
/// English-only model 98 (EOS 97).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextVocabulary {
    english_offset: u32,
    bos_id: u32,
    eos_id: u32,
    layout: TextLayout,
}

impl TextVocabulary {
    /// Rows of the released v2602 `text_embedding`.
    pub const V2602_ROWS: usize = 2362;

    /// The vocabulary of a model whose `text_embedding` has `rows` rows and whose
    /// English table starts at `english_offset`, its tokenizer list unknown: v2602's
    /// layout for exactly v2602's 2362 rows with English at 0, else English only.
    pub fn from_embedding_rows(rows: usize, english_offset: u32) -> Result<Self, TextError> {
        let needed = english_offset as usize + ENGLISH_TOKENS.len() + 2;
        if rows < needed || rows > u32::MAX as usize {
            return Err(TextError::InvalidVocabulary(format!(
                "a text embedding of {rows} rows cannot hold the 96 English symbols at offset \
                 {english_offset} plus BOS and EOS (at least {needed} rows)"
            )));
        }
        let layout = if rows == Self::V2602_ROWS && english_offset == 0 {
            TextLayout::V2602
        } else {
            TextLayout::EnglishOnly
        };
        let rows = rows as u32;
        Ok(TextVocabulary {
            english_offset,
            bos_id: rows - 2,
            eos_id: rows - 1,
            layout,
        })
    }

    /// The vocabulary of a model whose config lists `names` as its `text_tokenizers`
    /// (in order) and whose `text_embedding` has `rows` rows. v2602's exact list needs
    /// its 2362 rows; a list starting with `english_phoneme` is English-only; no list
    /// at all falls back to [`from_embedding_rows`](Self::from_embedding_rows); any
    /// other list is refused.
    pub fn from_tokenizer_names<S: AsRef<str>>(
        names: &[S],
        rows: usize,
    ) -> Result<Self, TextError> {
        let names: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
        if names.is_empty() {
            return Self::from_embedding_rows(rows, 0);
        }
        if names == crate::languages::v2602_tokenizer_names() {
            if rows != Self::V2602_ROWS {
                return Err(TextError::InvalidVocabulary(format!(
                    "the config lists v2602's ten text tokenizers, which need {} embedding rows, \
                     but text_embedding has {rows}",
                    Self::V2602_ROWS
                )));
            }
            return Ok(Self::v2602());
        }
        if names[0] == "english_phoneme" {
            let mut v = Self::from_embedding_rows(rows, 0)?;
            v.layout = TextLayout::EnglishOnly;
            return Ok(v);
        }
        Err(TextError::InvalidVocabulary(format!(
            "the checkpoint's text tokenizers ({}) are neither v2602's ({}) nor start with \
             english_phoneme; rill cannot tokenise for it",
            names.join(", "),
            crate::languages::v2602_tokenizer_names().join(", ")
        )))
    }

    /// The released v2602 vocabulary (BOS 2360, EOS 2361, every language).
    pub fn v2602() -> Self {
        TextVocabulary {
            english_offset: 0,
            bos_id: crate::languages::V2602_BOS,
            eos_id: crate::languages::V2602_EOS,
            layout: TextLayout::V2602,
        }
    }

    /// Which table this is.
    pub fn layout(&self) -> TextLayout {
        self.layout
    }

    /// Offset of `english_phoneme` in the aggregated vocabulary (0 in every release).
    pub fn english_offset(&self) -> u32 {
        self.english_offset
    }

    /// Offset of `language`'s tokenizer, or why this vocabulary has none.
    pub fn offset(&self, language: crate::Language) -> Result<u32, TextError> {
        match (self.layout, language) {
            (_, crate::Language::English) => Ok(self.english_offset),
            (TextLayout::V2602, l) => Ok(l.info().offset),
            (TextLayout::EnglishOnly, l) => Err(TextError::LanguageNotInCheckpoint {
                language: l.name(),
                code: l.code(),
            }),
        }
    }

    /// The languages this vocabulary has a table for (built or not), in table order.
    pub fn languages(&self) -> Vec<crate::Language> {
        crate::Language::ALL
            .into_iter()
            .filter(|&l| self.offset(l).is_ok())
            .collect()
    }

    /// Beginning-of-text id (not used at inference, spec trap T8).
    pub fn bos_id(&self) -> u32 {
        self.bos_id
    }

    /// End-of-text id, appended to every utterance.
    pub fn eos_id(&self) -> u32 {
        self.eos_id
    }

    /// Rows of the `text_embedding` this vocabulary indexes.
    pub fn rows(&self) -> usize {
        self.eos_id as usize + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_symbol_maps_to_its_index() {
        for (i, t) in ENGLISH_TOKENS.iter().enumerate() {
            assert_eq!(token_id(t), Some(i as u32), "{t:?}");
        }
        for dropped in ["—", "$", "_", "=", "Ə", "ab", ""] {
            assert_eq!(token_id(dropped), None, "{dropped:?}");
        }
    }

    #[test]
    fn trailing_spaces_go_leading_spaces_stay() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            encode_from_g2p(&s(&[" ", " ", "a", "—", " ", " "])),
            [93, 93, 50]
        );
        assert_eq!(encode_from_g2p(&s(&[" ", "$"])), Vec::<u32>::new());
    }

    #[test]
    fn vocabulary_from_rows() {
        assert_eq!(
            TextVocabulary::from_embedding_rows(2362, 0).unwrap(),
            TextVocabulary::v2602()
        );
        let oracle = TextVocabulary::from_embedding_rows(98, 0).unwrap();
        assert_eq!((oracle.bos_id(), oracle.eos_id()), (96, 97));
        // v2607 (spec §1.1): 3359 rows, BOS 3357, EOS 3358.
        let v2607 = TextVocabulary::from_embedding_rows(3359, 0).unwrap();
        assert_eq!((v2607.bos_id(), v2607.eos_id()), (3357, 3358));
        assert!(TextVocabulary::from_embedding_rows(97, 0).is_err());
        assert!(TextVocabulary::from_embedding_rows(2362, 2300).is_err());
    }
}
