//! The text front end of Magpie TTS: text → token ids for the text encoder.
//!
//! [`LANGUAGES`] is the one table of Magpie's languages (v2602 tokenizer names,
//! offsets, sizes, front ends, sentence-split thresholds); [`TextVocabulary`] says
//! which of them a checkpoint has; [`TextFrontEnd`] encodes any built one and reports
//! the characters it had to drop. Built: English, Spanish and German ([`IpaFrontEnd`]),
//! French, Italian, Vietnamese (ByT5, [`byt5`]), Hindi ([`hindi`]) and Mandarin
//! ([`mandarin`], feature `mandarin`) and Japanese ([`japanese`], feature `japanese`,
//! on OpenJTalk's dictionary read at run time: without it
//! [`TextError::MissingJapaneseDictionary`]).
//!
//! English reproduces NeMo's `english_phoneme` tokenizer of the released
//! checkpoints (spec §3): `english_text_preprocessing` → `IpaG2p` with the CMU IPA
//! dictionary and heteronym list, deterministic (`phoneme_probability = 1.0`, spec trap
//! T2) → `IPATokenizer.encode_from_g2p` → ids + EOS, no BOS (trap T8). The two data
//! files are embedded (`data/`, parsed once on first use) or can be passed as bytes,
//! e.g. from a `.nemo` archive. The EOS id comes from the model's vocabulary size
//! ([`TextVocabulary`]), never a constant (trap T21).
//!
//! Spanish and German ([`IpaFrontEnd`]): NeMo 3.0.0's `IpaG2p` + `IPATokenizer` for any
//! locale (`spanish_phoneme`, `german_phoneme` of v2602, spec `magpie_languages.md` §3),
//! returning locale-relative ids (the caller adds the language's offset and EOS) and the
//! symbols the table lacks ([`Encoded`]). The Spanish dictionary and the German heteronyms
//! are embedded (feature `embedded-lexicons`); NeMo's German dictionary is not
//! redistributable here and comes from the checkpoint or a file.
//!
//! Long texts: [`EnglishFrontEnd::encode_utterances`] splits them into sentences where
//! NeMo would ([`split_sentences`], spec §3.3); each is synthesised as its own utterance.
//!
//! Exactness: every id and G2P symbol equals upstream's on the oracle's recordings and
//! on 633 more texts run through NeMo's own code (`testdata/magpie/`). Python's Unicode
//! behaviour (NFD/NFC, `\d`, `isspace`, `upper`) is reproduced on Python 3.11's tables
//! (Unicode 14.0, `tools/gen_unicode_tables.py`), so no regex or Unicode crate is needed.
//!
//! Where rill differs from NeMo, on purpose: text that is empty or has nothing speakable
//! is an error (NeMo feeds EOS alone, or raises `IndexError` when only spaces are left);
//! [`EnglishFrontEnd::encode_utterances`] leaves such sentences out; input is bounded
//! ([`MAX_TEXT_BYTES`], [`MAX_UTTERANCE_TOKENS`]). Short inputs are not padded (NeMo-Speech.cpp's
//! addition, not NeMo's: trap T8).
//!
//! ```
//! use rill_text::{EnglishFrontEnd, TextVocabulary};
//! let front = EnglishFrontEnd::new(TextVocabulary::v2602());
//! let ids = front.encode("Hello world.").unwrap();
//! assert_eq!(ids.last(), Some(&2361));
//! ```

#![deny(unsafe_op_in_unsafe_fn)]

pub mod byt5;
mod front_end;
mod g2p;
pub mod hindi;
mod ipa;
mod ipa_lexicon;
mod ipa_locales;
#[cfg(feature = "japanese")]
pub mod japanese;
mod languages;
mod lexicon;
pub mod mandarin;
pub mod normalize;
mod sentences;
mod tokenizer;
mod unicode;
mod utterance;
mod word_table;
#[rustfmt::skip]
mod unicode_tables;

use std::path::PathBuf;
use std::sync::Arc;

pub use front_end::{describe_dropped, TextFrontEnd, Utterances};
pub use languages::{
    v2602_order_of_unordered, v2602_tokenizer_names, v2602_tokenizers, valid_codes, FrontEnd,
    Language, LanguageInfo, SplitUnit, Tokenizer, LANGUAGES, TEXT_CE, V2602_BOS, V2602_EOS,
};

