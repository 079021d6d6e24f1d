//! NeMo 3.0.0's IPA front end for any locale but English (`IpaG2p` with
//! `any_locale_word_tokenize`, `IPATokenizer`): Spanish and German of Magpie v2602,
//! deterministic (`phoneme_probability = 1.0`, spec `magpie_languages.md` §2).
//! Upstream: `i18n_ipa.py` (`parse_one_word`, `__call__`), `tokenizer_utils.py`
//! (`any_locale_text_preprocessing`, `_WORDS_RE_ANY_LOCALE`), `tts_tokenizers.py`
//! (`IPATokenizer.__init__`, `encode_from_g2p`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use crate::g2p::{word_pieces, Piece};
use crate::ipa_lexicon::{is_word_char, is_word_or_digit, utf8, GraphemeCase, IpaLexicon};
use crate::ipa_locales::{IpaLocale, GERMAN, SPANISH};
use crate::lexicon::read_limited;
use crate::unicode::{nfc, py_upper};
use crate::{check_size, Result, TextError};

/// `any_locale_text_preprocessing`: NFC, then `’` (U+2019) becomes `'`.
pub fn any_locale_text_preprocessing(text: &str) -> String {
    nfc(text).replace('\u{2019}', "'")
}

/// A locale's token table, built as `IPATokenizer.__init__` builds it: the sorted
/// union of the G2P symbols, the apostrophe and the punctuation, then space, `<pad>`
/// and `<oov>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolTable {
    tokens: Vec<String>,
    ids: HashMap<String, u32>,
    space: u32,
}

impl SymbolTable {
    fn build<'a>(symbols: impl Iterator<Item = &'a String>, punctuation: &[&str]) -> Self {
        let mut sorted: std::collections::BTreeSet<String> = symbols.cloned().collect();
        sorted.insert("'".into());
        sorted.extend(punctuation.iter().map(|p| p.to_string()));
        // The dictionary's symbols never contain a space (pronunciations lose their
        // whitespace, graphemes are letters and digits), so it goes after the sorted ones.
        let mut tokens: Vec<String> = sorted.into_iter().collect();
        let space = tokens.len() as u32;
        tokens.extend([" ", "<pad>", "<oov>"].map(String::from));
        let ids = (0u32..).zip(&tokens).map(|(i, t)| (t.clone(), i)).collect();
        SymbolTable { tokens, ids, space }
    }

    /// The symbols in id order.
    pub fn tokens(&self) -> &[String] {
        &self.tokens
    }

    /// Number of symbols (103 for Spanish, 150 for German in v2602).
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Never true (space, `<pad>` and `<oov>` are always there).
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The id of one G2P symbol, if the table has it.
    pub fn id(&self, symbol: &str) -> Option<u32> {
        self.ids.get(symbol).copied()
    }

    /// Id of the space symbol.
    pub fn space_id(&self) -> u32 {
        self.space
    }

    /// Id of `<pad>` (right after the space).
    pub fn pad_id(&self) -> u32 {
        self.space + 1
    }
}

/// What [`IpaFrontEnd::encode`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    /// Locale-relative ids (0-based: add the sub-tokenizer's offset in the model's
    /// vocabulary, then EOS), with the space token at both ends (`pad_with_space`).
    pub ids: Vec<u32>,
    /// Every G2P symbol that the table lacks and that NeMo therefore skips (with a
    /// logged warning), in text order: characters of other scripts, symbols such as
    /// `$`, `€`, `…` or `_`, and in German also digits and the spaces next to them
    /// (`#2`, `# `). The grapheme prefix is removed, so each entry is the text dropped.
    pub dropped: Vec<String>,
    /// False when nothing but spaces is left (empty text, only dropped symbols). NeMo
    /// then feeds the two padding spaces alone, or fails (`IndexError`) when the text
    /// had spaces; `ids` holds the two padding spaces.
    pub speakable: bool,
}

/// Text → locale-relative token ids for one IPA locale.
#[derive(Debug, Clone)]
pub struct IpaFrontEnd {
    locale: IpaLocale,
    lexicon: Arc<IpaLexicon>,
    table: Arc<SymbolTable>,
}

