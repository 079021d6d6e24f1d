//! Text of any built language → Magpie token ids, with one report of what could not
//! be encoded. [`TextFrontEnd`] dispatches on the language table's [`FrontEnd`]:
//! English through [`EnglishFrontEnd`], Spanish through [`IpaFrontEnd`], fr/it/vi
//! through [`crate::byt5`], Hindi through [`crate::hindi`]; languages whose front end is not built yet are refused
//! with [`TextError::LanguageNotBuilt`], languages the checkpoint has no table for
//! with [`TextError::LanguageNotInCheckpoint`].

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::languages::{FrontEnd, Language};
use crate::sentences::{needs_splitting_in, split_sentences_in};
use crate::{
    byt5, check_size, excerpt, hindi, py_blank, EnglishFrontEnd, IpaFrontEnd, Lexicon, Result,
    TextError, TextVocabulary, MAX_UTTERANCE_TOKENS,
};

/// Utterances to synthesise, and every character a front end had to leave out.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Utterances {
    /// Token ids per utterance, EOS last.
    pub utterances: Vec<Vec<u32>>,
    /// Characters dropped, each once, in code-point order (empty: nothing lost).
    pub dropped: Vec<char>,
}

/// `"'—' (U+2014), '😀' (U+1F600)"`: dropped characters for a message.
pub fn describe_dropped(dropped: &[char]) -> String {
    dropped
        .iter()
        .map(|&c| {
            if c.is_control() || c.is_whitespace() {
                format!("U+{:04X}", c as u32)
            } else {
                format!("'{c}' (U+{:04X})", c as u32)
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The multilingual front end of one checkpoint's vocabulary.
#[derive(Debug, Clone)]
pub struct TextFrontEnd {
    english: EnglishFrontEnd,
    vocabulary: TextVocabulary,
    max_utterance_tokens: usize,
}

impl TextFrontEnd {
    /// With the embedded English dictionary.
    pub fn new(vocabulary: TextVocabulary) -> Self {
        Self::with_lexicon(Lexicon::embedded(), vocabulary)
    }

    /// With an English dictionary loaded elsewhere (e.g. a `.nemo`'s members).
    pub fn with_lexicon(lexicon: Arc<Lexicon>, vocabulary: TextVocabulary) -> Self {
        TextFrontEnd {
            english: EnglishFrontEnd::with_lexicon(lexicon, vocabulary),
            vocabulary,
            max_utterance_tokens: MAX_UTTERANCE_TOKENS,
        }
    }

    /// Sets the longest utterance (EOS included) accepted.
    pub fn with_max_utterance_tokens(mut self, max: usize) -> Self {
        self.english = self.english.with_max_utterance_tokens(max);
        self.max_utterance_tokens = max;
        self
    }

    pub fn vocabulary(&self) -> TextVocabulary {
        self.vocabulary
    }

    /// The English front end (for its G2P symbols).
    pub fn english(&self) -> &EnglishFrontEnd {
        &self.english
    }

    /// Languages this checkpoint has a table for and rill can encode, in table order.
    pub fn languages(&self) -> Vec<Language> {
        self.vocabulary
            .languages()
            .into_iter()
            .filter(|l| l.check_built().is_ok())
            .collect()
    }

    /// Whether `language` can be spoken with this checkpoint; the error says why not.
    pub fn check(&self, language: Language) -> Result<u32> {
        let offset = self.vocabulary.offset(language)?;
        language.check_built()?;
        Ok(offset)
    }

    /// Token ids of `text` in `language` without EOS, offset applied (NeMo's
    /// `AggregatedTTSTokenizer.encode`); skipped characters go to `dropped`.
    pub fn token_ids(
        &self,
        text: &str,
        language: Language,
        dropped: &mut Vec<char>,
    ) -> Result<Vec<u32>> {
        check_size(text)?;
        let offset = self.check(language)?;
        let ids = match language.info().front_end {
            FrontEnd::EnglishIpa => {
                return self.english.token_ids_reporting(text, dropped);
            }
            FrontEnd::SpanishIpa => {
                let e = IpaFrontEnd::spanish()?.encode(text)?;
                // The grapheme prefix is already removed; spaces are never reported.
                dropped.extend(
                    e.dropped
                        .iter()
                        .flat_map(|s| s.chars())
                        .filter(|&c| c != ' '),
                );
                e.ids
            }
            FrontEnd::ByT5 => byt5::encode(text),
            FrontEnd::HindiChars => hindi::encode(text, dropped),
            other => {
                // `check` refused these already.
                return Err(TextError::LanguageNotBuilt {
                    language: language.name(),
                    code: language.code(),
                    why: other.missing().unwrap_or("no front end"),
                });
            }
        };
        Ok(ids.into_iter().map(|id| id + offset).collect())
    }

    /// One utterance: ids + EOS.
    fn utterance(
        &self,
        text: &str,
        language: Language,
        dropped: &mut Vec<char>,
    ) -> Result<Vec<u32>> {
        if py_blank(text) {
            return Err(TextError::Empty);
        }
        let mut ids = self.token_ids(text, language, dropped)?;
        if !speaks_something(&ids, language, self.vocabulary) {
            return Err(nothing_encodable(text, language));
        }
        ids.push(self.vocabulary.eos_id());
        if ids.len() > self.max_utterance_tokens {
            return Err(TextError::UtteranceTooLong {
                tokens: ids.len(),
                max: self.max_utterance_tokens,
                excerpt: excerpt(text),
            });
        }
        Ok(ids)
    }

    /// One utterance without sentence splitting, with its report.
    pub fn encode(&self, text: &str, language: Language) -> Result<Utterances> {
        check_size(text)?;
        let mut dropped = Vec::new();
        let ids = self.utterance(text, language, &mut dropped)?;
        Ok(Utterances {
            utterances: vec![ids],
            dropped: unique(dropped),
        })
    }

    /// Utterances to synthesise one after the other: texts that reach the language's
    /// split threshold are split into sentences where NeMo's `split_by_sentence`
    /// would; a sentence with nothing speakable is left out (its characters are in
    /// the report); if none is left, this fails.
    pub fn encode_utterances(&self, text: &str, language: Language) -> Result<Utterances> {
        check_size(text)?;
        self.check(language)?;
        if py_blank(text) {
            return Err(TextError::Empty);
        }
        let mut dropped = Vec::new();
        if !needs_splitting_in(text, language) {
            let ids = self.utterance(text, language, &mut dropped)?;
            return Ok(Utterances {
                utterances: vec![ids],
                dropped: unique(dropped),
            });
        }
        let mut utterances = Vec::new();
        for sentence in split_sentences_in(text, language) {
            match self.utterance(&sentence, language, &mut dropped) {
                Ok(ids) => utterances.push(ids),
                Err(
                    TextError::Unencodable(_)
                    | TextError::NothingEncodable { .. }
                    | TextError::Empty,
                ) => {}
                Err(other) => return Err(other),
            }
        }
        if utterances.is_empty() {
            return Err(nothing_encodable(text, language));
        }
        Ok(Utterances {
            utterances,
            dropped: unique(dropped),
        })
    }
}

/// The error for a text with nothing to speak (English keeps its own message).
fn nothing_encodable(text: &str, language: Language) -> TextError {
    match language {
        Language::English => TextError::Unencodable(excerpt(text)),
        _ => TextError::NothingEncodable {
            language: language.name(),
            excerpt: excerpt(text),
        },
    }
}

/// Whether `ids` (offset applied, no EOS) hold anything but spaces and ByT5's `</s>`.
fn speaks_something(ids: &[u32], language: Language, vocabulary: TextVocabulary) -> bool {
    let Ok(offset) = vocabulary.offset(language) else {
        return false;
    };
    ids.iter().any(|&id| {
        let local = id - offset;
        match language.info().front_end {
            FrontEnd::HindiChars => local != 0,
            FrontEnd::SpanishIpa => {
                IpaFrontEnd::spanish().is_ok_and(|f| local != f.table().space_id())
            }
            FrontEnd::ByT5 => local != byt5::EOS,
            _ => true,
        }
    })
}

fn unique(chars: Vec<char>) -> Vec<char> {
    chars
        .into_iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}