pub use ipa::{any_locale_text_preprocessing, Encoded, IpaFrontEnd, SymbolTable};
pub use ipa_lexicon::{GraphemeCase, IpaLexicon};
pub use ipa_locales::{IpaLocale, GERMAN, GERMAN_V2602_TOKENS, SPANISH, SPANISH_V2602_TOKENS};
pub use lexicon::{
    Lexicon, EMBEDDED_HETERONYMS, EMBEDDED_IPA_DICT, HETERONYMS_FILE, HETERONYMS_SHA256,
    IPA_DICT_FILE, IPA_DICT_SHA256, MAX_DICT_BYTES,
};
pub use sentences::{
    count_for_split, needs_splitting, needs_splitting_in, split_sentences, split_sentences_in,
    word_count, SPLIT_THRESHOLD_WORDS,
};
pub use tokenizer::{
    encode_from_g2p, encode_from_g2p_reporting, token_id, TextLayout, TextVocabulary,
    ENGLISH_TOKENS, PAD_ID, SPACE_ID,
};
pub use unicode::english_text_preprocessing;
/// Unicode version of the tables (that of the Python 3.11 which ran the oracle).
pub use unicode_tables::UNICODE_VERSION;

/// Longest text accepted by one call, in UTF-8 bytes (64 KiB ≈ 10,000 English words,
/// over an hour of speech). Longer input is rejected, not truncated: send it in parts.
pub const MAX_TEXT_BYTES: usize = 64 * 1024;

/// Most tokens (EOS included) in one utterance by default: the text encoder's learned
/// position table has 2048 rows (`max_length_causal_mask`, spec §1.2).
pub const MAX_UTTERANCE_TOKENS: usize = 2048;

/// Errors of the text front end; each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum TextError {
    #[error("unknown language {given:?}: valid codes are {valid}")]
    UnknownLanguage { given: String, valid: String },
    #[error("{language} ({code}) is not supported yet: {why}")]
    LanguageNotBuilt {
        language: &'static str,
        code: &'static str,
        why: &'static str,
    },
    #[error(
        "this checkpoint has no {language} ({code}) text table: only v2602's (2362 text \
         rows) has every language; this one speaks English only"
    )]
    LanguageNotInCheckpoint {
        language: &'static str,
        code: &'static str,
    },
    #[error(
        "the text has nothing the {language} tokenizer can encode (is it in another \
         script?): {excerpt:?}"
    )]
    NothingEncodable {
        language: &'static str,
        excerpt: String,
    },
    #[error("the text is empty: give at least one word to speak")]
    Empty,
    #[error(
        "the text has nothing the English tokenizer can speak (all of its characters are \
         outside the 96-symbol English table): {0:?}"
    )]
    Unencodable(String),
    #[error("the text is {bytes} bytes, more than the {max} one call accepts: send it in parts")]
    TooLong { bytes: usize, max: usize },
    #[error(
        "an utterance of {tokens} tokens is longer than the {max} the model takes: split the \
         text into shorter sentences (. ? !, and in Chinese and Japanese 。？！, end a sentence): {excerpt:?}"
    )]
    UtteranceTooLong {
        tokens: usize,
        max: usize,
        excerpt: String,
    },
    /// A dictionary or heteronym file that cannot be used; `line` is 1-based.
    #[error("{file}{}: {reason}", .line.map(|l| format!(", line {l}")).unwrap_or_default())]
    Dictionary {
        file: String,
        line: Option<usize>,
        reason: String,
    },
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A locale's pronunciation dictionary that rill does not have (German's cannot be
    /// shipped; Spanish's is embedded unless the `embedded-lexicons` feature is off).
    #[error(
        "{language} needs NeMo's pronunciation dictionary {file}, which this build of rill \
         does not contain: rill reads it from the Magpie checkpoint's .nemo archive (give \
         --checkpoint magpie_tts_multilingual_357m.nemo); with a GGUF or random weights, \
         pass the file with --lexicon FILE (unpack it from the .nemo with \
         `tar -xf magpie_tts_multilingual_357m.nemo --wildcards '*{file}'`)"
    )]
    MissingLexicon {
        language: &'static str,
        file: &'static str,
    },
    /// A language whose dictionary came with the checkpoint but cannot be used
    /// (the other languages still work).
    #[error("{language} cannot be spoken with this checkpoint: {reason}")]
    LanguageUnavailable {
        language: &'static str,
        reason: String,
    },
    /// Japanese without OpenJTalk's dictionary (it is not built into rill).
    #[error(
        "Japanese needs OpenJTalk's MeCab dictionary, which rill does not contain: install \
         Debian/Ubuntu's open-jtalk-mecab-naist-jdic (or unpack pyopenjtalk's \
         open_jtalk_dic_utf_8-1.11) and pass --japanese-dictionary DIR or set \
         OPEN_JTALK_DICT_DIR{}",
        .reason.as_ref().map(|r| format!(" ({r})")).unwrap_or_default()
    )]
    MissingJapaneseDictionary { reason: Option<String> },
    #[error("invalid text vocabulary: {0}")]
    InvalidVocabulary(String),
}