impl IpaFrontEnd {
    /// Spanish with the embedded dictionary (feature `embedded-lexicons`, on by default).
    pub fn spanish() -> Result<Self> {
        #[cfg(feature = "embedded-lexicons")]
        {
            use crate::ipa_locales::embedded::{gunzip, SPANISH_DICT_GZ};
            static SHARED: std::sync::OnceLock<IpaFrontEnd> = std::sync::OnceLock::new();
            if let Some(front) = SHARED.get() {
                return Ok(front.clone());
            }
            let front = Self::spanish_from_bytes(&gunzip(SPANISH_DICT_GZ))?;
            Ok(SHARED.get_or_init(|| front).clone())
        }
        #[cfg(not(feature = "embedded-lexicons"))]
        Err(missing_lexicon(&SPANISH, SPANISH.dict_file))
    }

    /// Spanish with the dictionary given as bytes (e.g. the `.nemo` member
    /// `es_ES_nv230301.dict`). Fails unless it yields v2602's 103-symbol table.
    pub fn spanish_from_bytes(dict: &[u8]) -> Result<Self> {
        Self::for_v2602(SPANISH, dict, SPANISH.dict_file, None)
    }

    /// German with its dictionary (the checkpoint's `de_nv230119.dict`, e.g. from the
    /// `.nemo` archive) and heteronym list as bytes. Fails unless they yield v2602's
    /// 150-symbol table.
    pub fn german(dict: &[u8], heteronyms: &[u8]) -> Result<Self> {
        Self::for_v2602(GERMAN, dict, GERMAN.dict_file, Some(heteronyms))
    }

    /// German from files, as the CLI's `--lexicon FILE` gives them. `dict: None` fails
    /// with [`TextError::MissingLexicon`] (rill cannot ship NeMo's German dictionary);
    /// `heteronyms: None` takes the embedded list (without `embedded-lexicons`: an
    /// error naming the file).
    pub fn german_from_files(dict: Option<&Path>, heteronyms: Option<&Path>) -> Result<Self> {
        let path = dict.ok_or_else(|| missing_lexicon(&GERMAN, GERMAN.dict_file))?;
        let dict = read_limited(path)?;
        let heteronyms = match heteronyms {
            Some(path) => read_limited(path)?,
            None => embedded_german_heteronyms()?,
        };
        let name = path.display().to_string();
        Self::for_v2602(GERMAN, &dict, &name, Some(&heteronyms))
    }

    /// Spanish from a dictionary file (`--lexicon FILE`, for a build without the
    /// embedded copy or another file with the checkpoint's table).
    pub fn spanish_from_file(dict: &Path) -> Result<Self> {
        let bytes = read_limited(dict)?;
        Self::for_v2602(SPANISH, &bytes, &dict.display().to_string(), None)
    }

    /// German from the dictionary as bytes and the embedded heteronym list.
    pub fn german_with_embedded_heteronyms(dict: &[u8]) -> Result<Self> {
        Self::german(dict, &embedded_german_heteronyms()?)
    }

    /// Any locale with the token table NeMo derives from the given dictionary, without
    /// comparing it to the checkpoint's: for other dictionaries and for tests (ids are
    /// then relative to [`table`](Self::table), not to a released model).
    pub fn with_derived_table(
        locale: IpaLocale,
        dict: &[u8],
        dict_file: &str,
        heteronyms: Option<&[u8]>,
    ) -> Result<Self> {
        let dict = utf8(dict, dict_file)?;
        let heteronyms = match heteronyms {
            Some(bytes) => Some(utf8(bytes, locale.heteronyms_file.unwrap_or("heteronyms"))?),
            None => None,
        };
        let lexicon = IpaLexicon::parse(
            dict,
            dict_file,
            heteronyms,
            locale.grapheme_case,
            locale.grapheme_prefix,
        )?;
        let table = SymbolTable::build(lexicon.symbols().iter(), locale.punctuation);
        Ok(IpaFrontEnd {
            locale,
            lexicon: Arc::new(lexicon),
            table: Arc::new(table),
        })
    }

    /// [`with_derived_table`](Self::with_derived_table), then the table must be v2602's.
    fn for_v2602(
        locale: IpaLocale,
        dict: &[u8],
        dict_file: &str,
        heteronyms: Option<&[u8]>,
    ) -> Result<Self> {
        let front = Self::with_derived_table(locale, dict, dict_file, heteronyms)?;
        if front.table.tokens() != locale.v2602_tokens {
            let derived: std::collections::BTreeSet<&str> =
                front.table.tokens().iter().map(String::as_str).collect();
            let released: std::collections::BTreeSet<&str> =
                locale.v2602_tokens.iter().copied().collect();
            let missing: Vec<&str> = released.difference(&derived).copied().collect();
            let extra: Vec<&str> = derived.difference(&released).copied().collect();
            return Err(TextError::Dictionary {
                file: dict_file.into(),
                line: None,
                reason: format!(
                    "is not the checkpoint's {} dictionary: its symbols give a {}-token table, \
                     not v2602's {} ({missing:?} missing, {extra:?} extra), so the ids would \
                     not be the model's; pass the checkpoint's own {} (sha256 {})",
                    locale.name,
                    front.table.len(),
                    locale.v2602_tokens.len(),
                    locale.dict_file,
                    locale.dict_sha256,
                ),
            });
        }
        Ok(front)
    }

