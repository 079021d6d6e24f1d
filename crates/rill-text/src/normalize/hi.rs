//! The Hindi normaliser, after NeMo's Hindi grammars (`nemo_text_processing` 1.2.0,
//! `text_normalization/hi`). Latin (0-9) and Devanagari (०-९) digits read alike. Cardinals
//! in the Indian system ("एक लाख पच्चीस हज़ार", up to 19 digits; longer ones and those
//! with a leading zero digit by digit), "minus" before a negative whole number but
//! "ऋणात्मक" before a negative decimal or fraction, decimals with "दशमलव" and their digits
//! one by one, fractions with "बटा" (Devanagari "१ १/२", "२ १/२", "N १/४", "N १/२", "N ३/४"
//! as डेढ़, ढाई, सवा, साढ़े, पौने), ordinals ("5वां" → "पाँचवां", "1ली" → "पहली", "1st" →
//! "फ़र्स्ट"), money with the symbol before ("₹10.50" → "दस रुपए पचास पैसे"), measures
//! ("5 kg", "1.5 hr" → "डेढ़ घंटा"), dates ("15-08-1990" → "पंद्रह अगस्त उन्नीस सौ
//! नब्बे"), years read as years only before "में", "का", "तक" … or after "सन्", ranges
//! ("3-2" → "तीन से दो"), clock times ("10:30" → "साढ़े दस", "4:20" → "चार बजकर बीस
//! मिनट"), phone numbers near "नंबर", "फोन", "कॉल" … ("शून्य" and the digits),
//! abbreviations ("डॉ." → "डॉक्टर"), Latin words and codes spelt (`electronic`).
//!
//! NeMo picks the cheapest of its weighted readings, and a word no rule reads costs it
//! 100: so `sentence` reads the words by a cheapest-path pass over the same costs, and
//! reproduces what follows from them. Words within five of an address word ("पास",
//! "पार्क", "नगर", "प्लॉट", "रोड" …) have their digits read one by one, Latin letters spelt
//! and symbols set off ("मेरे पास 25 kg" → "मेरे पास दो पाँच के जी"), unless a number
//! at the window's edge can take a word outside it ("1995 में"); a number before a state
//! or city within five words is read digit by digit too ("25 साल से दिल्ली" → "दो पाँच
//! …"). Other quirks kept: "पौने" only after a Devanagari hour or number; "9:00 बजे" →
//! "नौ बजे बजे"; a 10-digit number with no phone word reads as a cardinal; "21st" →
//! "इक्कीस स्टोन" (a number and the unit "st"); digit groups split by commas read group by
//! group ("1,234" → "एक, दो सौ चौंतीस"); "6" in a date is "छः"; a word mixing digits and
//! Devanagari letters stays as written; a negative amount of money, or a '"' inside an
//! address or phone span, leaves the whole text as written (NeMo's verbaliser fails and
//! it returns its input). Punctuation: no space before ",", "।", "%" …, quotes set off by
//! spaces.

use std::ops::Range;

use tables::{
    ABBREVIATIONS, ADDRESS_ENGLISH, ADDRESS_WORDS, CURRENCIES, LETTERS, MONTHS, ORDINAL_EXCEPTIONS,
    PLACES, QUARTER_UNITS, UNITS, WORDS, YEAR_PREFIXES, YEAR_SUFFIXES,
};

const SCALES: [&str; 8] = ["हज़ार", "लाख", "करोड़", "अरब", "खरब", "नील", "पद्म", "शंख"];

/// ASCII digits of a number written in Latin or Devanagari digits.
fn digits(s: &str) -> Option<String> {
    if s.is_empty() {
        return None;
    }
    s.chars()
        .map(|c| match c {
            '0'..='9' => Some(c),
            '०'..='९' => char::from_digit(c as u32 - '०' as u32, 10),
            _ => None,
        })
        .collect()
}

fn is_digit(c: char) -> bool {
    c.is_ascii_digit() || ('०'..='९').contains(&c)
}

fn value(d: &str) -> usize {
    d.bytes().fold(0, |v, b| {
        v.saturating_mul(10).saturating_add(usize::from(b - b'0'))
    })
}

fn one_by_one(d: &str) -> String {
    let w: Vec<&str> = d.bytes().map(|b| WORDS[usize::from(b - b'0')]).collect();
    w.join(" ")
}

