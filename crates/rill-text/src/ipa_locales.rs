//! The Spanish and German locales of Magpie v2602: NeMo's configuration, the
//! checkpoint's token tables, its data files and their hashes.

use crate::ipa_lexicon::GraphemeCase;

/// One IPA locale as `IpaG2p` + `IPATokenizer` are configured for it in Magpie v2602
/// (NVIDIA NeMo-Speech.cpp `load_tokenizer_profile`; spec `magpie_languages.md` §1, §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpaLocale {
    /// NeMo's locale code (`es-ES`, `de-DE`).
    pub code: &'static str,
    /// The language's name, for messages.
    pub name: &'static str,
    /// The sub-tokenizer's name in the aggregated vocabulary.
    pub tokenizer_name: &'static str,
    pub grapheme_case: GraphemeCase,
    /// Prepended to every grapheme (`#` in German, so `#a` differs from the phoneme `a`).
    pub grapheme_prefix: &'static str,
    /// `get_ipa_punctuation_list(locale)` (`ipa_lexicon.py`): NeMo's default marks plus
    /// the locale's own.
    pub punctuation: &'static [&'static str],
    /// A space token at both ends of every encoded text.
    pub pad_with_space: bool,
    /// The checkpoint's token table, in id order.
    pub v2602_tokens: &'static [&'static str],
    /// The checkpoint's pronunciation dictionary (a member of its `.nemo` archive).
    pub dict_file: &'static str,
    pub dict_sha256: &'static str,
    /// The checkpoint's heteronym list, if the locale has one.
    pub heteronyms_file: Option<&'static str>,
    pub heteronyms_sha256: Option<&'static str>,
}

/// NeMo's `DEFAULT_PUNCTUATION` (15 marks).
const DEFAULT_PUNCTUATION: [&str; 15] = [
    ",", ".", "!", "?", "-", ":", ";", "/", "\"", "(", ")", "[", "]", "{", "}",
];

/// `spanish_phoneme`: upper-case graphemes without prefix, no heteronyms.
pub const SPANISH: IpaLocale = IpaLocale {
    code: "es-ES",
    name: "Spanish",
    tokenizer_name: "spanish_phoneme",
    grapheme_case: GraphemeCase::Upper,
    grapheme_prefix: "",
    punctuation: &concat_punct::<21>(&["«", "»", "‹", "›", "¿", "¡"]),
    pad_with_space: true,
    v2602_tokens: &SPANISH_V2602_TOKENS,
    dict_file: "es_ES_nv230301.dict",
    dict_sha256: "94c9a25bb359f733cd863c887d0112e7ae19a744b0333ef64b6a88e576428669",
    heteronyms_file: None,
    heteronyms_sha256: None,
};

/// `german_phoneme`: mixed-case graphemes prefixed `#`, heteronyms.
pub const GERMAN: IpaLocale = IpaLocale {
    code: "de-DE",
    name: "German",
    tokenizer_name: "german_phoneme",
    grapheme_case: GraphemeCase::Mixed,
    grapheme_prefix: "#",
    punctuation: &concat_punct::<26>(&["«", "»", "‹", "›", "„", "“", "‚", "‘", "‒", "–", "—"]),
    pad_with_space: true,
    v2602_tokens: &GERMAN_V2602_TOKENS,
    dict_file: "de_nv230119.dict",
    dict_sha256: "5c7bbf3346ebd6dc57769b5cc805124215cb1bcc3b8174c4254e9e928c5d6094",
    heteronyms_file: Some("de_nv230119.heteronym"),
    heteronyms_sha256: Some("771cc585a574fd35bd14f4ce6108edf1e0e512a8dbc810db7de4c1165ba9d0ef"),
};

/// The default marks followed by `extra` (`N` = 15 + `extra.len()`, checked at compile time).
const fn concat_punct<const N: usize>(extra: &[&'static str]) -> [&'static str; N] {
    assert!(N == DEFAULT_PUNCTUATION.len() + extra.len());
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = if i < DEFAULT_PUNCTUATION.len() {
            DEFAULT_PUNCTUATION[i]
        } else {
            extra[i - DEFAULT_PUNCTUATION.len()]
        };
        i += 1;
    }
    out
}