    /// The locale's configuration.
    pub fn locale(&self) -> &IpaLocale {
        &self.locale
    }

    /// The token table the ids refer to.
    pub fn table(&self) -> &SymbolTable {
        &self.table
    }

    /// The G2P symbols of `text` (NeMo's `g2p(any_locale_text_preprocessing(text))`),
    /// before the tokenizer drops unknown ones.
    pub fn phonemes(&self, text: &str) -> Result<Vec<String>> {
        check_size(text)?;
        Ok(self.g2p(&any_locale_text_preprocessing(text)))
    }

    /// NeMo's `IPATokenizer.encode(text)` with `phoneme_probability = 1.0`.
    pub fn encode(&self, text: &str) -> Result<Encoded> {
        Ok(self.encode_from_g2p(&self.phonemes(text)?))
    }

    /// `IpaG2p.__call__` on preprocessed text.
    fn g2p(&self, text: &str) -> Vec<String> {
        let prefix = self.locale.grapheme_prefix;
        let mut out = Vec::with_capacity(text.len() * 2);
        for piece in word_pieces(text, is_word_char) {
            match piece {
                Piece::Unchanged(inner) => {
                    out.extend(inner.split(' ').map(|w| format!("{prefix}{w}")));
                }
                Piece::Word(word) | Piece::Other(word) => self.parse_with_hyphens(word, &mut out),
            }
        }
        out
    }

    /// An unhandled (out-of-vocabulary) word containing hyphens is parsed again piece
    /// by piece, the pieces joined by `-`.
    fn parse_with_hyphens(&self, word: &str, out: &mut Vec<String>) {
        let mark = out.len();
        if self.parse_one_word(word, out) || !word.contains('-') {
            return;
        }
        out.truncate(mark);
        for (k, sub) in word.split('-').enumerate() {
            if k > 0 {
                out.push("-".into());
            }
            self.parse_one_word(sub, out);
        }
    }

    /// `parse_one_word`: appends the word's symbols; false only for an
    /// out-of-vocabulary word (graphemes appended).
    fn parse_one_word(&self, word: &str, out: &mut Vec<String>) -> bool {
        let word = self.locale.grapheme_case.apply(word);
        // No letter or digit: the characters themselves, without prefix.
        if !word.chars().any(is_word_or_digit) {
            out.extend(word.chars().map(String::from));
            return true;
        }
        if self.lexicon.is_heteronym(&word) {
            self.push_graphemes(&word, out);
            return true;
        }
        let pron = self.lexicon.pronunciation(&word).or_else(|| {
            (self.locale.grapheme_case == GraphemeCase::Mixed)
                .then(|| self.lexicon.pronunciation(&py_upper(&word)))
                .flatten()
        });
        if let Some(pron) = pron {
            out.extend(pron.chars().map(String::from));
            return true;
        }
        self.push_graphemes(&word, out);
        false
    }

    fn push_graphemes(&self, word: &str, out: &mut Vec<String>) {
        let prefix = self.locale.grapheme_prefix;
        out.extend(word.chars().map(|c| format!("{prefix}{c}")));
    }

    /// `encode_from_g2p`: keeps every symbol of the table (spaces included, even
    /// repeated ones), reports the rest as dropped, strips trailing spaces, pads.
    fn encode_from_g2p(&self, symbols: &[String]) -> Encoded {
        let space = self.table.space_id();
        let prefix = self.locale.grapheme_prefix;
        let mut ids = Vec::with_capacity(symbols.len() + 2);
        let mut dropped = Vec::new();
        if self.locale.pad_with_space {
            ids.push(space);
        }
        for symbol in symbols {
            match self.table.id(symbol) {
                Some(id) => ids.push(id),
                None if symbol.is_empty() => {}
                None => {
                    let text = match symbol.strip_prefix(prefix) {
                        Some(rest) if !rest.is_empty() => rest,
                        _ => symbol.as_str(),
                    };
                    dropped.push(text.to_string());
                }
            }
        }
        let start = usize::from(self.locale.pad_with_space);
        while ids.len() > start && ids.last() == Some(&space) {
            ids.pop();
        }
        let speakable = ids.len() > start;
        if self.locale.pad_with_space {
            ids.push(space);
        }
        Encoded {
            ids,
            dropped,
            speakable,
        }
    }
}