pub type Result<T> = std::result::Result<T, TextError>;

/// English text → Magpie token ids.
#[derive(Debug, Clone)]
pub struct EnglishFrontEnd {
    lexicon: Arc<Lexicon>,
    vocabulary: TextVocabulary,
    max_utterance_tokens: usize,
}

impl EnglishFrontEnd {
    /// With the embedded dictionary (parsed on first use in the process, then shared).
    pub fn new(vocabulary: TextVocabulary) -> Self {
        Self::with_lexicon(Lexicon::embedded(), vocabulary)
    }

    /// With a dictionary loaded elsewhere (e.g. from a `.nemo` archive's members).
    pub fn with_lexicon(lexicon: Arc<Lexicon>, vocabulary: TextVocabulary) -> Self {
        EnglishFrontEnd {
            lexicon,
            vocabulary,
            max_utterance_tokens: MAX_UTTERANCE_TOKENS,
        }
    }

    /// Sets the longest utterance (EOS included) that [`encode`](Self::encode) accepts.
    pub fn with_max_utterance_tokens(mut self, max: usize) -> Self {
        self.max_utterance_tokens = max;
        self
    }

    /// The vocabulary the ids refer to.
    pub fn vocabulary(&self) -> TextVocabulary {
        self.vocabulary
    }

    /// The G2P symbols of `text` (NeMo's `g2p(text_preprocessing_func(text))`), before
    /// the tokenizer drops unknown symbols.
    pub fn phonemes(&self, text: &str) -> Result<Vec<String>> {
        check_size(text)?;
        let text = english_text_preprocessing(text);
        Ok(g2p::g2p(&self.lexicon, &text))
    }

    /// The English token ids of `text` without EOS (NeMo's `tokenizer.encode`), with
    /// the vocabulary's English offset applied. May be empty.
    pub fn token_ids(&self, text: &str) -> Result<Vec<u32>> {
        self.token_ids_reporting(text, &mut Vec::new())
    }

    /// [`token_ids`](Self::token_ids) that also collects the characters of the G2P
    /// symbols the tokenizer drops (`—`, `$`, emoji, other scripts, …).
    pub fn token_ids_reporting(&self, text: &str, dropped: &mut Vec<char>) -> Result<Vec<u32>> {
        let offset = self.vocabulary.english_offset();
        let ids = encode_from_g2p_reporting(&self.phonemes(text)?, dropped);
        Ok(ids.into_iter().map(|id| id + offset).collect())
    }

    /// One utterance: token ids + EOS, what the text encoder takes (no BOS).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        check_size(text)?;
        self.rules().utterance(
            text,
            || {
                let ids = self.token_ids(text)?;
                let speaks = !ids.is_empty();
                Ok((ids, speaks))
            },
            || TextError::Unencodable(excerpt(text)),
        )
    }

    fn rules(&self) -> utterance::Rules {
        utterance::Rules {
            eos: self.vocabulary.eos_id(),
            max_tokens: self.max_utterance_tokens,
        }
    }

    /// Utterances to synthesise one after the other, each ids + EOS. Texts of
    /// [`SPLIT_THRESHOLD_WORDS`] words or more are split into sentences (NeMo's
    /// `chunk_text_for_inference`); shorter texts are one utterance. A sentence with
    /// nothing speakable (only emoji, say) is left out; if none is left, this fails.
    pub fn encode_utterances(&self, text: &str) -> Result<Vec<Vec<u32>>> {
        check_size(text)?;
        utterance::utterances(
            text,
            needs_splitting(text).then(|| split_sentences(text)),
            |t| self.encode(t),
            || TextError::Unencodable(excerpt(text)),
        )
    }
}

fn check_size(text: &str) -> Result<()> {
    if text.len() > MAX_TEXT_BYTES {
        return Err(TextError::TooLong {
            bytes: text.len(),
            max: MAX_TEXT_BYTES,
        });
    }
    Ok(())
}

fn py_blank(text: &str) -> bool {
    unicode::py_strip(text).is_empty()
}

/// The start of a text for an error message.
fn excerpt(text: &str) -> String {
    const MAX_CHARS: usize = 60;
    let mut out: String = text.chars().take(MAX_CHARS).collect();
    if text.chars().nth(MAX_CHARS).is_some() {
        out.push('…');
    }
    out
}
