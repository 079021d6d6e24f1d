//! The first part of OpenJTalk 1.11's `njd_set_digit` (`convert_digit_sequence` and its
//! helpers, `njd_set_digit.c` lines 99–520): whether a run of digits is read as one
//! number (百二十三) or digit by digit (イチニーサン), with commas and periods.
//!
//! jpreprocess-njd 0.15.0 has this as its `digit_sequence` pass, but deviates on purpose
//! where commas are irregular (`1,23,456`: it reads every comma-separated group on its
//! own; OpenJTalk reads up to the first comma, then starts again after it, so
//! `23,456` is one number). This is jpreprocess's module (BSD-3-Clause, © JPreprocess
//! developers) with the sequence building rewritten as OpenJTalk's recursion: a run
//! holds only nodes whose `pos_group1` is 数 (digits and `，`; a period ends it), the
//! comma check goes back from the last digit before a period, a misplaced comma or
//! leading zero ends the segment at the first comma, and the rest is checked again.
//! The conversions and the context score are jpreprocess's, unchanged.

use jpreprocess_core::pos::{Meishi, Setsubi, Settoushi, POS};
use jpreprocess_core::pron;
use jpreprocess_njd::{NJDNode, NJD};

const UNKNOWN_DICT_DIGITS: [(char, &str); 10] = [
    ('０', "０,名詞,数,*,*,*,*,０,ゼロ,ゼロ,1/2,C3"),
    ('１', "１,名詞,数,*,*,*,*,１,イチ,イチ,2/2,C3"),
    ('２', "２,名詞,数,*,*,*,*,２,ニ,ニ,1/1,C3"),
    ('３', "３,名詞,数,*,*,*,*,３,サン,サン,0/2,C3"),
    ('４', "４,名詞,数,*,*,*,*,４,ヨン,ヨン,1/2,C1"),
    ('５', "５,名詞,数,*,*,*,*,５,ゴ,ゴ,1/1,C3"),
    ('６', "６,名詞,数,*,*,*,*,６,ロク,ロク,2/2,C3"),
    ('７', "７,名詞,数,*,*,*,*,７,ナナ,ナナ,1/2,C3"),
    ('８', "８,名詞,数,*,*,*,*,８,ハチ,ハチ,2/2,C3"),
    ('９', "９,名詞,数,*,*,*,*,９,キュウ,キュー,1/2,C3"),
];

/// `njd_set_digit_rule_numeral_list1`: the strings of a 数 node read as a digit.
#[rustfmt::skip]
const DIGIT_NORMALIZE: [(&str, &str); 38] = [
    ("○", "〇"), ("１", "一"), ("２", "二"), ("３", "三"), ("４", "四"), ("５", "五"),
    ("６", "六"), ("７", "七"), ("８", "八"), ("９", "九"), ("一", "一"), ("二", "二"),
    ("三", "三"), ("四", "四"), ("五", "五"), ("六", "六"), ("七", "七"), ("八", "八"),
    ("九", "九"), ("いち", "一"), ("に", "二"), ("さん", "三"), ("よん", "四"), ("ご", "五"),
    ("ろく", "六"), ("なな", "七"), ("はち", "八"), ("きゅう", "九"), ("〇", "〇"), ("０", "０"),
    ("壱", "一"), ("弐", "二"), ("貳", "二"), ("ニ", "二"), ("参", "三"), ("し", "四"),
    ("しち", "七"), ("く", "九"),
];

const NUMERAL_LIST2: [&str; 4] = [
    "",
    "十,名詞,数,*,*,*,*,十,ジュウ,ジュー,1/2,*",
    "百,名詞,数,*,*,*,*,百,ヒャク,ヒャク,2/2,*",
    "千,名詞,数,*,*,*,*,千,セン,セン,1/2,*",
];
const NUMERAL_LIST3: [&str; 18] = [
    "",
    "万,名詞,数,*,*,*,*,万,マン,マン,1/2,*",
    "億,名詞,数,*,*,*,*,億,オク,オク,1/2,*",
    "兆,名詞,数,*,*,*,*,兆,チョウ,チョー,1/2,C3",
    "京,名詞,数,*,*,*,*,京,ケイ,ケー,1/2,*",
    "垓,名詞,数,*,*,*,*,垓,ガイ,ガイ,1/2,*",
    "𥝱,名詞,数,*,*,*,*,𥝱,ジョ,ジョ,1/1,*",
    "穣,名詞,数,*,*,*,*,穣,ジョウ,ジョー,1/2,*",
    "溝,名詞,数,*,*,*,*,溝,コウ,コウ,1/2,*",
    "澗,名詞,数,*,*,*,*,澗,カン,カン,1/2,*",
    "正,名詞,数,*,*,*,*,正,セイ,セー,1/2,*",
    "載,名詞,数,*,*,*,*,載,サイ,サイ,1/2,*",
    "極,名詞,数,*,*,*,*,極,ゴク,ゴク,1/2,*",
    "恒河沙,名詞,数,*,*,*,*,恒河沙,ゴウガシャ,ゴウガシャ,1/4,*",
    "阿僧祇,名詞,数,*,*,*,*,阿僧祇,アソウギ,アソーギ,2/4,*",
    "那由他,名詞,数,*,*,*,*,那由他,ナユタ,ナユタ,1/3,*",
    "不可思議,名詞,数,*,*,*,*,不可思議,フカシギ,フカシギ,2/4,*",
    "無量大数,名詞,数,*,*,*,*,無量大数,ムリョウタイスウ,ムリョータイスー,6/7,*",
];

