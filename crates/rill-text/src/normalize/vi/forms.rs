//! The forms NeMo's Vietnamese taggers read at one position (decimals, money, measures,
//! times, dates, fractions), each as (length in bytes, spoken form), for `vi.rs`.

use super::dates::{date_at, time_at};
use super::tables::{
    cardinal, digit, digit_words, is_cardinal, BASES, CURRENCIES, MINOR, PER_BASES, PER_PREFIXES,
    PER_UNIT, PREFIXES, QUANTITY_ABBR, QUANTITY_WORDS, SPECIAL_UNITS,
};
use super::{MINOR_ONLY, MONEY_WORD, SEMIOTIC};
/// Leading ASCII digits, at most 64 (a longer run is never one number).
pub(super) fn run_digits(s: &str) -> usize {
    s.bytes().take(64).take_while(u8::is_ascii_digit).count()
}

/// "1.500.000": a first group of 1..=3 digits (not starting with 0) and 1..=6 groups of
/// three after dots: (length, digits).
pub(super) fn dotted(s: &str) -> Option<(usize, String)> {
    let first = run_digits(s);
    if !(1..=3).contains(&first) || s.starts_with('0') {
        return None;
    }
    let b = s.as_bytes();
    let mut digits = s[..first].to_string();
    let mut p = first;
    let mut groups = 0;
    while groups < 6
        && b.get(p) == Some(&b'.')
        && b.len() >= p + 4
        && b[p + 1..p + 4].iter().all(u8::is_ascii_digit)
    {
        digits.push_str(&s[p + 1..p + 4]);
        p += 4;
        groups += 1;
    }
    (groups > 0 && is_cardinal(&digits)).then_some((p, digits))
}

/// The integer NeMo's cardinal grammar reads at the start of `s` (all its digits, or a
/// number grouped with dots): (length, spoken).
fn integer_at(s: &str) -> Option<(usize, String)> {
    if let Some((len, d)) = dotted(s) {
        return Some((len, cardinal(&d)));
    }
    let r = run_digits(s);
    (r > 0 && is_cardinal(&s[..r])).then(|| (r, cardinal(&s[..r])))
}

/// Length of the whitespace at the start of `s`.
pub(super) fn spaces(s: &str) -> usize {
    s.len() - s.trim_start().len()
}

/// `s` without one leading space, if it has one.
pub(super) fn one_space(s: &str) -> usize {
    usize::from(s.starts_with(' '))
}

/// Decimals NeMo's decimal grammar reads (no sign): "12,5", "12,5 tỷ", "100 triệu", "25k",
/// "2,5tr", "1tr5".
fn decimal_at(s: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let int = integer_at(s);
    let p = int.as_ref().map_or(0, |x| x.0);
    let frac_len = match s[p..].strip_prefix(',') {
        Some(f) => f.bytes().take_while(u8::is_ascii_digit).count(),
        None => 0,
    };
    // every length of the fraction (the digits after may start another token), the
    // first 32 and the whole
    let lengths = (1..=frac_len.min(32)).chain((frac_len > 32).then_some(frac_len));
    for fl in lengths {
        let end = p + 1 + fl;
        let mut base = digit_words(&s[p + 1..end]);
        base = match &int {
            Some((_, w)) => format!("{w} phẩy {base}"),
            None => format!("phẩy {base}"),
        };
        let rest = &s[end..];
        for q in QUANTITY_WORDS {
            let sp = one_space(rest);
            if rest[sp..].starts_with(q) {
                out.push((end + sp + q.len(), format!("{base} {q}")));
            }
        }
        for abbr in ["tr", "TR", "Tr"] {
            if rest.starts_with(abbr) {
                out.push((end + abbr.len(), format!("{base} triệu")));
            }
        }
        out.push((end, base));
    }
    if let Some((len, w)) = &int {
        let rest = &s[*len..];
        let sp = one_space(rest);
        for q in QUANTITY_WORDS {
            if rest[sp..].starts_with(q) {
                out.push((len + sp + q.len(), format!("{w} {q}")));
            }
        }
    }
    let r = run_digits(s);
    if (1..=3).contains(&r) && is_cardinal(&s[..r]) {
        let w = cardinal(&s[..r]);
        let rest = &s[r..];
        for (abbr, q) in QUANTITY_ABBR {
            if rest.starts_with(abbr) {
                out.push((r + abbr.len(), format!("{w} {q}")));
            }
        }
        for (abbr, major, minor) in [("tr", "triệu", "trăm nghìn"), ("t", "tỷ", "trăm triệu")]
        {
            if let Some(d) = rest.strip_prefix(abbr).and_then(|x| x.bytes().next()) {
                if d.is_ascii_digit() {
                    let end = r + abbr.len() + 1;
                    out.push((end, format!("{w} {major} {} {minor}", digit(d))));
                }
            }
        }
    }
    out
}

