//! The one table of Magpie's languages: how each is written in the released v2602
//! text vocabulary (tokenizer name as in the checkpoint's `text_tokenizers`, offset,
//! size), which front end encodes it and when NeMo splits its long texts into
//! sentences (`LanguageThresholds`, `split_by_sentence`; spec `magpie_languages.md`
//! §1, §4). Everything else (parsing a code, a checkpoint's vocabulary, sentence
//! splitting, the CLI's and server's lists) reads this table.

use std::fmt;
use std::str::FromStr;

use crate::TextError;

/// A language Magpie v2602 speaks. Parse it from a code (`"fr"`), a locale
/// (`"fr-FR"`) or an English name (`"French"`), any case; anything else is
/// [`TextError::UnknownLanguage`] listing the valid codes (NeMo falls back to English
/// silently; rill does not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub enum Language {
    #[default]
    English,
    Spanish,
    German,
    Mandarin,
    Japanese,
    French,
    Hindi,
    Italian,
    Vietnamese,
}

/// How a tokenizer turns text into ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrontEnd {
    /// NeMo's `IpaG2p` (CMU IPA dictionary) + `IPATokenizer`: built.
    EnglishIpa,
    /// `IpaG2p` es-ES + `IPATokenizer` (`pad_with_space`): built ([`crate::IpaFrontEnd`]).
    SpanishIpa,
    /// `IpaG2p` de-DE (mixed case, `#` graphemes, heteronyms): built
    /// ([`crate::IpaFrontEnd::german`]); its dictionary comes from the checkpoint's
    /// `.nemo` or `--lexicon` (rill cannot ship it).
    GermanIpa,
    /// jieba + pypinyin → `ChinesePhonemesTokenizer`: built ([`crate::mandarin`], feature
    /// `mandarin`).
    MandarinPinyin,
    /// pyopenjtalk (OpenJTalk's MeCab dictionary, read at run time) →
    /// `JapaneseKatakanaAccentG2p` → `JapanesePhonemeTokenizer`: built
    /// ([`crate::japanese`], feature `japanese`).
    JapaneseKatakana,
    /// Hugging Face `ByT5Tokenizer`: UTF-8 bytes + `</s>`. Built.
    ByT5,
    /// `HindiCharsTokenizer`, charset v1, punctuation v1. Built.
    HindiChars,
}

impl FrontEnd {
    /// Whether rill has this front end yet.
    pub fn is_built(self) -> bool {
        self.missing().is_none()
    }

    /// The pronunciation dictionary this front end reads that may have to come from
    /// the checkpoint or `--lexicon` (Spanish's is embedded unless the feature
    /// `embedded-lexicons` is off; German's is never embedded).
    pub fn dictionary(self) -> Option<&'static str> {
        match self {
            FrontEnd::SpanishIpa => Some(crate::SPANISH.dict_file),
            FrontEnd::GermanIpa => Some(crate::GERMAN.dict_file),
            _ => None,
        }
    }

    /// What is missing, for a front end that is not built.
    pub fn missing(self) -> Option<&'static str> {
        match self {
            FrontEnd::MandarinPinyin if !cfg!(feature = "mandarin") => Some(
                "rill was built without the feature `mandarin` (the jieba and pypinyin tables)",
            ),
            FrontEnd::JapaneseKatakana if !cfg!(feature = "japanese") => {
                Some("rill was built without the feature `japanese` (the OpenJTalk front end)")
            }
            _ => None,
        }
    }
}

/// How NeMo counts a text against its language's split threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitUnit {
    /// Python `len(text.split())`.
    Words,
    /// Characters that are not whitespace (zh; ja without pyopenjtalk).
    Chars,
}

/// One sub-tokenizer of a text vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tokenizer {
    /// The language it encodes (`None`: `text_ce_tokenizer`, context text only).
    pub language: Option<Language>,
    /// Its name in the checkpoint's `text_tokenizers`.
    pub name: &'static str,
    /// First id in the aggregated vocabulary.
    pub offset: u32,
    /// Number of ids.
    pub size: u32,
    pub front_end: FrontEnd,
}

