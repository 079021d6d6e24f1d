//! NeMo's Japanese classes: cardinals, ordinals, decimals, fractions, dates and times,
//! each offering its candidate tokens at one char.

use super::num::{cardinal, digit_by_digit};
use super::tables::{DIVISIONS, ERAS, ERA_ABBREV, WEEK};
use super::{tok, Text, Tok, CLASS, DECIMAL, FRACTION};

/// Longest digit strings read after a decimal point besides the whole run.
const SHORT_FRACTIONS: usize = 24;

/// Most years NeMo's slashed date may repeat before month and day.
const MAX_YEARS: usize = 8;

/// Every cardinal starting at `p`: (end, reading).
fn cards(t: &Text, p: usize) -> Vec<(usize, String)> {
    (1..=t.digits(p).min(12))
        .filter_map(|len| cardinal(t.slice(p, p + len)).map(|s| (p + len, s)))
        .collect()
}

/// The cardinal of the whole digit run at `p` (what must be followed by a non-digit).
fn full_card(t: &Text, p: usize) -> Option<(usize, String)> {
    let len = t.digits(p);
    (1..=12)
        .contains(&len)
        .then(|| cardinal(t.slice(p, p + len)).map(|s| (p + len, s)))?
}

/// Lengths tried for digits after a decimal point: all short ones and the whole run.
fn fraction_lengths(fd: usize, min: usize) -> impl Iterator<Item = usize> {
    (min..=fd.min(SHORT_FRACTIONS)).chain((fd > SHORT_FRACTIONS).then_some(fd))
}

/// A sign before a number: (end, "-" as a cardinal writes it, マイナス as others do).
fn sign(t: &Text, i: usize) -> Option<usize> {
    if t.at(i) == Some('-') {
        Some(i + 1)
    } else {
        t.starts(i, "マイナス").map(|l| i + l)
    }
}

/// Cardinals (signed ones keep "-": "マイナス5" → "-五"), ordinals (第N, N番目) and
/// decimals ("-1.5" → マイナス一点五) starting at `i`.
pub(super) fn numbers(t: &Text, i: usize, v: &mut Vec<Tok>) {
    for (end, s) in cards(t, i) {
        if let Some(l) = t.starts(end, "番目") {
            v.push(tok(end + l, CLASS, format!("{s}番目"), 1));
        }
        v.push(tok(end, CLASS, s, 1));
    }
    if t.at(i) == Some('第') {
        for (end, s) in cards(t, i + 1) {
            v.push(tok(end, CLASS, format!("第{s}"), 1));
        }
    }
    if let Some(at) = sign(t, i) {
        for (end, s) in cards(t, at) {
            v.push(tok(end, CLASS, format!("-{s}"), 2));
        }
        decimals(t, at, "マイナス", 3, v);
    }
    decimals(t, i, "", 2, v);
}

fn decimals(t: &Text, p: usize, neg: &str, fields: u64, v: &mut Vec<Tok>) {
    let Some((end, s)) = full_card(t, p) else {
        return;
    };
    if t.at(end) != Some('.') {
        return;
    }
    let fd = t.digits(end + 1);
    for flen in fraction_lengths(fd, 1) {
        let fe = end + 1 + flen;
        let frac = digit_by_digit(t.slice(end + 1, fe));
        v.push(tok(fe, DECIMAL, format!("{neg}{s}点{frac}"), fields));
    }
}

/// A fraction's part: [√] cardinal, or [√] cardinal "." digits (maybe none):
/// (end, reading with √ read ルート). `whole`: only those that end a digit run (all a
/// part before "/", "分の" or a whole part's mark can be).
fn parts(t: &Text, p: usize, whole: bool) -> Vec<(usize, String)> {
    let (root, at) = match t.at(p) {
        Some('√') => ("ルート", p + 1),
        _ => ("", p),
    };
    let numbers = if whole {
        full_card(t, at).into_iter().collect()
    } else {
        cards(t, at)
    };
    let mut out: Vec<(usize, String)> = numbers
        .into_iter()
        .map(|(e, s)| (e, format!("{root}{s}")))
        .collect();
    if let Some((end, s)) = full_card(t, at) {
        if t.at(end) == Some('.') {
            let fd = t.digits(end + 1);
            for flen in fraction_lengths(fd, 0) {
                let fe = end + 1 + flen;
                let frac = digit_by_digit(t.slice(end + 1, fe));
                out.push((fe, format!("{root}{s}点{frac}")));
            }
        }
    }
    out
}