/// A money fraction read as cents ("5" → 50, "05" → 5, "50" → 50).
fn cents(f: &str) -> Option<String> {
    let t = f.trim_end_matches('0');
    let v = match t.len() {
        1 => format!("{t}0"),
        2 => t.trim_start_matches('0').to_string(),
        _ => return None,
    };
    Some(cardinal(&v))
}

/// Per-unit suffixes right after money ("/ngày" → "trên ngày", "/kg" → "một ki lô gam").
fn per_unit(s: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (k, v) in PER_UNIT {
        if s.starts_with(k) {
            out.push((k.len(), (*v).to_string()));
        }
    }
    if let Some(r) = s.strip_prefix('/') {
        for (b, bw) in PER_BASES {
            if r.starts_with(b) {
                out.push((1 + b.len(), format!("một {bw}")));
            }
        }
        for (p, pw) in PER_PREFIXES {
            if let Some(r2) = r.strip_prefix(p) {
                for (b, bw) in PER_BASES {
                    if r2.starts_with(b) {
                        out.push((1 + p.len() + b.len(), format!("một {pw} {bw}")));
                    }
                }
            }
        }
    }
    out
}

fn money_at(s: &str) -> Vec<(usize, u64, String)> {
    let mut out = Vec::new();
    if let Some(r) = s.strip_prefix("0,") {
        let f = r.bytes().take_while(u8::is_ascii_digit).count();
        if let Some(c) = (f > 0).then(|| cents(&r[..f])).flatten() {
            for (sym, minor) in MINOR {
                if r[f..].starts_with(sym) {
                    out.push((2 + f + sym.len(), MINOR_ONLY, format!("{c} {minor}")));
                }
            }
        }
    }
    let int = integer_at(s);
    if let Some((len, w)) = &int {
        let rest = &s[*len..];
        for (sym, major) in CURRENCIES {
            if rest.starts_with(sym) {
                out.push((len + sym.len(), SEMIOTIC, format!("{w} {major}")));
            }
        }
        if let Some(r) = rest.strip_prefix(',') {
            let f = r.bytes().take_while(u8::is_ascii_digit).count();
            if let Some(c) = (f > 0).then(|| cents(&r[..f])).flatten() {
                for (sym, minor) in MINOR {
                    if r[f..].starts_with(sym) {
                        let major = CURRENCIES.iter().find(|(k, _)| k == sym).map(|x| x.1);
                        let major = major.unwrap_or("");
                        let spoken = format!("{w} {major} {c} {minor}");
                        out.push((len + 1 + f + sym.len(), SEMIOTIC, spoken));
                    }
                }
            }
        }
        let sp = spaces(rest);
        for (abbr, q) in QUANTITY_ABBR {
            if let Some(r) = rest[sp..].strip_prefix(abbr) {
                let sp2 = spaces(r);
                for (sym, major) in CURRENCIES {
                    if r[sp2..].starts_with(sym) {
                        let end = len + sp + abbr.len() + sp2 + sym.len();
                        out.push((end, MONEY_WORD, format!("{w} {q} {major}")));
                    }
                }
            }
        }
    }
    let mut words: Vec<(usize, String)> = decimal_at(s);
    if let Some((len, w)) = int {
        words.push((len, w));
    }
    for (len, w) in words {
        let rest = &s[len..];
        let sp = spaces(rest);
        for (sym, major) in CURRENCIES {
            if rest[sp..].starts_with(sym) {
                out.push((len + sp + sym.len(), MONEY_WORD, format!("{w} {major}")));
            }
        }
    }
    let mut with_unit = Vec::new();
    for (len, cost, w) in &out {
        for (l, u) in per_unit(&s[*len..]) {
            with_unit.push((len + l, *cost, format!("{w} {u}")));
        }
    }
    out.extend(with_unit);
    out
}