/// One row of the language table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LanguageInfo {
    pub language: Language,
    /// NeMo's `do_tts(language=…)` code.
    pub code: &'static str,
    pub name: &'static str,
    /// The v2602 tokenizer name, offset and size.
    pub tokenizer: &'static str,
    pub offset: u32,
    pub size: u32,
    pub front_end: FrontEnd,
    /// Texts whose count reaches this are split into sentences.
    pub split_threshold: usize,
    pub split_unit: SplitUnit,
    /// Sentence endings that split without a following space (besides `. ? !`,
    /// which need one).
    pub native_endings: &'static [char],
    /// Locale spellings accepted besides the code and the name.
    aliases: &'static [&'static str],
}

const CJK_ENDINGS: &[char] = &['。', '？', '！', '…'];

/// Every language, in the v2602 vocabulary's order.
#[rustfmt::skip]
pub const LANGUAGES: [LanguageInfo; 9] = [
    row(Language::English, "en", "English", "english_phoneme", 0, 96, FrontEnd::EnglishIpa, 45, SplitUnit::Words, &[], &["en-us", "en_us"]),
    row(Language::Spanish, "es", "Spanish", "spanish_phoneme", 96, 103, FrontEnd::SpanishIpa, 73, SplitUnit::Words, &[], &["es-es", "es_es"]),
    row(Language::German, "de", "German", "german_phoneme", 199, 150, FrontEnd::GermanIpa, 50, SplitUnit::Words, &[], &["de-de", "de_de"]),
    row(Language::Mandarin, "zh", "Mandarin", "mandarin_phoneme", 349, 109, FrontEnd::MandarinPinyin, 100, SplitUnit::Chars, CJK_ENDINGS, &["zh-cn", "zh_cn", "chinese"]),
    // NeMo counts Japanese in pyopenjtalk words, falling back to characters.
    row(Language::Japanese, "ja", "Japanese", "japanese_phoneme", 458, 175, FrontEnd::JapaneseKatakana, 80, SplitUnit::Chars, CJK_ENDINGS, &["ja-jp", "ja_jp"]),
    row(Language::French, "fr", "French", "french_chartokenizer", 633, 384, FrontEnd::ByT5, 69, SplitUnit::Words, &[], &["fr-fr", "fr_fr"]),
    row(Language::Hindi, "hi", "Hindi", "hindi_chartokenizer", 1017, 191, FrontEnd::HindiChars, 50, SplitUnit::Words, &['।', '॥'], &["hi-in", "hi_in"]),
    row(Language::Italian, "it", "Italian", "italian_phoneme", 1208, 384, FrontEnd::ByT5, 53, SplitUnit::Words, &[], &["it-it", "it_it"]),
    row(Language::Vietnamese, "vi", "Vietnamese", "vietnamese_phoneme", 1592, 384, FrontEnd::ByT5, 50, SplitUnit::Words, &[], &["vi-vn", "vi_vn"]),
];

#[allow(clippy::too_many_arguments)]
const fn row(
    language: Language,
    code: &'static str,
    name: &'static str,
    tokenizer: &'static str,
    offset: u32,
    size: u32,
    front_end: FrontEnd,
    split_threshold: usize,
    split_unit: SplitUnit,
    native_endings: &'static [char],
    aliases: &'static [&'static str],
) -> LanguageInfo {
    LanguageInfo {
        language,
        code,
        name,
        tokenizer,
        offset,
        size,
        front_end,
        split_threshold,
        split_unit,
        native_endings,
        aliases,
    }
}

/// `text_ce_tokenizer`: the tenth v2602 table (ByT5, context text, no language).
pub const TEXT_CE: Tokenizer = Tokenizer {
    language: None,
    name: "text_ce_tokenizer",
    offset: 1976,
    size: 384,
    front_end: FrontEnd::ByT5,
};

/// BOS and EOS of v2602 (`len(tokens)` and `len(tokens) + 1`).
pub const V2602_BOS: u32 = 2360;
pub const V2602_EOS: u32 = 2361;

/// The ten sub-tokenizers of v2602 in `text_tokenizers` order.
pub fn v2602_tokenizers() -> [Tokenizer; 10] {
    let mut out = [TEXT_CE; 10];
    for (slot, l) in out.iter_mut().zip(LANGUAGES.iter()) {
        *slot = Tokenizer {
            language: Some(l.language),
            name: l.tokenizer,
            offset: l.offset,
            size: l.size,
            front_end: l.front_end,
        };
    }
    out
}

