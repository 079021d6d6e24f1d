//! Text of any built language → Magpie token ids, with one report of what could not
//! be encoded. [`TextFrontEnd`] dispatches on the language table's [`FrontEnd`]:
//! English through [`EnglishFrontEnd`], Spanish and German through [`IpaFrontEnd`]
//! (their dictionaries from the checkpoint, `--lexicon`, or for Spanish the embedded
//! copy), fr/it/vi through [`crate::byt5`], Hindi through [`crate::hindi`], Mandarin
//! through [`crate::mandarin`] (feature `mandarin`), Japanese through
//! [`crate::japanese`] (feature `japanese`, its dictionary set with
//! [`TextFrontEnd::with_japanese`]); languages
//! whose front end is not built yet are refused with [`TextError::LanguageNotBuilt`],
//! languages the checkpoint has no table for with
//! [`TextError::LanguageNotInCheckpoint`], a missing dictionary with
//! [`TextError::MissingLexicon`].

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::languages::{FrontEnd, Language};
use crate::sentences::{needs_splitting_in, split_sentences_in};
use crate::utterance::{utterances, Rules};
use crate::{
    byt5, check_size, excerpt, hindi, EnglishFrontEnd, IpaFrontEnd, Lexicon, Result, TextError,
    TextVocabulary, MAX_UTTERANCE_TOKENS,
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
    /// Spanish's front end when its dictionary came from the checkpoint or a file
    /// (else the embedded one), or why that dictionary cannot be used.
    spanish: Option<std::result::Result<IpaFrontEnd, String>>,
    /// German's, likewise (German has no embedded dictionary).
    german: Option<std::result::Result<IpaFrontEnd, String>>,
    /// Japanese's, or why its dictionary cannot be used.
    #[cfg(feature = "japanese")]
    japanese: Option<std::result::Result<crate::japanese::JapaneseFrontEnd, String>>,
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
            spanish: None,
            german: None,
            #[cfg(feature = "japanese")]
            japanese: None,
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

    /// Sets `language`'s IPA front end (Spanish or German: its dictionary from the
    /// checkpoint's `.nemo` or `--lexicon`), replacing any set before. An error (a
    /// dictionary that cannot be used) is kept and reported when that language is
    /// asked for; the other languages still work.
    pub fn with_ipa<E: std::fmt::Display>(
        mut self,
        language: Language,
        front: std::result::Result<IpaFrontEnd, E>,
    ) -> Self {
        let front = front.map_err(|e| e.to_string());
        match language.info().front_end {
            FrontEnd::SpanishIpa => self.spanish = Some(front),
            FrontEnd::GermanIpa => self.german = Some(front),
            // Only the IPA locales read a dictionary; nothing to set for the others.
            _ => {}
        }
        self
    }

    /// Sets the Japanese front end (OpenJTalk's dictionary, e.g. from
    /// [`crate::japanese::JapaneseFrontEnd::open`] on `--japanese-dictionary DIR` or
    /// [`crate::japanese::JapaneseFrontEnd::default_dir`]), replacing any set before. An
    /// error is kept and reported when Japanese is asked for; the other languages still
    /// work.
    #[cfg(feature = "japanese")]
    pub fn with_japanese<E: std::fmt::Display>(
        mut self,
        front: std::result::Result<crate::japanese::JapaneseFrontEnd, E>,
    ) -> Self {
        self.japanese = Some(front.map_err(|e| e.to_string()));
        self
    }

    /// With the Japanese front end on the machine's OpenJTalk dictionary
    /// (`JapaneseFrontEnd::default_dir`: `$OPEN_JTALK_DICT_DIR`, else Debian's
    /// package folder) when there is one; a dictionary there that cannot be read is
    /// kept as the reason Japanese is unavailable. Unchanged without the `japanese`
    /// feature.
    pub fn with_installed_japanese(self) -> Self {
        #[cfg(feature = "japanese")]
        {
            use crate::japanese::JapaneseFrontEnd;
            if let Some(dir) = JapaneseFrontEnd::default_dir() {
                return self.with_japanese(JapaneseFrontEnd::open(&dir));
            }
        }
        self
    }

    /// The Japanese front end, or what to do to get one.
    #[cfg(feature = "japanese")]
    fn japanese(&self) -> Result<&crate::japanese::JapaneseFrontEnd> {
        match &self.japanese {
            Some(Ok(front)) => Ok(front),
            Some(Err(reason)) => Err(TextError::MissingJapaneseDictionary {
                reason: Some(reason.clone()),
            }),
            None => Err(TextError::MissingJapaneseDictionary { reason: None }),
        }
    }

    /// Whether NeMo would split `text` into sentences: Japanese counts pyopenjtalk
    /// words when its front end is at hand.
    fn needs_splitting(&self, text: &str, language: Language) -> bool {
        #[cfg(feature = "japanese")]
        if language.info().front_end == FrontEnd::JapaneseKatakana {
            if let Ok(front) = self.japanese() {
                return front.word_count(text) >= language.info().split_threshold;
            }
        }
        needs_splitting_in(text, language)
    }

    /// The IPA front end of Spanish or German.
    fn ipa(&self, language: Language) -> Result<IpaFrontEnd> {
        let (set, missing) = match language.info().front_end {
            FrontEnd::SpanishIpa => (&self.spanish, None),
            FrontEnd::GermanIpa => (&self.german, Some(crate::GERMAN.dict_file)),
            _ => {
                return Err(TextError::LanguageNotBuilt {
                    language: language.name(),
                    code: language.code(),
                    why: "it has no IPA front end",
                })
            }
        };
        match set {
            Some(Ok(front)) => Ok(front.clone()),
            Some(Err(reason)) => Err(TextError::LanguageUnavailable {
                language: language.name(),
                reason: reason.clone(),
            }),
            None => match missing {
                Some(file) => Err(TextError::MissingLexicon {
                    language: language.name(),
                    file,
                }),
                None => IpaFrontEnd::spanish(),
            },
        }
    }

    /// Whether `language`'s dictionary is at hand (always, for languages without one).
    fn has_dictionary(&self, language: Language) -> bool {
        match language.info().front_end {
            FrontEnd::SpanishIpa => match &self.spanish {
                Some(set) => set.is_ok(),
                None => cfg!(feature = "embedded-lexicons"),
            },
            FrontEnd::GermanIpa => matches!(self.german, Some(Ok(_))),
            #[cfg(feature = "japanese")]
            FrontEnd::JapaneseKatakana => matches!(self.japanese, Some(Ok(_))),
            _ => true,
        }
    }

    pub fn vocabulary(&self) -> TextVocabulary {
        self.vocabulary
    }

    /// The English front end (for its G2P symbols).
    pub fn english(&self) -> &EnglishFrontEnd {
        &self.english
    }

    /// Languages this checkpoint has a table for and rill can encode (their
    /// dictionaries at hand), in table order.
    pub fn languages(&self) -> Vec<Language> {
        self.vocabulary
            .languages()
            .into_iter()
            .filter(|&l| l.check_built().is_ok() && self.has_dictionary(l))
            .collect()
    }

    /// Whether `language` can be spoken with this checkpoint; the error says why not.
    pub fn check(&self, language: Language) -> Result<u32> {
        let offset = self.vocabulary.offset(language)?;
        language.check_built()?;
        if !self.has_dictionary(language) {
            #[cfg(feature = "japanese")]
            if language.info().front_end == FrontEnd::JapaneseKatakana {
                self.japanese()?;
            }
            self.ipa(language)?;
        }
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
            FrontEnd::SpanishIpa | FrontEnd::GermanIpa => {
                let e = self.ipa(language)?.encode(text)?;
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
            #[cfg(feature = "mandarin")]
            FrontEnd::MandarinPinyin => {
                crate::mandarin::MandarinFrontEnd::embedded().encode(text, dropped)
            }
            #[cfg(feature = "japanese")]
            FrontEnd::JapaneseKatakana => self.japanese()?.encode(text, dropped),
            // Reached when a feature is off.
            #[allow(unreachable_patterns)]
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
        let rules = Rules {
            eos: self.vocabulary.eos_id(),
            max_tokens: self.max_utterance_tokens,
        };
        rules.utterance(
            text,
            || {
                let ids = self.token_ids(text, language, dropped)?;
                let speaks = self.speaks_something(&ids, language);
                Ok((ids, speaks))
            },
            || nothing_encodable(text, language),
        )
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
        let mut dropped = Vec::new();
        let utterances = utterances(
            text,
            self.needs_splitting(text, language)
                .then(|| split_sentences_in(text, language)),
            |t| self.utterance(t, language, &mut dropped),
            || nothing_encodable(text, language),
        )?;
        Ok(Utterances {
            utterances,
            dropped: unique(dropped),
        })
    }

    /// Whether `ids` (offset applied, no EOS) hold anything but spaces and ByT5's
    /// `</s>`.
    fn speaks_something(&self, ids: &[u32], language: Language) -> bool {
        let Ok(offset) = self.vocabulary.offset(language) else {
            return false;
        };
        let space = match language.info().front_end {
            FrontEnd::SpanishIpa | FrontEnd::GermanIpa => {
                self.ipa(language).ok().map(|f| f.table().space_id())
            }
            _ => None,
        };
        ids.iter().any(|&id| {
            let local = id - offset;
            match language.info().front_end {
                // The space (0) pads every Mandarin, Japanese and Hindi text.
                FrontEnd::HindiChars | FrontEnd::MandarinPinyin | FrontEnd::JapaneseKatakana => {
                    local != 0
                }
                FrontEnd::SpanishIpa | FrontEnd::GermanIpa => Some(local) != space,
                FrontEnd::ByT5 => local != byt5::EOS,
                _ => true,
            }
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

fn unique(chars: Vec<char>) -> Vec<char> {
    chars
        .into_iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}
