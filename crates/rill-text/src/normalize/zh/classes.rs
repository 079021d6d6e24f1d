//! Candidate tokens for fractions, money, dates and times (NeMo's zh `FractionFst`,
//! `MoneyFst`, `DateFst` and `TimeFst`).

use super::num::{cardinal, day, digit_by_digit, hour, minute, month};
use super::tables::{CURRENCY_MAJOR, CURRENCY_MANDARIN};
use super::{tok, Text, Tok, QUANTITY};

const FRACTION: i64 = 10_000 - 30_000;
const DATE: i64 = 11_000 - 20_000;
const DATE_RANGE: i64 = 11_000;
const MONEY: i64 = 11_000;
const MONEY_MANDARIN: i64 = 11_000 - 30_000;
const MONEY_DECIMAL: i64 = 11_000 - 10_000;
const TIME: i64 = 11_000;

/// Denominators written in words before 分之 ("百分之5", "万分之3").
const FRACTION_HEADS: &[&str] = &["百", "千"];

fn failing(end: usize, cost: i64) -> Tok {
    Tok {
        end,
        cost,
        out: String::new(),
        perms: 1,
        fail: true,
    }
}

/// Cardinals at `i`: (end, spoken), shortest first.
fn cardinals(t: &Text, i: usize) -> Vec<(usize, String)> {
    let nd = t.digits(i);
    (1..=nd.min(12))
        .filter_map(|len| cardinal(t.slice(i, i + len)).map(|s| (i + len, s)))
        .collect()
}

/// "百分之5", "分之5" (a word denominator, or none).
pub(super) fn fraction_words(t: &Text, i: usize, v: &mut Vec<Tok>) {
    let mut heads: Vec<(usize, &str)> = vec![(i, "")];
    for h in FRACTION_HEADS.iter().chain(QUANTITY) {
        if let Some(l) = t.starts(i, h) {
            heads.push((i + l, h));
        }
    }
    for (at, h) in heads {
        let Some(l) = t.starts(at, "分之") else {
            continue;
        };
        for (end, n) in cardinals(t, at + l) {
            if h.is_empty() {
                // No denominator: NeMo's verbaliser fails.
                v.push(failing(end, FRACTION));
            } else {
                v.push(tok(end, FRACTION, format!("{h}分之{n}"), 2));
            }
        }
    }
}

/// Fractions whose first number (`num`, read from the digits ending at `end`) is already
/// read: "3/8", "5又1/2", "3分之1", "5又3分之1", "80%"; `neg` is the sign read.
pub(super) fn fractions(t: &Text, end: usize, neg: &str, num: &str, keys: u64, v: &mut Vec<Tok>) {
    let sign = keys - 1;
    match t.at(end) {
        Some('/') => {
            for (e, d) in cardinals(t, end + 1) {
                v.push(tok(e, FRACTION, format!("{neg}{d}分之{num}"), 2 + sign));
            }
        }
        Some('%') => {
            let spoken = if t.slice(end - 3.min(end), end) == "100"
                && (end < 4 || !t.at(end - 4).is_some_and(|c| c.is_ascii_digit()))
            {
                "百".to_string()
            } else {
                num.to_string()
            };
            v.push(tok(
                end + 1,
                FRACTION,
                format!("{neg}百分之{spoken}"),
                2 + sign,
            ));
        }
        Some('又') => {
            for (e, n) in cardinals(t, end + 1) {
                if t.at(e) == Some('/') {
                    for (e2, d) in cardinals(t, e + 1) {
                        let s = format!("{neg}{num}又{d}分之{n}");
                        v.push(tok(e2, FRACTION, s, 3 + sign));
                    }
                } else if let Some(l) = t.starts(e, "分之") {
                    for (e2, m) in cardinals(t, e + l) {
                        let s = format!("{neg}{num}又{n}分之{m}");
                        v.push(tok(e2, FRACTION, s, 3 + sign));
                    }
                }
            }
        }
        _ => {
            if let Some(l) = t.starts(end, "分之") {
                for (e, n) in cardinals(t, end + l) {
                    v.push(tok(e, FRACTION, format!("{neg}{num}分之{n}"), 2 + sign));
                }
            }
        }
    }
}