/// The v2602 `text_tokenizers` names in order: how a checkpoint is recognised.
pub fn v2602_tokenizer_names() -> [&'static str; 10] {
    v2602_tokenizers().map(|t| t.name)
}

/// `names` from a config whose key order carries nothing, in v2602's order when they
/// are v2602's ten names; any other list as it is. NeMo-Speech.cpp's converter writes
/// a GGUF's `magpietts.config_json` with sorted keys, so NVIDIA's own GGUF of v2602
/// lists its tokenizers alphabetically; its runtime, like NeMo, then uses v2602's
/// offsets. (A `.nemo`'s YAML keeps NeMo's order, which is read as it is.)
pub fn v2602_order_of_unordered(names: Vec<String>) -> Vec<String> {
    let v2602 = v2602_tokenizer_names();
    let mut sorted: Vec<&str> = names.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    let mut want = v2602;
    want.sort_unstable();
    if sorted == want {
        v2602.iter().map(|n| n.to_string()).collect()
    } else {
        names
    }
}

impl Language {
    /// Every language, in table order.
    pub const ALL: [Language; 9] = [
        Language::English,
        Language::Spanish,
        Language::German,
        Language::Mandarin,
        Language::Japanese,
        Language::French,
        Language::Hindi,
        Language::Italian,
        Language::Vietnamese,
    ];

    /// Its row of [`LANGUAGES`].
    pub fn info(self) -> &'static LanguageInfo {
        &LANGUAGES[self as usize]
    }

    /// The code NeMo's `do_tts` takes (`"en"`, `"fr"`, …).
    pub fn code(self) -> &'static str {
        self.info().code
    }

    /// The English name.
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// Whether rill can encode it (else [`TextError::LanguageNotBuilt`]).
    pub fn check_built(self) -> crate::Result<()> {
        match self.info().front_end.missing() {
            None => Ok(()),
            Some(why) => Err(TextError::LanguageNotBuilt {
                language: self.name(),
                code: self.code(),
                why,
            }),
        }
    }
}

/// `"en, es, de, …"`: the valid codes, for messages.
pub fn valid_codes() -> String {
    LANGUAGES
        .iter()
        .map(|l| l.code)
        .collect::<Vec<_>>()
        .join(", ")
}

impl FromStr for Language {
    type Err = TextError;

    fn from_str(name: &str) -> crate::Result<Self> {
        let key = name.trim().to_ascii_lowercase();
        LANGUAGES
            .iter()
            .find(|l| {
                l.code == key
                    || l.name.eq_ignore_ascii_case(&key)
                    || l.aliases.contains(&key.as_str())
            })
            .map(|l| l.language)
            .ok_or_else(|| TextError::UnknownLanguage {
                given: name.to_string(),
                valid: valid_codes(),
            })
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2602_names_in_any_order_are_put_in_v2602_order() {
        let v2602: Vec<String> = v2602_tokenizer_names()
            .iter()
            .map(|n| n.to_string())
            .collect();
        let mut sorted = v2602.clone();
        sorted.sort();
        assert_ne!(sorted, v2602, "v2602's order is not alphabetical");
        assert_eq!(v2602_order_of_unordered(sorted.clone()), v2602);
        assert_eq!(v2602_order_of_unordered(v2602.clone()), v2602);
        // Another list (one missing, or another name) stays as it is.
        let nine = sorted[1..].to_vec();
        assert_eq!(v2602_order_of_unordered(nine.clone()), nine);
        let mut other = sorted.clone();
        other[0] = "klingon_phoneme".into();
        assert_eq!(v2602_order_of_unordered(other.clone()), other);
        assert_eq!(
            v2602_order_of_unordered(vec!["english_phoneme".into()]),
            ["english_phoneme"]
        );
    }

    #[test]
    fn table_is_contiguous_and_ends_at_bos() {
        let t = v2602_tokenizers();
        let mut next = 0;
        for tok in t {
            assert_eq!(tok.offset, next, "{}", tok.name);
            next += tok.size;
        }
        assert_eq!((next, next + 1), (V2602_BOS, V2602_EOS));
        for (i, l) in Language::ALL.iter().enumerate() {
            assert_eq!(*l as usize, i);
            assert_eq!(l.info().language, *l);
            assert_eq!(l.code().parse::<Language>().unwrap(), *l);
            assert_eq!(l.name().to_uppercase().parse::<Language>().unwrap(), *l);
        }
    }
}
