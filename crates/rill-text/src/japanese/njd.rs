//! pyopenjtalk 0.4.1's `run_frontend` up to the NJD features NeMo reads: OpenJTalk's
//! `text2mecab`, MeCab ([`super::mecab`]), `mecab2njd`, then the NJD passes in
//! OpenJTalk's order (pronunciation, digit, accent phrase, accent type, unvoiced
//! vowel) from `jpreprocess-njd` 0.15.0 (but for the digit runs,
//! `digit_sequence.rs`, OpenJTalk's own), with OpenJTalk's own first loop of
//! `njd_set_pronunciation` run before it (jpreprocess splits a word such as `ＣＡＦÉ`
//! into its convertible and unconvertible parts; OpenJTalk keeps the word and reads
//! the convertible parts).

use jpreprocess_core::pronunciation::{MoraEnum, Pronunciation};
use jpreprocess_core::word_entry::WordEntry;
use jpreprocess_njd::{NJDNode, NJD};

use super::mecab::Dictionary;
use super::text2mecab::text2mecab;

/// The fields of one NJD node that NeMo's G2P and word count read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NjdWord {
    pub string: String,
    pub pos: String,
    pub pos_group1: String,
    pub pron: String,
    pub acc: usize,
    pub mora_size: usize,
    /// `chain_flag == 1`.
    pub chained: bool,
}

/// The feature columns jpreprocess reads (MeCab's unknown words have fewer; OpenJTalk
/// reads the missing ones as `*`).
const COLUMNS: usize = 12;

/// One MeCab word as NJD nodes (a compound entry gives several).
fn load(surface: &str, feature: &str) -> Vec<NJDNode> {
    let mut cols: Vec<&str> = feature.split(',').collect();
    cols.resize(COLUMNS, "*");
    let entry = WordEntry::load(&cols).unwrap_or_default();
    // A compound entry's parts must tile the surface (jpreprocess slices it).
    if let WordEntry::Multiple(parts) = &entry {
        let mut at = 0usize;
        for (orig, _) in parts.iter().take(parts.len().saturating_sub(1)) {
            at = at.saturating_add(orig.len());
        }
        if at > surface.len() || !surface.is_char_boundary(at) {
            return NJDNode::load(surface, &WordEntry::default());
        }
    }
    NJDNode::load(surface, &entry)
}

/// OpenJTalk 1.11 `njd_set_pronunciation`'s first loop for a node without morae: the
/// whole string is kept and read as its convertible parts (the rest is skipped); a node
/// that gets a reading becomes a filler (the skipped characters go to `dropped`).
fn pronunciation_prepass(njd: &mut NJD, dropped: &mut Vec<char>) {
    for node in njd.nodes.iter_mut() {
        if node.get_pron().mora_size() != 0 {
            continue;
        }
        let s = node.get_string().to_string();
        let mut moras = Vec::new();
        let mut skipped = Vec::new();
        for (range, m) in Pronunciation::parse_mora_str(&s) {
            let Some(seg) = s.get(range) else { continue };
            if m.iter().any(|x| x.mora_enum == MoraEnum::Touten)
                && !Pronunciation::is_mora_convertable(seg)
            {
                skipped.extend(seg.chars());
                continue;
            }
            moras.extend(m);
        }
        let pron = Pronunciation::new(moras, 0);
        if pron.mora_size() > 0 {
            dropped.extend(skipped);
            node.set_read(&pron.to_pure_string());
            node.set_pron(pron);
            *node.get_pos_mut() = jpreprocess_core::pos::POS::Filler;
        }
    }
}

/// The NJD nodes of `text` as pyopenjtalk's `run_frontend` returns them; characters
/// `text2mecab` drops go to `dropped`.
pub fn run_frontend(dict: &Dictionary, text: &str, dropped: &mut Vec<char>) -> Vec<NjdWord> {
    let converted = text2mecab(text, dropped);
    let mut njd = NJD {
        nodes: dict
            .parse(&converted)
            .into_iter()
            .flat_map(|w| load(w.surface, w.feature))
            .collect(),
    };
    pronunciation_prepass(&mut njd, dropped);
    jpreprocess_njd::pronunciation::njd_set_pronunciation(&mut njd);
    super::digit_sequence::njd_digit_sequence(&mut njd);
    jpreprocess_njd::digit::njd_set_digit(&mut njd);
    jpreprocess_njd::accent_phrase::njd_set_accent_phrase(&mut njd);
    jpreprocess_njd::accent_type::njd_set_accent_type(&mut njd);
    jpreprocess_njd::unvoiced_vowel::njd_set_unvoiced_vowel(&mut njd);
    njd.nodes
        .iter()
        .map(|n| {
            let pos = n.get_pos().to_string();
            let mut parts = pos.split(',');
            let pos_major = parts.next().unwrap_or("").to_string();
            let pos_group1 = parts.next().unwrap_or("").to_string();
            NjdWord {
                string: n.get_string().to_string(),
                pos: pos_major,
                pos_group1,
                pron: n.get_pron().to_string(),
                acc: n.get_pron().accent(),
                mora_size: n.get_pron().mora_size(),
                chained: n.get_chain_flag() == Some(true),
            }
        })
        .collect()
}