/// A "%" with no number before it: NeMo tags it as a fraction with nothing in it, and
/// its verbaliser fails.
pub(super) fn bare_percent(t: &Text, i: usize, v: &mut Vec<Tok>) {
    if t.at(i) == Some('%') {
        v.push(failing(i + 1, FRACTION));
    }
}

/// "3.5%" → 百分之三点五 (`spoken` is the decimal read, ending at `end`).
pub(super) fn decimal_percent(t: &Text, end: usize, spoken: &str, keys: u64, v: &mut Vec<Tok>) {
    if t.at(end) == Some('%') {
        v.push(tok(end + 1, FRACTION, format!("百分之{spoken}"), keys));
    }
}

/// Names of currencies written after an amount, at `i`: (end, name).
fn mandarin(t: &Text, i: usize) -> Vec<(usize, &'static str)> {
    CURRENCY_MANDARIN
        .iter()
        .filter_map(|c| t.starts(i, c).map(|l| (i + l, *c)))
        .collect()
}

/// Decimal parts at `i` ("." and digits): (end, "点…").
fn decimal_tail(t: &Text, i: usize) -> Vec<(usize, String)> {
    if t.at(i) != Some('.') {
        return Vec::new();
    }
    let fd = t.digits(i + 1);
    super::fraction_lengths(fd)
        .map(|l| {
            let e = i + 1 + l;
            (e, format!("点{}", digit_by_digit(t.slice(i + 1, e))))
        })
        .collect()
}

/// Quantity words at `i`: (end, word), with the empty one first.
fn quantities(t: &Text, i: usize) -> Vec<(usize, &'static str)> {
    let mut q = vec![(i, "")];
    q.extend(
        QUANTITY
            .iter()
            .filter_map(|w| t.starts(i, w).map(|l| (i + l, *w))),
    );
    q
}

/// Amounts: "$500", "¥30", "50元", "3块5毛", "25万元", "12.5元", "1.2亿元".
pub(super) fn money(t: &Text, i: usize, v: &mut Vec<Tok>) {
    let rest = t.rest(i);
    for (sym, name) in CURRENCY_MAJOR {
        if !rest.starts_with(sym) {
            continue;
        }
        let at = i + sym.chars().count();
        for (e, num) in cardinals(t, at) {
            for (qe, q) in quantities(t, e) {
                v.push(tok(qe, MONEY, format!("{num}{q}{name}"), 2));
            }
            for (de, d) in decimal_tail(t, e) {
                for (qe, q) in quantities(t, de) {
                    let keys = if q.is_empty() { 2 } else { 3 };
                    v.push(tok(qe, MONEY_DECIMAL, format!("{num}{d}{q}{name}"), keys));
                }
            }
        }
    }
    for (e, num) in cardinals(t, i) {
        for (qe, q) in quantities(t, e) {
            for (ce, c) in mandarin(t, qe) {
                v.push(tok(ce, MONEY_MANDARIN, format!("{num}{q}{c}"), 2));
            }
        }
        for (de, d) in decimal_tail(t, e) {
            for (qe, q) in quantities(t, de) {
                let keys = if q.is_empty() { 2 } else { 3 };
                for (ce, c) in mandarin(t, qe) {
                    let s = format!("{num}{d}{q}{c}");
                    v.push(tok(ce, MONEY_DECIMAL, s, keys));
                    // Two names in a row break NeMo's verbaliser.
                    for (ce2, _) in mandarin(t, ce) {
                        v.push(failing(ce2, MONEY_DECIMAL));
                    }
                }
            }
        }
    }
    // Amounts with 块/元/角/毛/分, up to three in a row ("3块5毛").
    let mut heads = vec![(i, String::new())];
    for _ in 0..3 {
        let mut next = Vec::new();
        for (at, said) in &heads {
            for (e, num) in cardinals(t, *at) {
                for (ue, unit, major) in money_units(t, e) {
                    let s = format!("{said}{num}{unit}");
                    v.push(tok(ue, MONEY, s.clone(), 2));
                    for (ce, c) in mandarin(t, ue) {
                        let s = if major {
                            format!("{said}{num}{c}")
                        } else {
                            format!("{s}{c}")
                        };
                        v.push(tok(ce, MONEY, s, 2));
                    }
                    next.push((ue, s));
                }
            }
        }
        heads = next;
    }
}