/// The error for a dictionary rill does not have.
fn missing_lexicon(locale: &IpaLocale, file: &'static str) -> TextError {
    TextError::MissingLexicon {
        language: locale.name,
        file,
    }
}

fn embedded_german_heteronyms() -> Result<Vec<u8>> {
    #[cfg(feature = "embedded-lexicons")]
    {
        use crate::ipa_locales::embedded::{gunzip, GERMAN_HETERONYMS_GZ};
        Ok(gunzip(GERMAN_HETERONYMS_GZ))
    }
    #[cfg(not(feature = "embedded-lexicons"))]
    Err(missing_lexicon(&GERMAN, "de_nv230119.heteronym"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny_german() -> IpaFrontEnd {
        let dict = "Jahr  jˈaːɐ\nwar  vˈaːɐ\nim  ˈɪm\nAbend  ˈaːbənt\n";
        IpaFrontEnd::with_derived_table(GERMAN, dict.as_bytes(), "t.dict", Some(b"Abend\n"))
            .unwrap()
    }

    #[test]
    fn german_digits_take_the_spaces_with_them() {
        let front = tiny_german();
        let g2p = front.phonemes("im Jahr 2024 war").unwrap();
        let want = [
            "ˈ", "ɪ", "m", " ", "j", "ˈ", "a", "ː", "ɐ", "# ", "#2", "#0", "#2", "#4",
        ];
        assert_eq!(g2p[..want.len()], want);
        let enc = front.encode("im Jahr 2024 war").unwrap();
        assert_eq!(enc.dropped, [" ", "2", "0", "2", "4", " "]);
        assert!(enc.speakable);
        let space = front.table().space_id();
        assert_eq!((enc.ids[0], *enc.ids.last().unwrap()), (space, space));
    }

    #[test]
    fn heteronyms_case_and_spans() {
        let front = tiny_german();
        assert_eq!(
            front.phonemes("Abend").unwrap(),
            ["#A", "#b", "#e", "#n", "#d"]
        );
        // Not a heteronym as spelt: found through its upper-case copy.
        assert_eq!(front.phonemes("ABEND").unwrap().concat(), "ˈaːbənt");
        assert_eq!(front.phonemes("|ab c|").unwrap(), ["#ab", "#c"]);
        let enc = front.encode("€").unwrap();
        assert_eq!((enc.dropped, enc.speakable), (vec!["€".to_string()], false));
        assert_eq!(enc.ids.len(), 2);
    }

    #[test]
    fn missing_german_dictionary_names_the_file_and_flag() {
        let err = IpaFrontEnd::german_from_files(None, None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("de_nv230119.dict") && err.contains("--lexicon FILE"),
            "{err}"
        );
        let nowhere = Path::new("/nonexistent/de.dict");
        let err = IpaFrontEnd::german_from_files(Some(nowhere), None).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/de.dict"), "{err}");
        // A dictionary that is not the checkpoint's is refused, not used with wrong ids
        // (without the embedded heteronyms, their absence is the error).
        let err = IpaFrontEnd::german_with_embedded_heteronyms("Abend  ˈaːbənt\n".as_bytes())
            .unwrap_err()
            .to_string();
        let want = if cfg!(feature = "embedded-lexicons") {
            "not v2602's 150"
        } else {
            "de_nv230119.heteronym"
        };
        assert!(err.contains(want), "{err}");
    }

    #[test]
    fn odd_and_oversized_text() {
        let front = tiny_german();
        let odd = "\0\u{1c}\u{b}\r\n\t \u{feff}\u{200b}\u{fffd}\u{10ffff}e\u{301}\u{301}\u{301}|||";
        let enc = front.encode(odd).unwrap();
        assert!(enc.ids.iter().all(|&i| (i as usize) < front.table().len()));
        let long = "a".repeat(crate::MAX_TEXT_BYTES + 1);
        assert!(matches!(
            front.encode(&long),
            Err(TextError::TooLong { .. })
        ));
    }
}