const COMMA: &str = "，";

/// One element of a digit run.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Digit {
    Digit(u8),
    Comma,
}

fn digit_of(s: &str) -> Option<u8> {
    match s {
        "一" => Some(1),
        "二" => Some(2),
        "三" => Some(3),
        "四" => Some(4),
        "五" => Some(5),
        "六" => Some(6),
        "七" => Some(7),
        "八" => Some(8),
        "九" => Some(9),
        "〇" | "０" => Some(0),
        _ => None,
    }
}

/// A digit run's element: a 数 node that is a digit or `，`.
fn element(node: &NJDNode) -> Option<Digit> {
    if !node.get_pos().is_kazu() {
        return None;
    }
    match node.get_string() {
        COMMA => Some(Digit::Comma),
        s => digit_of(s).map(Digit::Digit),
    }
}

/// `njd_set_digit`'s first loop.
pub fn njd_digit_sequence(njd: &mut NJD) {
    // A multi-digit unknown word (a touten reading) becomes one node per digit.
    let mut i = 0;
    while let Some(node) = njd.nodes.get(i) {
        if node.get_pron().is_touten() && node.get_pos().is_kazu() {
            let parts: Option<Vec<NJDNode>> = node
                .get_string()
                .chars()
                .map(|c| {
                    UNKNOWN_DICT_DIGITS
                        .iter()
                        .find(|(d, _)| *d == c)
                        .map(|(_, line)| new_node(line))
                })
                .collect();
            if let Some(parts) = parts.filter(|p| !p.is_empty()) {
                let n = parts.len();
                njd.nodes.splice(i..=i, parts);
                i += n;
                continue;
            }
        }
        i += 1;
    }
    for node in &mut njd.nodes {
        if node.get_string() != "*" && node.get_pos().is_kazu() {
            if let Some((_, to)) = DIGIT_NORMALIZE
                .iter()
                .find(|(from, _)| *from == node.get_string())
            {
                node.replace_string(to);
            }
        }
    }

    let mut sequences = Vec::new();
    let mut start = 0;
    let mut run: Vec<Digit> = Vec::new();
    for (i, node) in njd.nodes.iter().enumerate() {
        match element(node) {
            Some(d) => {
                if run.is_empty() {
                    start = i;
                }
                run.push(d);
            }
            None => {
                segments(start, &run, &mut sequences);
                run.clear();
            }
        }
    }
    segments(start, &run, &mut sequences);
    for seq in &mut sequences {
        if seq.numerical.is_none() {
            seq.numerical = Some(score(njd, seq.start, seq.end) >= 0);
        }
    }
    let mut offset = 0;
    for seq in &mut sequences {
        offset += seq.convert(njd, offset);
    }
    njd.remove_silent_node();
}

/// `convert_digit_sequence` on one run (node indices from `start`), recursion unrolled.
fn segments(start: usize, run: &[Digit], out: &mut Vec<DigitSequence>) {
    let mut i = 0;
    loop {
        // Skip head marks.
        while i < run.len() && run[i] == Digit::Comma {
            i += 1;
        }
        if i >= run.len() {
            return;
        }
        let mut last = run.len() - 1;
        while last > i && run[last] == Digit::Comma {
            last -= 1;
        }
        // 1: numerical, 0: unknown, -1: non-numerical.
        let mut reading = 1;
        let mut commas = 0;
        let mut first_comma = None;
        for (rindex, k) in (i..=last).rev().enumerate() {
            if run[k] == Digit::Comma {
                first_comma = Some(k);
                commas += 1;
                if reading == 1 && rindex % 4 != 3 {
                    reading = 0;
                }
            } else if reading == 1 && rindex % 4 == 3 {
                reading = 0;
            }
        }
        if last != i && run[i] == Digit::Digit(0) {
            reading = -1;
        }
        if reading == 1 && commas == 0 {
            reading = 0;
        }
        let end = if reading == 1 {
            last
        } else {
            first_comma.map_or(last, |c| c - 1)
        };
        let numerical = match reading {
            1 => Some(true),
            -1 => Some(false),
            _ => None,
        };
        let digits: Vec<u8> = run[i..=end]
            .iter()
            .filter_map(|d| match d {
                Digit::Digit(d) => Some(*d),
                Digit::Comma => None,
            })
            .collect();
        if end > i {
            out.push(DigitSequence {
                start: start + i,
                end: start + end,
                digits,
                numerical,
            });
        }
        i = end + 1;
    }
}

const HAIHUN: [&str; 5] = ["―", "−", "‐", "—", "－"];
const KAKKO1: &str = "（";
const KAKKO2: &str = "）";
const BANGOU: &str = "番号";