/// Fractions: "1/2" → 二分の一, "4分の3" → 四分の三, with a whole part before them
/// ("1 3/4" → 一荷四分の三, "1と3/4" → 一と四分の三) and a sign ("-1/2" → マイナス二分の一).
pub(super) fn fractions(t: &Text, i: usize, v: &mut Vec<Tok>) {
    let (neg, at) = match sign(t, i) {
        Some(e) => ("マイナス", e),
        None => ("", i),
    };
    let fields = u64::from(!neg.is_empty());
    let mut starts = vec![(at, String::new(), fields)];
    for (e, s) in parts(t, at, true) {
        match t.at(e) {
            Some(' ') => starts.push((e + 1, format!("{s}荷"), fields + 1)),
            Some(c @ ('と' | '荷')) => starts.push((e + 1, format!("{s}{c}"), fields + 1)),
            _ => {}
        }
    }
    for (p, whole, fields) in starts {
        for (e, num) in parts(t, p, true) {
            if t.at(e) == Some('/') {
                for (e2, den) in parts(t, e + 1, false) {
                    let out = format!("{neg}{whole}{den}分の{num}");
                    v.push(tok(e2, FRACTION, out, fields + 2));
                }
            }
            if let Some(l) = t.starts(e, "分の") {
                for (e2, den) in parts(t, e + l, false) {
                    let out = format!("{neg}{whole}{num}分の{den}");
                    v.push(tok(e2, FRACTION, out, fields + 3));
                }
            }
        }
    }
}

/// A month (1–12), day (1–31), hour (1–24) or minute (1–60) number, with one optional
/// leading 0: (end, reading).
fn day_number(t: &Text, p: usize, max: u32) -> Vec<(usize, String)> {
    let at = p + usize::from(t.at(p) == Some('0'));
    let mut out = Vec::new();
    for len in 1..=t.digits(at).min(2) {
        let s = t.slice(at, at + len);
        if s.starts_with('0') {
            continue;
        }
        if let Ok(n) = s.parse::<u32>() {
            if (1..=max).contains(&n) {
                out.push((at + len, cardinal(s).unwrap_or_default()));
            }
        }
    }
    out
}

/// A weekday in brackets, spaces around them dropped: "(月)" → 月曜日, "(月〜金)" →
/// 月曜日から金曜日, "(月・水)" → 月曜日水曜日.
fn weeks(t: &Text, p: usize) -> Vec<(usize, String)> {
    let skip = |mut k: usize| {
        while t
            .at(k)
            .is_some_and(|c| matches!(c, ' ' | '\u{202f}' | '\u{a0}'))
        {
            k += 1;
        }
        k
    };
    let mut out = Vec::new();
    let k = skip(p);
    if !matches!(t.at(k), Some('(' | '（')) {
        return out;
    }
    let k = skip(k + 1);
    for (w, name) in week_at(t, k) {
        let mut bodies = vec![(w, name.to_string())];
        for (join, said) in [('〜', "から"), ('・', "")] {
            if t.at(w) == Some(join) {
                for (w2, name2) in week_at(t, w + 1) {
                    bodies.push((w2, format!("{name}{said}{name2}")));
                }
            }
        }
        for (e, body) in bodies {
            let e = skip(e);
            if matches!(t.at(e), Some(')' | '）')) {
                out.push((skip(e + 1), body));
            }
        }
    }
    out
}

fn week_at(t: &Text, p: usize) -> Vec<(usize, &'static str)> {
    WEEK.iter()
        .filter_map(|(w, name)| t.starts(p, w).map(|l| (p + l, *name)))
        .collect()
}