/// A cardinal in the Indian system from ASCII digits without a leading zero, ≤ 19 digits.
fn plain(d: &str) -> Option<String> {
    if d.is_empty() || d.len() > 19 || (d.len() > 1 && d.starts_with('0')) {
        return None;
    }
    if d == "0" {
        return Some(WORDS[0].to_string());
    }
    let split = d.len().saturating_sub(3);
    let (head, tail) = d.split_at(split);
    let mut words: Vec<&str> = Vec::new();
    let first = head.len() % 2;
    let mut groups: Vec<&str> = Vec::new();
    if first == 1 {
        groups.push(&head[..1]);
    }
    groups.extend(
        head.as_bytes()[first..]
            .chunks(2)
            .map(|c| std::str::from_utf8(c).unwrap_or("0")),
    );
    let n = groups.len();
    for (k, g) in groups.iter().enumerate() {
        let v = value(g);
        if v > 0 {
            words.push(WORDS[v]);
            words.push(SCALES[n - 1 - k]);
        }
    }
    let v = value(tail);
    if v >= 100 {
        words.push(WORDS[v / 100]);
        words.push("सौ");
    }
    if !v.is_multiple_of(100) {
        words.push(WORDS[v % 100]);
    }
    Some(words.join(" "))
}

/// Any digit string: leading zeros or more than 19 digits one by one.
fn cardinal(d: &str) -> String {
    plain(d).unwrap_or_else(|| one_by_one(d))
}

/// A number up to ten lakhs (what NeMo's measures accept).
fn small(d: &str) -> Option<String> {
    if d.len() > 7 {
        return None;
    }
    plain(d)
}

/// A four-digit year: "1990" → "उन्नीस सौ नब्बे", "2005" → "दो हज़ार पाँच".
fn year(s: &str) -> Option<String> {
    let d = digits(s)?;
    let b = d.as_bytes();
    if d.len() != 4 || b[0] == b'0' {
        return None;
    }
    if b[1] == b'0' {
        return plain(&d);
    }
    let rest = value(&d[2..]);
    Some(match rest {
        0 => format!("{} सौ", WORDS[value(&d[..2])]),
        r => format!("{} सौ {}", WORDS[value(&d[..2])], WORDS[r]),
    })
}

fn sign(s: &str) -> (bool, &str) {
    match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    }
}

/// "12.05" → "बारह दशमलव शून्य पाँच"; the whole part as `whole` reads it.
fn decimal_with(s: &str, whole: fn(&str) -> Option<String>) -> Option<String> {
    let (neg, s) = sign(s);
    let (a, b) = s.split_once('.')?;
    let (a, b) = (digits(a)?, digits(b)?);
    let out = format!("{} दशमलव {}", whole(&a)?, one_by_one(&b));
    Some(if neg {
        format!("ऋणात्मक {out}")
    } else {
        out
    })
}

fn decimal(s: &str) -> Option<String> {
    decimal_with(s, plain)
}

fn whole_number(s: &str) -> Option<String> {
    let (neg, s) = sign(s);
    let c = cardinal(&digits(s)?);
    Some(if neg { format!("minus {c}") } else { c })
}

fn fraction(s: &str) -> Option<String> {
    let (neg, s) = sign(s);
    let (a, b) = s.split_once('/')?;
    let out = format!("{} बटा {}", cardinal(&digits(a)?), cardinal(&digits(b)?));
    Some(if neg {
        format!("ऋणात्मक {out}")
    } else {
        out
    })
}

/// "N a/b": Devanagari halves and quarters as डेढ़, ढाई, सवा, साढ़े, पौने.
fn mixed_fraction(n: &str, f: &str) -> Option<String> {
    let (neg, n) = sign(n);
    let d = digits(n)?;
    let quarter = match f {
        "१/२" if d == "1" && n == "१" => Some("डेढ़".to_string()),
        "१/२" if d == "2" && n == "२" => Some("ढाई".to_string()),
        "१/४" => Some(format!("सवा {}", cardinal(&d))),
        "१/२" => Some(format!("साढ़े {}", cardinal(&d))),
        "३/४" if n.chars().all(|c| c != '0' && !c.is_ascii_digit()) && d.len() <= 2 => {
            Some(format!("पौने {}", plain(&(value(&d) + 1).to_string())?))
        }
        _ => None,
    };
    if let (Some(q), false) = (quarter, neg) {
        return Some(q);
    }
    let out = format!("{} और {}", cardinal(&d), fraction(f)?);
    Some(if neg {
        format!("ऋणात्मक {out}")
    } else {
        out
    })
}