/// v2602's `spanish_phoneme` table (103 symbols; NVIDIA NeMo-Speech.cpp `exact_ipa_tokens`,
/// equal to what NeMo 3.0.0 derives from `es_ES_nv230301.dict`).
#[rustfmt::skip]
pub const SPANISH_V2602_TOKENS: [&str; 103] = [
    "!", "\"", "'", "(", ")", ",", "-", ".", "/", ":", ";", "?", "A", "B", "C", "D", "E", "F",
    "G", "H", "I", "J", "K", "L", "M", "N", "O", "P", "Q", "R", "S", "T", "U", "V", "W", "X",
    "Y", "Z", "[", "]", "a", "b", "d", "e", "f", "h", "i", "j", "k", "l", "m", "n", "o", "p",
    "r", "s", "t", "u", "w", "x", "{", "}", "¡", "«", "»", "¿", "Á", "Ç", "É", "Í", "Î", "Ñ",
    "Ó", "Ö", "Ú", "Ü", "Ý", "ð", "ŋ", "ɛ", "ɟ", "ɡ", "ɣ", "ɪ", "ɲ", "ɾ", "ʃ", "ʊ", "ʎ", "ʒ",
    "ʝ", "ˈ", "ˌ", "ː", "\u{32f}", "\u{361}", "β", "θ", "‹", "›", " ", "<pad>", "<oov>",
];

/// v2602's `german_phoneme` table (150 symbols; NVIDIA NeMo-Speech.cpp `exact_ipa_tokens`,
/// what NeMo derives from the checkpoint's `de_nv230119.dict`).
#[rustfmt::skip]
pub const GERMAN_V2602_TOKENS: [&str; 150] = [
    "!", "\"", "#A", "#B", "#C", "#D", "#E", "#F", "#G", "#H", "#I", "#J", "#K", "#L", "#M",
    "#N", "#O", "#P", "#Q", "#R", "#S", "#T", "#U", "#V", "#W", "#X", "#Y", "#Z", "#a", "#b",
    "#c", "#d", "#e", "#f", "#g", "#h", "#i", "#j", "#k", "#l", "#m", "#n", "#o", "#p", "#q",
    "#r", "#s", "#t", "#u", "#v", "#w", "#x", "#y", "#z", "#Ä", "#Å", "#Ö", "#Ü", "#ß", "#à",
    "#á", "#ä", "#å", "#ç", "#è", "#é", "#ê", "#ë", "#í", "#ó", "#ö", "#ø", "#ü", "'", "(", ")",
    ",", "-", ".", "/", "1", ":", ";", "?", "[", "]", "a", "b", "d", "e", "f", "h", "i", "j",
    "k", "l", "m", "n", "o", "p", "r", "s", "t", "u", "v", "w", "x", "y", "z", "{", "}", "«",
    "»", "ç", "ð", "ø", "ŋ", "œ", "ɐ", "ɑ", "ɒ", "ɔ", "ə", "ɛ", "ɜ", "ɡ", "ɪ", "ɹ", "ɾ", "ʃ",
    "ʊ", "ʌ", "ʒ", "ˈ", "ˌ", "ː", "\u{303}", "θ", "‒", "–", "—", "‘", "‚", "“", "„", "‹", "›",
    " ", "<pad>", "<oov>",
];

/// The embedded checkpoint files (gzip; see `data/PROVENANCE.md`).
#[cfg(feature = "embedded-lexicons")]
pub(crate) mod embedded {
    use std::io::Read;

    pub static SPANISH_DICT_GZ: &[u8] = include_bytes!("../data/es_ES_nv230301.dict.gz");
    pub static GERMAN_HETERONYMS_GZ: &[u8] = include_bytes!("../data/de_nv230119.heteronym.gz");

    /// Decompresses an embedded file. The files are fixed and checked by the tests
    /// (hashes), so a failure is a build defect, not a user error.
    pub fn gunzip(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(bytes.len() * 4);
        flate2::read::GzDecoder::new(bytes)
            .read_to_end(&mut out)
            .expect("an embedded lexicon decompresses (checked by the tests)");
        out
    }
}