/// A date's parts so far: end, reading, fields.
type Part = (usize, String, u64);

/// Dates: "2024年1月5日(金)", "2024/01/30", "令和6年", "R.6" → 令和六年, "70年代", "(月)".
pub(super) fn dates(t: &Text, i: usize, v: &mut Vec<Tok>) {
    let mut eras: Vec<Part> = vec![(i, String::new(), 0)];
    for e in ERAS {
        if let Some(l) = t.starts(i, e) {
            eras.push((i + l, e.to_string(), 1));
        }
    }
    let mut found: Vec<Part> = Vec::new();
    for (p, era, ef) in &eras {
        // Year, month and day with / . or - between; NeMo keeps only the last of
        // several years.
        let mut at = *p;
        for _ in 0..MAX_YEARS {
            let Some((ye, year)) = full_card(t, at) else {
                break;
            };
            if !matches!(t.at(ye), Some('/' | '.' | '-')) {
                break;
            }
            at = ye + 1;
            for (me, m) in day_number(t, at, 12) {
                if !matches!(t.at(me), Some('/' | '.' | '-')) {
                    continue;
                }
                for (de, d) in day_number(t, me + 1, 31) {
                    found.push((de, format!("{era}{year}年{m}月{d}日"), ef + 3));
                }
            }
        }
        let years = years_at(t, *p);
        for (e, y) in &years {
            found.push((*e, format!("{era}{y}"), ef + 1));
            for (me, m) in months_at(t, *e) {
                found.push((me, format!("{era}{y}{m}"), ef + 2));
                for (de, d) in days_at(t, me) {
                    found.push((de, format!("{era}{y}{m}{d}"), ef + 3));
                }
            }
        }
        // A bare number after an era (alone, a year to NeMo is read as the cardinal it
        // also is), "21世紀", "70年代".
        if !era.is_empty() {
            for (e, s) in cards(t, *p) {
                found.push((e, format!("{era}{s}"), ef + 1));
            }
        }
        if let Some((e, s)) = full_card(t, *p) {
            for w in ["世紀", "年代"] {
                if let Some(l) = t.starts(e, w) {
                    found.push((e + l, format!("{era}{s}{w}"), ef + 1));
                }
            }
        }
    }
    for (abbrev, era) in ERA_ABBREV {
        if let Some(l) = t.starts(i, abbrev) {
            for (e, s) in cards(t, i + l) {
                found.push((e, format!("{era}{s}年"), 2));
            }
        }
    }
    for (me, m) in months_at(t, i) {
        found.push((me, m.clone(), 1));
        for (de, d) in days_at(t, me) {
            found.push((de, format!("{m}{d}"), 2));
        }
    }
    for (de, d) in days_at(t, i) {
        found.push((de, d, 1));
    }
    for (end, out, fields) in found {
        for (we, w) in weeks(t, end) {
            v.push(tok(we, CLASS, format!("{out}{w}"), fields + 1));
        }
        v.push(tok(end, CLASS, out, fields));
    }
    // A weekday alone, and two in a row: NeMo keeps only the second.
    for (we, w) in weeks(t, i) {
        for (we2, w2) in weeks(t, we) {
            v.push(tok(we2, CLASS, w2, 1));
        }
        v.push(tok(we, CLASS, w, 1));
    }
}

/// "N年" at `p`.
fn years_at(t: &Text, p: usize) -> Vec<(usize, String)> {
    let Some((e, s)) = full_card(t, p) else {
        return Vec::new();
    };
    match t.starts(e, "年") {
        Some(l) => vec![(e + l, format!("{s}年"))],
        None => Vec::new(),
    }
}

/// "N月" (N 1–12, maybe "0N") or 上旬, 中旬, 下旬 at `p`.
fn months_at(t: &Text, p: usize) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = day_number(t, p, 12)
        .into_iter()
        .filter_map(|(e, m)| t.starts(e, "月").map(|l| (e + l, format!("{m}月"))))
        .collect();
    for w in ["上旬", "中旬", "下旬"] {
        if let Some(l) = t.starts(p, w) {
            out.push((p + l, w.to_string()));
        }
    }
    out
}

