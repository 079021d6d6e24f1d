//! NeMo 3.0.0's Japanese front end as the v2602 checkpoint's `japanese_phoneme`
//! tokenizer is configured (spec `magpie_languages.md` §3 "ja"): magpietts' `do_tts`
//! removes every whitespace character; `japanese_text_preprocessing` lower-cases and the
//! G2P upper-cases (Python's full case mapping); pyopenjtalk 0.4.1's `run_frontend`
//! gives the words (`njd`: OpenJTalk's `text2mecab` ([`text2mecab`]), MeCab 0.996's
//! lattice ([`mecab`]) on OpenJTalk's compiled dictionary, the NJD passes of
//! `jpreprocess-njd`); `JapaneseKatakanaAccentG2p` turns them into katakana morae with
//! pitch marks and `JapanesePhonemeTokenizer` into the 175-symbol table's ids ([`g2p`]).
//! Ids are relative to the ja table (v2602 puts it at offset 458).
//!
//! The dictionary is not embedded (107 MB): [`JapaneseFrontEnd::open`] maps the four
//! files of a MeCab binary dictionary folder, e.g. Debian/Ubuntu's
//! `open-jtalk-mecab-naist-jdic` or pyopenjtalk's `open_jtalk_dic_utf_8-1.11`.
//!
//! Exactness: `tests/japanese.rs` checks every id, G2P symbol and word count against
//! NeMo's own code on pyopenjtalk 0.4.1 (`testdata/magpie/make_tokenizer_ja.py`). The
//! digit runs go through rill's port of OpenJTalk's `convert_digit_sequence`
//! (`digit_sequence.rs`), not jpreprocess's, which reads irregular comma groups
//! (`1,23,456`) differently on purpose.
//!
//! Where rill differs from NeMo, on purpose: OpenJTalk's `text2mecab` writes into an
//! 8 KiB buffer without a bounds check, so NeMo's output for a text longer than about
//! 2,700 ASCII characters (8 KiB once widened) is undefined; rill reads it whole.

mod dic;
mod digit_sequence;
pub mod g2p;
pub mod mecab;
mod njd;
pub mod text2mecab;
pub mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::unicode::{is_py_space, py_lower, py_strip, py_upper};
pub use g2p::{JAPANESE_TABLE_SIZE, JAPANESE_TOKENS};
pub use mecab::Dictionary;

/// The environment variable pyopenjtalk also reads.
pub const DICT_ENV: &str = "OPEN_JTALK_DICT_DIR";

/// Where Debian and Ubuntu's `open-jtalk-mecab-naist-jdic` installs the dictionary.
pub const DEBIAN_DICT_DIR: &str = "/var/lib/mecab/dic/open-jtalk/naist-jdic";

/// NeMo's Japanese tokenizer on one OpenJTalk dictionary. Cheap to clone.
#[derive(Clone)]
pub struct JapaneseFrontEnd {
    dict: Arc<Dictionary>,
}

impl std::fmt::Debug for JapaneseFrontEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JapaneseFrontEnd").finish_non_exhaustive()
    }
}

impl JapaneseFrontEnd {
    /// Opens OpenJTalk's compiled MeCab dictionary folder (sys.dic, unk.dic, matrix.bin,
    /// char.bin).
    pub fn open(dir: &Path) -> crate::Result<JapaneseFrontEnd> {
        Ok(Self::from_dictionary(Dictionary::open(dir)?))
    }

    /// With a dictionary already loaded (e.g. [`Dictionary::from_bytes`]).
    pub fn from_dictionary(dict: Dictionary) -> JapaneseFrontEnd {
        JapaneseFrontEnd {
            dict: Arc::new(dict),
        }
    }

    /// `$OPEN_JTALK_DICT_DIR` if set, else Debian's
    /// `/var/lib/mecab/dic/open-jtalk/naist-jdic` if it exists.
    pub fn default_dir() -> Option<PathBuf> {
        if let Some(dir) = std::env::var_os(DICT_ENV).filter(|d| !d.is_empty()) {
            return Some(PathBuf::from(dir));
        }
        let debian = PathBuf::from(DEBIAN_DICT_DIR);
        debian.is_dir().then_some(debian)
    }

    /// Table-relative ids (0..175, no offset, no EOS) of one utterance as NeMo encodes
    /// it (do_tts's whitespace removal included, pad_with_space); characters left out
    /// go to `dropped`.
    pub fn encode(&self, text: &str, dropped: &mut Vec<char>) -> Vec<u32> {
        let symbols = self.g2p(text, dropped);
        g2p::encode_from_g2p(&symbols, dropped)
    }

    /// The G2P's symbols for `text` (after `do_tts`'s whitespace removal), before the
    /// tokenizer.
    pub fn g2p(&self, text: &str, dropped: &mut Vec<char>) -> Vec<String> {
        let joined: String = text.chars().filter(|&c| !is_py_space(c)).collect();
        let upper = py_upper(&py_lower(&joined));
        let words = njd::run_frontend(&self.dict, &upper, dropped);
        g2p::g2p(&words, dropped)
    }

    /// NeMo's long-form count (pyopenjtalk words with non-blank text; characters as
    /// fallback).
    pub fn word_count(&self, text: &str) -> usize {
        if py_strip(text).is_empty() {
            return 0;
        }
        let words = njd::run_frontend(&self.dict, text, &mut Vec::new());
        match words
            .iter()
            .filter(|w| !py_strip(&w.string).is_empty())
            .count()
        {
            0 => text.chars().filter(|&c| !is_py_space(c)).count(),
            n => n,
        }
    }
}