fn is_period(s: &str) -> bool {
    s == "．" || s == "・"
}

/// `get_digit_sequence_score`.
fn score(njd: &NJD, start: usize, end: usize) -> i8 {
    let mut score = 0;
    if start > 0 {
        let node = &njd.nodes[start - 1];
        let (p1_pos, p1) = (node.get_pos(), node.get_string());
        score += match p1_pos {
            POS::Settoushi(Settoushi::SuuSetsuzoku) => 2,
            POS::Meishi(Meishi::FukushiKanou) => 1,
            POS::Meishi(Meishi::Setsubi(Setsubi::Josuushi)) => 1,
            _ => 0,
        };
        let (p2_kazu, p2_bangou) = match start.checked_sub(2).map(|k| &njd.nodes[k]) {
            Some(n) => (n.get_pos().is_kazu(), n.get_string() == BANGOU),
            None => (false, false),
        };
        if is_period(p1) {
            if p2_kazu {
                score -= 5;
            }
        } else if HAIHUN.contains(&p1) || p1 == KAKKO2 || p1 == BANGOU || (p1 == KAKKO1 && p2_kazu)
        {
            score -= 2;
        }
        if p2_bangou {
            score -= 2;
        }
    }
    if let Some(node) = njd.nodes.get(end + 1) {
        let s = node.get_string();
        score += match node.get_pos() {
            POS::Meishi(Meishi::FukushiKanou) => 2,
            POS::Meishi(Meishi::Setsubi(Setsubi::Josuushi)) => 2,
            _ => 0,
        };
        if HAIHUN.contains(&s) || s == KAKKO1 || s == BANGOU {
            score -= 2;
        } else if s == KAKKO2 {
            if njd
                .nodes
                .get(end + 2)
                .is_some_and(|n| n.get_pos().is_kazu())
            {
                score -= 2;
            }
        } else if is_period(s) {
            score += 4;
        }
    }
    score
}

#[derive(Debug)]
struct DigitSequence {
    start: usize,
    end: usize,
    digits: Vec<u8>,
    numerical: Option<bool>,
}

/// A node of one of the constant lines above (all valid).
fn new_node(line: &str) -> NJDNode {
    NJDNode::new_single(line)
}

impl DigitSequence {
    /// Converts the sequence (its indices shifted by `offset`); returns the change in
    /// the number of nodes.
    fn convert(&mut self, njd: &mut NJD, offset: i64) -> i64 {
        self.start = (self.start as i64 + offset) as usize;
        self.end = (self.end as i64 + offset) as usize;
        if self.numerical == Some(true) {
            self.numerical_reading(njd)
        } else {
            self.digit_by_digit(njd);
            0
        }
    }

    /// `convert_digit_sequence_for_non_numerical_reading`.
    fn digit_by_digit(&self, njd: &mut NJD) {
        let n = self.digits.len();
        for (i, (node, digit)) in njd.nodes[self.start..]
            .iter_mut()
            .zip(self.digits.iter())
            .enumerate()
        {
            match *digit {
                0 => node.set_pron(pron!([Ze, Ro], 1)),
                2 => node.set_pron(pron!([Ni, Long], 1)),
                5 => node.set_pron(pron!([Go, Long], 1)),
                _ => (),
            }
            node.unset_chain_rule();
            if i % 2 == 0 {
                node.set_chain_flag(false);
                if i != n - 1 {
                    node.get_pron_mut().set_accent(3);
                }
            } else {
                node.set_chain_flag(true);
            }
        }
    }

    /// `convert_digit_sequence_for_numerical_reading`, commas removed first.
    fn numerical_reading(&self, njd: &mut NJD) -> i64 {
        let mut removed = 0;
        let mut idx = 0;
        njd.nodes.retain(|node| {
            let inside = (self.start..=self.end).contains(&idx);
            idx += 1;
            if inside && node.get_string() == COMMA {
                removed += 1;
                false
            } else {
                true
            }
        });
        if self.digits.len() > NUMERAL_LIST3.len() * 4 {
            return -removed;
        }
        let mut have_digit_in_block = false;
        let mut offset = 0;
        for (i, digit) in self.digits.iter().enumerate() {
            let at = self.start + i + offset;
            let rev = self.digits.len() - i - 1;
            if *digit == 0 {
                njd.nodes[at].reset();
            } else {
                have_digit_in_block = true;
            }
            if rev.is_multiple_of(4) {
                if have_digit_in_block && rev > 0 {
                    njd.nodes.insert(at + 1, new_node(NUMERAL_LIST3[rev / 4]));
                    offset += 1;
                }
                have_digit_in_block = false;
            } else {
                match *digit {
                    0 => (),
                    1 => njd.nodes[at] = new_node(NUMERAL_LIST2[rev % 4]),
                    _ => {
                        njd.nodes.insert(at + 1, new_node(NUMERAL_LIST2[rev % 4]));
                        offset += 1;
                    }
                }
            }
        }
        offset as i64 - removed
    }
}