/// "N日" (any cardinal) at `p`.
fn days_at(t: &Text, p: usize) -> Vec<(usize, String)> {
    let Some((e, s)) = full_card(t, p) else {
        return Vec::new();
    };
    match t.starts(e, "日") {
        Some(l) => vec![(e + l, format!("{s}日"))],
        None => Vec::new(),
    }
}

/// A number before 時, 分 or 秒: a cardinal or "N.M" (read N点M, M as a cardinal).
fn time_number(t: &Text, p: usize) -> Option<(usize, String)> {
    let (e, s) = full_card(t, p)?;
    if t.at(e) == Some('.') {
        if let Some((e2, s2)) = full_card(t, e + 1) {
            return Some((e2, format!("{s}点{s2}")));
        }
    }
    Some((e, s))
}

/// One of `words` right after a number at `p`: (end, reading), for each that fits.
fn unit(t: &Text, p: usize, words: &[&str]) -> Vec<(usize, String)> {
    let Some((e, s)) = time_number(t, p) else {
        return Vec::new();
    };
    words
        .iter()
        .filter_map(|w| t.starts(e, w).map(|l| (e + l, format!("{s}{w}"))))
        .collect()
}

fn minutes(t: &Text, p: usize) -> Vec<(usize, String)> {
    let mut base = unit(t, p, &["分"]);
    if let Some(l) = t.starts(p, "半") {
        base.push((p + l, "半".into()));
    }
    let mut out = Vec::new();
    for (e, s) in base {
        for w in ["過ぎ", "頃"] {
            if let Some(l) = t.starts(e, w) {
                out.push((e + l, format!("{s}{w}")));
            }
        }
        out.push((e, s));
    }
    out
}

/// Times: "3時30分" and "10:30" (→ 十時三十分; "10:00" is no time to NeMo, 0 minutes not
/// being in its table), with a part of the day before ("午後3時"). Minutes and seconds
/// without an hour ("5分30秒") are a time NeMo's verbaliser fails on.
pub(super) fn times(t: &Text, i: usize, v: &mut Vec<Tok>) {
    let mut starts: Vec<(usize, &str, u64)> = vec![(i, "", 0)];
    for d in DIVISIONS {
        if let Some(l) = t.starts(i, d) {
            starts.push((i + l, d, 1));
        }
    }
    for (p, div, df) in starts {
        for (he, h) in unit(t, p, &["時", "時間", "時頃"]) {
            v.push(tok(he, CLASS, format!("{div}{h}"), df + 1));
            for (me, m) in minutes(t, he) {
                v.push(tok(me, CLASS, format!("{div}{h}{m}"), df + 2));
                for (se, s) in unit(t, me, &["秒"]) {
                    v.push(tok(se, CLASS, format!("{div}{h}{m}{s}"), df + 3));
                }
            }
        }
        for (me, m) in minutes(t, p) {
            v.push(tok(me, CLASS, format!("{div}{m}"), df + 1));
            for (se, _) in unit(t, me, &["秒"]) {
                let mut tk = tok(se, CLASS, String::new(), df + 2);
                tk.fail = true;
                v.push(tk);
            }
        }
        for (se, s) in unit(t, p, &["秒"]) {
            v.push(tok(se, CLASS, format!("{div}{s}"), df + 1));
        }
    }
    // Clock times: [0]H:[0]M[:[0]S], hours 1–24, minutes and seconds 1–60.
    for (he, h) in day_number(t, i, 24) {
        if t.at(he) != Some(':') {
            continue;
        }
        for (me, m) in day_number(t, he + 1, 60) {
            v.push(tok(me, CLASS, format!("{h}時{m}分"), 2));
            if t.at(me) == Some(':') {
                for (se, s) in day_number(t, me + 1, 60) {
                    v.push(tok(se, CLASS, format!("{h}時{m}分{s}秒"), 3));
                }
            }
        }
    }
}