fn ordinal(s: &str) -> Option<String> {
    let end = s.find(|c: char| !(c.is_ascii_digit() || ('०'..='९').contains(&c)))?;
    let d = digits(&s[..end])?;
    let suffix = &s[end..];
    let key = format!("{d}{suffix}");
    if let Some((_, w)) = ORDINAL_EXCEPTIONS.iter().find(|(k, _)| *k == key) {
        return Some((*w).to_string());
    }
    let suffix = match suffix {
        "वां" | "वीं" | "वें" => suffix,
        "वे" => "वें",
        _ => return None,
    };
    if d.len() > 5 {
        return None;
    }
    Some(format!("{}{suffix}", plain(&d)?))
}

fn money(s: &str) -> Option<String> {
    let c = s.chars().next()?;
    let (_, major, minor) = CURRENCIES.iter().find(|(k, _, _)| *k == c)?;
    let rest = &s[c.len_utf8()..];
    match rest.split_once('.') {
        None => Some(format!("{} {major}", cardinal(&digits(rest)?))),
        Some((a, b)) => {
            let (a, b) = (digits(a)?, digits(b)?);
            if a == "0" {
                return Some(format!("{} {minor}", cardinal(&b)));
            }
            Some(format!("{} {major} {} {minor}", cardinal(&a), cardinal(&b)))
        }
    }
}

fn lookup<'t>(table: &[(&str, &'t str)], key: &str) -> Option<&'t str> {
    table.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

/// A number and a unit: "5 kg", "1.5 hr" → "डेढ़ घंटा", "10 yr" → "दस साल".
fn measure(n: &str, unit: &str) -> Option<String> {
    if let Some(u) = lookup(QUARTER_UNITS, unit) {
        let (neg, body) = sign(n);
        if let Some((a, b)) = body.split_once('.') {
            let d = digits(a)?;
            let frac = digits(b)?;
            let whole = small(&d);
            let q = match (d.as_str(), frac.as_str()) {
                ("1", "5") => Some("डेढ़".to_string()),
                ("2", "5") => Some("ढाई".to_string()),
                (_, "5") => whole.map(|w| format!("साढ़े {w}")),
                (_, "25") => whole.map(|w| format!("सवा {w}")),
                (_, "75") if a.chars().all(|c| !c.is_ascii_digit()) && d.len() <= 2 => {
                    plain(&(value(&d) + 1).to_string()).map(|w| format!("पौने {w}"))
                }
                _ => None,
            };
            if let Some(q) = q {
                let q = if neg { format!("minus {q}") } else { q };
                return Some(format!("{q} {u}"));
            }
        }
    }
    let (neg, body) = sign(n);
    let unit_word = |formal: bool| -> Option<&str> {
        match unit {
            "yr" if formal => Some("वर्ष"),
            "yr" => Some("साल"),
            u => lookup(UNITS, u),
        }
    };
    if body.contains('.') {
        let num = decimal_with(n, small)?;
        return Some(format!("{num} {}", unit_word(true)?));
    }
    let d = digits(body)?;
    let num = small(&d)?;
    let num = if neg { format!("minus {num}") } else { num };
    Some(format!("{num} {}", unit_word(d.len() >= 4)?))
}

/// "35°C", "5kg", "10x12".
fn measure_attached(s: &str) -> Option<String> {
    let start = usize::from(s.starts_with('-'));
    let end = s[start..]
        .find(|c: char| !(c.is_ascii_digit() || ('०'..='९').contains(&c) || c == '.'))?
        + start;
    let (n, unit) = s.split_at(end);
    if end == start {
        return None;
    }
    if let Some((x, m)) = unit.split_once(['x', 'X', '*']) {
        if x.is_empty() {
            if let Some(m) = digits(m).as_deref().and_then(small) {
                return Some(format!(
                    "{} बाई {m}",
                    measure(n, "x")?.trim_end_matches(" बाई")
                ));
            }
        }
    }
    measure(n, unit)
}