/// 块, 元, 块钱 (major), 角, 毛, 分 at `i`: (end, spoken, major).
fn money_units(t: &Text, i: usize) -> Vec<(usize, &'static str, bool)> {
    let table: [(&str, &str, bool); 8] = [
        ("块钱", "块钱", true),
        ("塊錢", "块钱", true),
        ("块", "块", true),
        ("塊", "块", true),
        ("元", "元", true),
        ("角", "角", false),
        ("毛", "毛", false),
        ("分", "分", false),
    ];
    table
        .iter()
        .filter_map(|(w, s, m)| t.starts(i, w).map(|l| (i + l, *s, *m)))
        .collect()
}

type Fields = Vec<(&'static str, String)>;

/// Date parts at `i` (NeMo's date graph without era or range): (end, fields).
fn date_graph(t: &Text, i: usize) -> Vec<(usize, Fields)> {
    let mut out = Vec::new();
    let nd = t.digits(i);
    if nd == 0 {
        return out;
    }
    // 2024年, 2024年1月, 2024年1月5日.
    if nd >= 2 && t.at(i + nd) == Some('年') {
        let y = vec![("year", digit_by_digit(t.slice(i, i + nd)))];
        let e = i + nd + 1;
        out.push((e, y.clone()));
        for (me, mut f) in month_day(t, e) {
            if f[0].0 == "month" {
                let mut all = y.clone();
                all.append(&mut f);
                out.push((me, all));
            }
        }
    }
    out.extend(month_day(t, i));
    // 2023-10-01, 2024.12.31.
    for yl in 2..=nd.min(4) {
        let s = i + yl;
        if !matches!(t.at(s), Some('/' | '-' | '.' | '·')) {
            continue;
        }
        for ml in 1..=2 {
            let Some(m) = month(t.slice(s + 1, (s + 1 + ml).min(t.chars.len()))) else {
                continue;
            };
            let me = s + 1 + ml;
            if t.digits(s + 1) < ml || !matches!(t.at(me), Some('/' | '-' | '.' | '·')) {
                continue;
            }
            for dl in 1..=2usize.min(t.digits(me + 1)) {
                if let Some(d) = day(t.slice(me + 1, me + 1 + dl)) {
                    let y = digit_by_digit(t.slice(i, i + yl));
                    let f = vec![("year", y), ("month", m.clone()), ("day", d)];
                    out.push((me + 1 + dl, f));
                }
            }
        }
    }
    out
}

/// "1月", "5日", "5号", "1月5日" at `i`.
fn month_day(t: &Text, i: usize) -> Vec<(usize, Fields)> {
    let mut out = Vec::new();
    let nd = t.digits(i);
    for l in 1..=nd.min(2) {
        let s = t.slice(i, i + l);
        let e = i + l;
        if t.at(e) == Some('月') {
            if let Some(m) = month(s) {
                out.push((e + 1, vec![("month", m.clone())]));
                let dn = t.digits(e + 1);
                for dl in 1..=dn.min(2) {
                    let de = e + 1 + dl;
                    if let (Some(d), Some('号' | '號' | '日')) = (day(t.slice(e + 1, de)), t.at(de))
                    {
                        out.push((de + 1, vec![("month", m.clone()), ("day", d)]));
                    }
                }
            }
        }
        if let (Some(d), Some('号' | '號' | '日')) = (day(s), t.at(e)) {
            out.push((e + 1, vec![("day", d)]));
        }
    }
    out
}

fn say(fields: &[(&str, String)]) -> String {
    let mut s = String::new();
    for (k, v) in fields {
        s.push_str(v);
        s.push_str(match *k {
            "year" => "年",
            "month" => "月",
            "day" => "日",
            _ => "",
        });
    }
    s
}

fn factorial(n: usize) -> u64 {
    (1..=n as u64).product()
}

/// Dates, with an era before them or as a range ("从2015年到2018年").
pub(super) fn dates(t: &Text, i: usize, v: &mut Vec<Tok>) {
    for (e, f) in date_graph(t, i) {
        v.push(tok(e, DATE, say(&f), f.len() as u64));
    }
    for era in ["公元前", "西元前", "纪元前", "公元", "西元", "纪元"] {
        if let Some(l) = t.starts(i, era) {
            for (e, f) in date_graph(t, i + l) {
                if f[0].0 == "year" && (f.len() < 2 || f[1].0 == "month") {
                    v.push(tok(
                        e,
                        DATE,
                        format!("{era}{}", say(&f)),
                        f.len() as u64 + 1,
                    ));
                }
            }
        }
    }
    let (from, at) = match t.starts(i, "从") {
        Some(l) => (Some("从"), i + l),
        None => (None, i),
    };
    for (e1, f1) in date_graph(t, at) {
        for goal in ["到", "至", "-", "~", "——", "—", ""] {
            let Some(gl) = t.starts(e1, goal) else {
                continue;
            };
            for (e2, f2) in date_graph(t, e1 + gl) {
                let mut fields: Fields = Vec::new();
                let all = from
                    .map(|s| ("range", s.to_string()))
                    .into_iter()
                    .chain(f1.iter().cloned())
                    .chain(std::iter::once(("range", goal.to_string())))
                    .chain(f2.iter().cloned());
                // NeMo's token parser keeps each key once, at its first place, with
                // its last value.
                for (k, val) in all {
                    match fields.iter_mut().find(|f| f.0 == k) {
                        Some(f) => f.1 = val,
                        None => fields.push((k, val)),
                    }
                }
                let perms = factorial(fields.len());
                match range_order(&fields) {
                    Some(s) => v.push(Tok {
                        end: e2,
                        cost: DATE_RANGE,
                        out: s,
                        perms,
                        fail: false,
                    }),
                    None => v.push(failing(e2, DATE_RANGE)),
                }
            }
        }
    }
}

/// The first ordering of the fields (in `itertools.permutations` order) that NeMo's
/// range verbaliser takes: date fields, the range word, date fields, each side in
/// year-month-day order.
fn range_order(fields: &[(&'static str, String)]) -> Option<String> {
    let n = fields.len();
    let mut idx: Vec<usize> = (0..n).collect();
    let rank = |k: &str| match k {
        "year" => 0,
        "month" => 1,
        _ => 2,
    };
    loop {
        let keys: Vec<&str> = idx.iter().map(|&j| fields[j].0).collect();
        if let Some(r) = keys.iter().position(|k| *k == "range") {
            let ordered = |side: &[&str]| {
                side.iter().all(|k| *k != "range")
                    && side.windows(2).all(|w| rank(w[0]) < rank(w[1]))
            };
            if ordered(&keys[..r]) && ordered(&keys[r + 1..]) {
                let f: Vec<(&str, String)> = idx.iter().map(|&j| fields[j].clone()).collect();
                return Some(say(&f));
            }
        }
        // Next permutation in lexicographic order.
        let p = (1..n).rev().find(|&p| idx[p - 1] < idx[p])?;
        let q = (p..n).rev().find(|&q| idx[q] > idx[p - 1])?;
        idx.swap(p - 1, q);
        idx[p..].reverse();
    }
}

const AM_PM: &[&str] = &[
    " a.m.", " A.M.", " p.m.", " P.M.", " am", " AM", " pm", " PM", "a.m.", "A.M.", "p.m.", "P.M.",
    "am", "AM", "pm", "PM",
];

/// Clock parts at `i` with the word after them: hours (点, 小时…), minutes (分, 刻…),
/// seconds (秒…): (end, spoken) for `which` = 0, 1, 2.
fn clock_part(t: &Text, i: usize, which: usize) -> Vec<(usize, String)> {
    let words: &[(&str, &str)] = match which {
        0 => &[
            ("个小时", "个小时"),
            ("個小時", "个小时"),
            ("个钟头", "个钟头"),
            ("個鐘頭", "个钟头"),
            ("个点", "个点"),
            ("個點", "個点"),
            ("小时", "小时"),
            ("小時", "小时"),
            ("点", "点"),
            ("點", "点"),
        ],
        1 => &[
            ("分钟", "分钟"),
            ("刻钟", "刻钟"),
            ("分", "分"),
            ("刻", "刻"),
        ],
        _ => &[("秒钟", "秒钟"), ("秒鐘", "秒钟"), ("秒", "秒")],
    };
    let mut out = Vec::new();
    for l in 1..=t.digits(i).min(2) {
        let s = t.slice(i, i + l);
        let n = if which == 0 { hour(s) } else { minute(s) };
        let Some(n) = n else { continue };
        for (w, said) in words {
            if let Some(wl) = t.starts(i + l, w) {
                out.push((i + l + wl, format!("{n}{said}")));
            }
        }
    }
    out
}

/// Times: "10:30", "1:30:45", "3点", "9点15分", "2个小时", "5分钟", with am/pm after.
pub(super) fn times(t: &Text, i: usize, v: &mut Vec<Tok>) {
    let mut found: Vec<(usize, String, u64)> = Vec::new();
    let nd = t.digits(i);
    for hl in 1..=nd.min(2) {
        let Some(h) = hour(t.slice(i, i + hl)) else {
            continue;
        };
        let c = i + hl;
        if !matches!(t.at(c), Some(':' | '：')) {
            continue;
        }
        for ml in 1..=t.digits(c + 1).min(2) {
            let Some(m) = minute(t.slice(c + 1, c + 1 + ml)) else {
                continue;
            };
            let me = c + 1 + ml;
            found.push((me, format!("{h}点{m}分"), 2));
            if matches!(t.at(me), Some(':' | '：')) {
                for sl in 1..=t.digits(me + 1).min(2) {
                    if let Some(s) = minute(t.slice(me + 1, me + 1 + sl)) {
                        found.push((me + 1 + sl, format!("{h}点{m}分{s}秒"), 3));
                    }
                }
            }
        }
    }
    // Clock words: hour, minute, second parts in that order, each optional.
    let mut chains: Vec<(usize, String, u64, usize)> = vec![(i, String::new(), 0, 0)];
    let mut k = 0;
    while k < chains.len() {
        let (at, said, parts, next) = chains[k].clone();
        for which in next..3 {
            for (e, s) in clock_part(t, at, which) {
                chains.push((e, format!("{said}{s}"), parts + 1, which + 1));
            }
        }
        k += 1;
    }
    found.extend(
        chains
            .into_iter()
            .filter(|c| c.2 > 0)
            .map(|(e, s, p, _)| (e, s, p)),
    );
    for (e, s, parts) in found {
        for suffix in AM_PM {
            if let Some(l) = t.starts(e, suffix) {
                v.push(tok(e + l, TIME, format!("{s}{suffix}"), parts + 1));
            }
        }
        v.push(tok(e, TIME, s, parts));
    }
}