/// Units at the start of `s`: prefix + base, base, other units.
fn simple_units(s: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (b, w) in BASES.iter().chain(SPECIAL_UNITS) {
        if s.starts_with(b) {
            out.push((b.len(), (*w).to_string()));
        }
    }
    for (p, pw) in PREFIXES {
        if let Some(r) = s.strip_prefix(p) {
            for (b, w) in BASES {
                if r.starts_with(b) {
                    out.push((p.len() + b.len(), format!("{pw} {w}")));
                }
            }
        }
    }
    out
}

fn units(s: &str) -> Vec<(usize, String)> {
    let mut out = simple_units(s);
    let mut compound = Vec::new();
    for (l, w) in &out {
        if let Some(r) = s[*l..].strip_prefix('/') {
            for (l2, w2) in simple_units(r) {
                compound.push((l + 1 + l2, format!("{w} trên {w2}")));
            }
        }
    }
    out.extend(compound);
    out
}

fn fraction_words(n: &str, d: &str) -> String {
    let den = if d == "4" {
        "tư".to_string()
    } else {
        cardinal(d)
    };
    format!("{} phần {den}", cardinal(n))
}

/// Valid denominators at the start of `s` (every length NeMo's cardinal reads).
fn denominators(s: &str) -> Vec<usize> {
    let r = run_digits(s).min(21);
    (1..=r).filter(|&l| is_cardinal(&s[..l])).collect()
}

fn measure_at(s: &str) -> Vec<(usize, String)> {
    let (neg, body, o) = match s.strip_prefix('-') {
        Some(b) => ("âm ", b, 1),
        None => ("", s, 0),
    };
    let r = run_digits(body);
    if r == 0 || !is_cardinal(&body[..r]) {
        return Vec::new();
    }
    let mut numbers = vec![(r, cardinal(&body[..r]))];
    let after = &body[r..];
    if let Some(f) = after.strip_prefix(',') {
        let fl = f.bytes().take_while(u8::is_ascii_digit).count();
        if fl > 0 {
            let w = format!("{} phẩy {}", cardinal(&body[..r]), digit_words(&f[..fl]));
            numbers.push((r + 1 + fl, w));
        }
    }
    if let Some(f) = after.strip_prefix('/') {
        for l in denominators(f) {
            numbers.push((r + 1 + l, fraction_words(&body[..r], &f[..l])));
        }
    }
    let mut out = Vec::new();
    for (nl, w) in numbers {
        let rest = &body[nl..];
        let sp = one_space(rest);
        for (ul, u) in units(&rest[sp..]) {
            out.push((o + nl + sp + ul, format!("{neg}{w} {u}")));
        }
    }
    out
}

pub(super) fn fraction_at(s: &str) -> Vec<(usize, String)> {
    let (neg, body, o) = match s.strip_prefix('-') {
        Some(b) => ("âm ", b, 1),
        None => ("", s, 0),
    };
    let mut out = Vec::new();
    let r = run_digits(body);
    if r == 0 || !is_cardinal(&body[..r]) {
        return out;
    }
    if let Some(f) = body[r..].strip_prefix('/') {
        for l in denominators(f) {
            let w = fraction_words(&body[..r], &f[..l]);
            out.push((o + r + 1 + l, format!("{neg}{w}")));
        }
    }
    if let Some(m) = body[r..].strip_prefix(' ') {
        let n = run_digits(m);
        if n > 0 && is_cardinal(&m[..n]) {
            if let Some(f) = m[n..].strip_prefix('/') {
                for l in denominators(f) {
                    let w = fraction_words(&m[..n], &f[..l]);
                    let int = cardinal(&body[..r]);
                    out.push((o + r + 2 + n + l, format!("{neg}{int} và {w}")));
                }
            }
        }
    }
    out
}

/// Time, date, decimal, money or measure at the start of `s` (what a range joins).
pub(super) fn composites(s: &str) -> Vec<(usize, u64, String)> {
    let mut out: Vec<(usize, u64, String)> = Vec::new();
    let plain = |v: Vec<(usize, String)>| v.into_iter().map(|(l, w)| (l, SEMIOTIC, w));
    out.extend(plain(time_at(s)));
    out.extend(plain(date_at(s)));
    out.extend(plain(decimal_at(s)));
    if let Some(r) = s.strip_prefix('-') {
        out.extend(plain(decimal_at(r)).map(|(l, c, w)| (l + 1, c, format!("âm {w}"))));
    }
    out.extend(money_at(s));
    out.extend(plain(measure_at(s)));
    out
}