/// "10:30" → "साढ़े दस", "4:20" → "चार बजकर बीस मिनट", "12:30:45".
fn time(s: &str) -> Option<String> {
    let mut parts = s.split(':');
    let (h, m, sec) = (parts.next()?, parts.next()?, parts.next());
    if parts.next().is_some() {
        return None;
    }
    let (hd, md) = (digits(h)?, digits(m)?);
    let hour = (hd.len() <= 2 && (hd.len() == 1 || !hd.starts_with('0')) && value(&hd) <= 24)
        .then(|| WORDS[value(&hd)]);
    let minute = (md.len() == 2 && (1..=60).contains(&value(&md))).then(|| WORDS[value(&md)]);
    if let Some(sec) = sec {
        let sd = digits(sec)?;
        let second = (sd.len() == 2 && (1..=60).contains(&value(&sd))).then(|| WORDS[value(&sd)]);
        return Some(format!("{} बजकर {} मिनट {} सेकंड", hour?, minute?, second?));
    }
    let any_hour = (!hd.starts_with('0') && hd.len() <= 2).then(|| WORDS[value(&hd)]);
    match (hd.as_str(), md.as_str()) {
        ("1", "30") => return Some("डेढ़".to_string()),
        ("2", "30") => return Some("ढाई".to_string()),
        (_, "15") if any_hour.is_some() => return Some(format!("सवा {}", any_hour?)),
        (_, "30") if any_hour.is_some() => return Some(format!("साढ़े {}", any_hour?)),
        (_, "45") if h.chars().all(|c| !c.is_ascii_digit()) && hd.len() <= 2 => {
            return Some(format!("पौने {}", plain(&(value(&hd) + 1).to_string())?));
        }
        (_, "00") => return Some(format!("{} बजे", hour?)),
        _ => {}
    }
    Some(format!("{} बजकर {} मिनट", hour?, minute?))
}

fn day(d: &str) -> Option<&'static str> {
    (d.len() == 2 && (1..=31).contains(&value(d))).then(|| match value(d) {
        6 => "छः",
        v => WORDS[v],
    })
}

fn month(d: &str) -> Option<&'static str> {
    (d.len() == 2 && (1..=12).contains(&value(d))).then(|| MONTHS[value(d) - 1])
}

/// "15-08-1990", "01/03/2024", "10-05", "05-2020".
fn date(s: &str) -> Option<String> {
    let parts: Vec<&str> = s.split(['-', '/']).collect();
    if parts.len() == 2 && s.contains('-') {
        // by NeMo's weights: month-year, then a range, then day-month, then month-day
        let (a, b) = (digits(parts[0])?, digits(parts[1])?);
        if let (Some(m), Some(y)) = (month(&a), year(parts[1])) {
            return Some(format!("{m} {y}"));
        }
        if let Some(r) = range(s) {
            return Some(r);
        }
        if let (Some(d), Some(m)) = (day(&a), month(&b)) {
            return Some(format!("{d} {m}"));
        }
        return month(&a).zip(day(&b)).map(|(m, d)| format!("{m} {d}"));
    }
    if parts.len() != 3 {
        return None;
    }
    let (a, b, y) = (digits(parts[0])?, digits(parts[1])?, year(parts[2])?);
    if let (Some(d), Some(m)) = (day(&a), month(&b)) {
        return Some(format!("{d} {m} {y}"));
    }
    Some(format!("{} {} {y}", month(&a)?, day(&b)?))
}

/// "1990-2000" → "उन्नीस सौ नब्बे से दो हज़ार", "3-2" → "तीन से दो".
fn range(s: &str) -> Option<String> {
    let (a, b) = s.split_once('-')?;
    let side = |x: &str| {
        let d = digits(x)?;
        match d.len() {
            4 => year(x),
            1..=3 => plain(&d),
            _ => None,
        }
    };
    Some(format!("{} से {}", side(a)?, side(b)?))
}

/// A word's core read alone, by the first rule that takes it.
fn core_rule(c: &str) -> Option<String> {
    if !c
        .chars()
        .any(|c| c.is_ascii_digit() || ('०'..='९').contains(&c))
    {
        return None;
    }
    time(c)
        .or_else(|| date(c))
        .or_else(|| range(c))
        .or_else(|| ordinal(c))
        .or_else(|| money(c))
        .or_else(|| measure_attached(c))
        .or_else(|| fraction(c))
        .or_else(|| decimal(c))
        .or_else(|| whole_number(c))
}

fn is_punct(c: char) -> bool {
    (c.is_ascii_punctuation() && !matches!(c, '$' | '[' | ']'))
        || matches!(
            c,
            '।' | '॥'
                | '“'
                | '”'
                | '‘'
                | '’'
                | '«'
                | '»'
                | '…'
                | '–'
                | '—'
                | '¿'
                | '¡'
                | '·'
                | '„'
                | '‹'
                | '›'
                | '॰'
        )
}

/// Punctuation NeMo's post-processing joins to the word before.
fn no_space_before(c: char) -> bool {
    is_punct(c) && !matches!(c, '\'' | '"' | '«' | '-' | '—' | '<' | '{' | '(')
}

fn opens(c: char) -> bool {
    matches!(c, '<' | '{' | '(' | '[')
}

/// NeMo's post-processing of tokens joined by spaces.
fn post(tokens: &[&str]) -> String {
    let mut out = String::new();
    for t in tokens.iter().filter(|t| !t.is_empty()) {
        let glue = out.is_empty() || t.starts_with(no_space_before) || out.ends_with(opens);
        if !glue {
            out.push(' ');
        }
        out.push_str(t);
    }
    out
}

/// A core read by a rule or as an electronic form, with NeMo's cost for it.
fn read_one(c: &str) -> Option<(String, f32)> {
    if let Some(s) = core_rule(c) {
        return Some((s, 1.1));
    }
    if let Some(d) = sentence::landline(c).filter(|_| c.contains(['-', '.'])) {
        return Some((format!("शून्य {}", one_by_one(&d)), 1.9));
    }
    electronic::electronic(c).map(|s| (s, 2.3))
}

/// The spoken form of a core and its cost: read whole, or cut at punctuation into parts
/// each read whole (`None` when some part is not: the word stays as written). The parts
/// are matched from the end, longest first.
fn read_core(c: &str) -> Option<(String, f32)> {
    if let Some(r) = read_one(c) {
        return Some(r);
    }
    let mut runs: Vec<&str> = Vec::new();
    let mut start = 0;
    for (i, ch) in c.char_indices() {
        if i > 0 && is_punct(ch) != c[..i].ends_with(is_punct) {
            runs.push(&c[start..i]);
            start = i;
        }
    }
    runs.push(&c[start..]);
    if runs.len() < 2 {
        return None;
    }
    let mut out: Vec<String> = Vec::new();
    let mut cost = 0.0;
    let mut end = runs.len();
    while end > 0 {
        let j = end - 1;
        if runs[j].starts_with(is_punct) {
            out.push(runs[j].to_string());
            cost += 2.1;
            end = j;
            continue;
        }
        let found = (j.saturating_sub(4)..=j)
            .filter(|k| !runs[*k].starts_with(is_punct))
            .find_map(|k| read_one(&runs[k..=j].concat()).map(|r| (k, r)));
        let (k, (spoken, c)) = found?;
        out.push(spoken);
        cost += c;
        end = k;
    }
    out.reverse();
    let refs: Vec<&str> = out.iter().map(String::as_str).collect();
    Some((post(&refs), cost))
}

/// A word cut into leading punctuation, core and trailing punctuation; a minus or plus
/// before a digit stays with the core.
fn split(word: &str) -> (&str, &str, &str) {
    let mut lead = 0;
    for (i, c) in word.char_indices() {
        let rest = &word[i + c.len_utf8()..];
        let signed = matches!(c, '-' | '+') && rest.starts_with(is_digit);
        if !is_punct(c) || signed {
            break;
        }
        lead = i + c.len_utf8();
    }
    let rest = &word[lead..];
    let core = rest.trim_end_matches(is_punct);
    (&word[..lead], core, &rest[core.len()..])
}

fn framed(lead: &str, spoken: &str, trail: &str) -> String {
    post(&[lead, spoken, trail])
}

mod electronic;
mod sentence;
mod tables;

/// Normalises Hindi text; `changes` receives (byte range in `text`, spoken form) for every
/// span replaced.
pub(super) fn normalize(text: &str, changes: &mut Vec<(Range<usize>, String)>) -> String {
    sentence::normalize(text, changes)
}
