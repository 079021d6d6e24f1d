//! The English normaliser: whitespace-separated words, each rule tried in turn at each
//! word (multi-word rules first: addresses, dates, times with am/pm, amounts with a scale,
//! numbers with a unit), then single-word classes (abbreviations, money, percentages,
//! times, numeric dates, phone numbers, ordinals, decades, fractions, ranges, numbers).
//! Words no rule reads are kept as written; words are joined by single spaces, as NeMo's
//! output is.

use super::en_tables::{
    ABBREVIATIONS, CURRENCIES, MONTHS, MONTH_NUMBERS, SCALE_WORDS, STREET_WORDS, UNITS,
};
use super::numbers::{
    cardinal, digits, fraction, ordinal, plain_integer, plural_last, two_digit, year,
};

const LEAD: &[char] = &['(', '[', '"', '\'', '“', '‘'];
const TRAIL: &[char] = &['.', ',', '!', '?', ';', ':', ')', ']', '"', '\'', '”', '’'];

/// A word cut into leading punctuation, core and trailing punctuation.
#[derive(Clone, Copy)]
struct Word<'a> {
    lead: &'a str,
    core: &'a str,
    trail: &'a str,
}

fn split(word: &str) -> Word<'_> {
    let rest = word.trim_start_matches(LEAD);
    let lead = &word[..word.len() - rest.len()];
    let core = rest.trim_end_matches(TRAIL);
    Word {
        lead,
        core,
        trail: &rest[core.len()..],
    }
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// A written number: sign, digits of the whole part (commas removed), fraction digits.
struct Number {
    negative: bool,
    whole: String,
    commas: bool,
    fraction: Option<String>,
}

fn parse_number(s: &str) -> Option<Number> {
    let (negative, s) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let (whole, fraction) = match s.split_once('.') {
        Some((w, f)) if is_digits(f) => (w, Some(f.to_string())),
        Some(_) => return None,
        None => (s, None),
    };
    let commas = whole.contains(',');
    if commas {
        let mut groups = whole.split(',');
        let first = groups.next()?;
        if !is_digits(first) || first.len() > 3 || first.starts_with('0') {
            return None;
        }
        if !groups.all(|g| g.len() == 3 && is_digits(g)) {
            return None;
        }
    } else if !is_digits(whole) {
        return None;
    }
    Some(Number {
        negative,
        whole: whole.replace(',', ""),
        commas,
        fraction,
    })
}

/// A number read aloud: "minus", the whole part, "point" and the fraction digit by digit.
fn read_number(n: &Number) -> Option<String> {
    let whole = if n.fraction.is_some() || n.commas {
        cardinal(&n.whole)?
    } else {
        plain_integer(&n.whole)?
    };
    let mut out = if n.negative {
        format!("minus {whole}")
    } else {
        whole
    };
    if let Some(f) = &n.fraction {
        out.push_str(" point ");
        out.push_str(&digits(f)?);
    }
    Some(out)
}

fn read(s: &str) -> Option<String> {
    read_number(&parse_number(s)?)
}

fn month(core: &str) -> Option<&'static str> {
    MONTHS.iter().find(|(w, _)| *w == core).map(|(_, s)| *s)
}

/// A day of the month, "5" or "5th".
fn day(core: &str) -> Option<String> {
    let d = core.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &core[d.len()..];
    if !matches!(suffix, "" | "st" | "nd" | "rd" | "th") || !is_digits(d) || d.len() > 2 {
        return None;
    }
    let n: u32 = d.parse().ok()?;
    if (1..=31).contains(&n) {
        ordinal(d)
    } else {
        None
    }
}

fn is_year(core: &str) -> bool {
    is_digits(core) && core.len() == 4 && !core.starts_with('0')
}

/// "am", "pm", "a.m.", "p.m." (any case) and the punctuation after them.
fn meridiem(word: &str) -> Option<(&'static str, &str)> {
    let lower = word.to_ascii_lowercase();
    for (written, spoken) in [("a.m.", "AM"), ("p.m.", "PM"), ("am", "AM"), ("pm", "PM")] {
        if let Some(rest) = lower.strip_prefix(written) {
            if rest.chars().all(|c| TRAIL.contains(&c)) {
                return Some((spoken, &word[written.len()..]));
            }
        }
    }
    None
}

/// "3:30" → ("three", Some("thirty")); minutes "00" → None, "05" → "o five".
fn clock(core: &str, max_hour: u32) -> Option<(String, Option<String>)> {
    let (h, m) = core.split_once(':')?;
    if !is_digits(h) || h.len() > 2 || !is_digits(m) || m.len() != 2 {
        return None;
    }
    let (hour, minute): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    if hour > max_hour || minute > 59 {
        return None;
    }
    let minutes = match minute {
        0 => None,
        1..=9 => Some(format!("o {}", two_digit(minute))),
        _ => Some(two_digit(minute)),
    };
    Some((two_digit(hour), minutes))
}

fn unit(written: &str) -> Option<&'static str> {
    if let Some((_, s)) = UNITS.iter().find(|(w, _)| *w == written) {
        return Some(s);
    }
    let lower = written.to_lowercase();
    if let Some((_, s)) = UNITS.iter().find(|(w, _)| *w == lower) {
        return Some(s);
    }
    None
}

/// A unit, or `a/b` of two units ("km/h" → "kilometer per H"), spoken for `one` or many.
fn speak_unit(written: &str, one: bool) -> Option<String> {
    let (first, per) = match written.split_once('/') {
        Some((a, b)) => (unit(a)?, Some(unit(b)?)),
        None => (unit(written)?, None),
    };
    let mut out = if one {
        first.to_string()
    } else {
        plural(first)
    };
    if let Some(p) = per {
        out.push_str(" per ");
        out.push_str(p);
    }
    Some(out)
}

/// The plural of a spoken unit: its first word takes it ("miles per hour").
fn plural(unit: &str) -> String {
    if unit.chars().all(|c| !c.is_lowercase()) {
        return unit.to_string();
    }
    let (head, rest) = match unit.split_once(' ') {
        Some((h, r)) if !matches!(h, "square" | "cubic" | "kilo") => (h, format!(" {r}")),
        _ => match unit.rsplit_once(' ') {
            Some((h, l)) if matches!(h, "square" | "cubic" | "kilo") => {
                return format!("{h} {}", plural(l))
            }
            _ => (unit, String::new()),
        },
    };
    let head = match head {
        "foot" => "feet".to_string(),
        "inch" => "inches".to_string(),
        h if h.ends_with('y') => plural_last(h),
        h => format!("{h}s"),
    };
    format!("{head}{rest}")
}

/// Multi-word rules at the start of `words`: (words used, spoken form).
fn multi(words: &[&str]) -> Option<(usize, String)> {
    let w: Vec<Word> = words.iter().take(4).map(|w| split(w)).collect();
    let bare = |i: usize| {
        w.get(i)
            .is_some_and(|x| x.lead.is_empty() && x.trail.is_empty())
    };
    // "World War II"
    if words.len() >= 3 && words[0] == "World" && words[1] == "War" && w[2].lead.is_empty() {
        let n = match w[2].core {
            "I" => Some("one"),
            "II" => Some("two"),
            _ => None,
        };
        if let Some(n) = n {
            return Some((3, format!("World War {n}{}", w[2].trail)));
        }
    }
    // "123 Main St." (the street word's full stop is dropped, as NeMo does)
    if bare(0) && is_digits(w[0].core) && w[0].core.len() <= 5 && !w[0].core.starts_with('0') {
        for len in 1..=2 {
            if w.len() < len + 2 || !(1..=len).all(&bare) {
                break;
            }
            let capital =
                (1..=len).all(|i| w[i].core.starts_with(|c: char| c.is_ascii_uppercase()));
            let last = w[len + 1];
            let key = last.core.to_ascii_lowercase();
            let street = STREET_WORDS.iter().find(|(k, _)| *k == key);
            if let (true, true, Some((_, spoken))) = (capital, last.lead.is_empty(), street) {
                let names: Vec<&str> = (1..=len).map(|i| w[i].core).collect();
                let trail = last.trail.strip_prefix('.').unwrap_or(last.trail);
                let number = house_number(w[0].core)?;
                return Some((
                    len + 2,
                    format!("{number} {} {spoken}{trail}", names.join(" ")),
                ));
            }
        }
    }
    // "January 5, 2024", "July 4", "June 2019"
    if w.len() >= 2 && bare(0) && w[1].lead.is_empty() {
        if let Some(m) = month(w[0].core) {
            if let Some(d) = day(w[1].core) {
                if w[1].trail == "," && w.len() >= 3 && w[2].lead.is_empty() && is_year(w[2].core) {
                    let y = year(w[2].core)?;
                    return Some((3, format!("{m} {d}, {y}{}", w[2].trail)));
                }
                return Some((2, format!("{m} {d}{}", w[1].trail)));
            }
            if is_year(w[1].core) {
                return Some((2, format!("{m} {}{}", year(w[1].core)?, w[1].trail)));
            }
        }
    }
    // "5 Jan 2024"
    if w.len() >= 3 && bare(0) && bare(1) && w[2].lead.is_empty() && is_year(w[2].core) {
        if let (Some(d), Some(m)) = (day(w[0].core), month(w[1].core)) {
            return Some((
                3,
                format!("the {d} of {m} {}{}", year(w[2].core)?, w[2].trail),
            ));
        }
    }
    // "(212) 555-0199"
    if let Some(area) = words[0].strip_prefix('(').and_then(|s| s.strip_suffix(')')) {
        if let Some((a, b)) = w
            .get(1)
            .filter(|x| x.lead.is_empty())
            .and_then(|x| x.core.split_once('-'))
        {
            if area.len() == 3
                && is_digits(area)
                && a.len() == 3
                && b.len() == 4
                && is_digits(a)
                && is_digits(b)
            {
                let d = |s: &str| digits(s);
                let out = format!("{}, {}, {}{}", d(area)?, d(a)?, d(b)?, w[1].trail);
                return Some((2, out));
            }
        }
    }
    if w.len() >= 2 && bare(0) && w[1].lead.is_empty() {
        // "3:30 pm", "7 a.m."
        if let Some((spoken, trail)) = meridiem(words[1]) {
            if let Some(t) = twelve_hour(w[0].core) {
                return Some((2, format!("{t} {spoken}{trail}")));
            }
        }
        // "$2.5 million"
        if SCALE_WORDS.contains(&w[1].core) {
            if let Some((c, names)) = currency(w[0].core) {
                let n = read(&w[0].core[c.len_utf8()..])?;
                return Some((2, format!("{n} {} {}{}", w[1].core, names[1], w[1].trail)));
            }
        }
        // "2-3 cm"
        if let Some((a, b)) = w[0].core.split_once('-') {
            if let (Some(x), Some(y)) = (parse_number(a), parse_number(b)) {
                if !a.is_empty() && unit(w[1].core.split('/').next()?).is_some() {
                    let (x, y) = (read_number(&x)?, read_number(&y)?);
                    if let Some(u) = speak_unit(w[1].core, false) {
                        return Some((2, format!("{x} to {y} {u}{}", w[1].trail)));
                    }
                }
            }
        }
        // "5 km", "3.2 kg", "120 km/h"
        if let (Some(n), Some(_)) = (parse_number(w[0].core), unit(w[1].core.split('/').next()?)) {
            let spoken = read_number(&n)?;
            let one = spoken == "one";
            if let Some(u) = speak_unit(w[1].core, one) {
                return Some((2, format!("{spoken} {u}{}", w[1].trail)));
            }
        }
    }
    None
}

/// A time before "am" or "pm": "3:30" → "three thirty", "7" → "seven".
fn twelve_hour(core: &str) -> Option<String> {
    match clock(core, 12) {
        Some((h, Some(m))) => Some(format!("{h} {m}")),
        Some((h, None)) => Some(h),
        None if is_digits(core) && core.len() <= 2 => {
            let h: u32 = core.parse().ok()?;
            (1..=12).contains(&h).then(|| two_digit(h))
        }
        None => None,
    }
}

/// A house number: "123" → "one twenty three", four digits as a year.
fn house_number(d: &str) -> Option<String> {
    match d.len() {
        3 => {
            let (h, rest) = (&d[..1], d[1..].parse::<u32>().ok()?);
            let h = cardinal(h)?;
            Some(match rest {
                0 => format!("{h} hundred"),
                1..=9 => format!("{h} oh {}", two_digit(rest)),
                _ => format!("{h} {}", two_digit(rest)),
            })
        }
        4 => year(d),
        _ => cardinal(d),
    }
}

fn currency(core: &str) -> Option<(char, &'static [&'static str; 4])> {
    let c = core.chars().next()?;
    CURRENCIES
        .iter()
        .find(|(sign, _)| *sign == c)
        .map(|(sign, names)| (*sign, names))
}

/// "$3.50" → "three dollars fifty cents".
fn money(core: &str) -> Option<String> {
    let (sign, names) = currency(core)?;
    let n = parse_number(&core[sign.len_utf8()..])?;
    if n.negative {
        return None;
    }
    let whole = cardinal(&n.whole)?;
    let major = |w: &str| format!("{w} {}", if w == "one" { names[0] } else { names[1] });
    match &n.fraction {
        None => Some(major(&whole)),
        Some(f) if f.len() == 2 => {
            let cents: u32 = f.parse().ok()?;
            let minor = two_digit(cents);
            let minor = format!("{minor} {}", if cents == 1 { names[2] } else { names[3] });
            Some(match (whole.as_str(), cents) {
                (_, 0) => major(&whole),
                ("zero", _) => minor,
                _ => format!("{} {minor}", major(&whole)),
            })
        }
        Some(_) => Some(format!("{} {}", read_number(&n)?, names[1])),
    }
}

/// One word on its own.
fn single(word: &str) -> Option<String> {
    let stripped = word.trim_end_matches([',', ';', ':', '!', '?', ')', '"']);
    if let Some((_, spoken)) = ABBREVIATIONS.iter().find(|(w, _)| *w == stripped) {
        return Some(format!("{spoken}{}", &word[stripped.len()..]));
    }
    let Word { lead, core, trail } = split(word);
    // "U.S." → "US"
    let initials = format!("{core}{}", if trail.starts_with('.') { "." } else { "" });
    if initials.len() >= 4
        && initials
            .as_bytes()
            .chunks(2)
            .all(|p| p.len() == 2 && p[0].is_ascii_uppercase() && p[1] == b'.')
    {
        let letters: String = initials.chars().filter(|c| *c != '.').collect();
        return Some(format!("{lead}{letters}{}", &trail[1..]));
    }
    let spoken = single_core(core)?;
    Some(format!("{lead}{spoken}{trail}"))
}

fn single_core(core: &str) -> Option<String> {
    if !core.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    if let Some(m) = money(core) {
        return Some(m);
    }
    if let Some(p) = core.strip_suffix('%') {
        return Some(format!("{} percent", read(p)?));
    }
    // "10am", "8:30pm"
    if core.len() > 2 && core.is_char_boundary(core.len() - 2) {
        let (time, m) = core.split_at(core.len() - 2);
        let spoken = match m.to_ascii_lowercase().as_str() {
            "am" => Some("AM"),
            "pm" => Some("PM"),
            _ => None,
        };
        if let (Some(spoken), Some(t)) = (spoken, twelve_hour(time)) {
            return Some(format!("{t} {spoken}"));
        }
    }
    // "#1"
    if let Some(n) = core.strip_prefix('#').and_then(read) {
        return Some(format!("hash {n}"));
    }
    if let Some((h, m)) = clock(core, 23) {
        return Some(match m {
            Some(m) => format!("{h} {m}"),
            None => format!("{h} o'clock"),
        });
    }
    if let Some(d) = numeric_date(core) {
        return Some(d);
    }
    if let Some(p) = phone(core) {
        return Some(p);
    }
    let head = core.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &core[head.len()..];
    if is_digits(head) && head.len() <= 21 {
        match suffix.to_ascii_lowercase().as_str() {
            "st" | "nd" | "rd" | "th" => return ordinal(head),
            "s" if is_year(head) => return Some(plural_last(&year(head)?)),
            // "the 90s"
            "s" if head.len() == 2 && head.ends_with('0') && !head.starts_with('0') => {
                return Some(plural_last(&cardinal(head)?))
            }
            _ => {}
        }
    }
    if let Some((a, b)) = core.split_once('/') {
        if is_digits(a) && is_digits(b) && a.len() <= 3 && b.len() <= 3 {
            return fraction(a, b);
        }
    }
    if let Some((a, b)) = core.split_once('-').filter(|(a, _)| !a.is_empty()) {
        if is_year(a) && is_year(b) {
            return Some(format!("{} to {}", year(a)?, year(b)?));
        }
        if let (Some(x), Some(y)) = (read(a), read(b)) {
            return Some(format!("{x} - {y}"));
        }
        if is_digits(a) && b.chars().all(char::is_alphabetic) && !b.is_empty() {
            return Some(format!("{}-{b}", plain_integer(a)?));
        }
    }
    if let Some(n) = read(core) {
        return Some(n);
    }
    // "72°F", "5km"
    let split_at = core
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ',' || c == '-'))
        .unwrap_or(core.len());
    let (n, u) = core.split_at(split_at);
    let spoken = read(n)?;
    if let Some(u) = speak_unit(u, spoken == "one") {
        return Some(format!("{spoken} {u}"));
    }
    // "4B" (a flat, a seat)
    (u.len() == 1 && u.bytes().all(|b| b.is_ascii_uppercase())).then(|| format!("{spoken} {u}"))
}

/// "2024-01-05" and "01/05/2024" (month first) → "january fifth twenty twenty four".
fn numeric_date(core: &str) -> Option<String> {
    let parts: Vec<&str> = core.split(['-', '/']).collect();
    if parts.len() != 3 || !parts.iter().all(|p| is_digits(p)) {
        return None;
    }
    let (y, m, d) = if core.contains('-') && parts[0].len() == 4 {
        (parts[0], parts[1], parts[2])
    } else if core.contains('/') && parts[2].len() == 4 {
        (parts[2], parts[0], parts[1])
    } else {
        return None;
    };
    if m.len() > 2 || !is_year(y) {
        return None;
    }
    let month = MONTH_NUMBERS.get(m.parse::<usize>().ok()?.checked_sub(1)?)?;
    Some(format!("{month} {} {}", day(d)?, year(y)?))
}

/// An area code: "800" → "eight hundred", others digit by digit.
fn area_code(d: &str) -> Option<String> {
    if d.ends_with("00") && !d.starts_with('0') {
        cardinal(d)
    } else {
        digits(d)
    }
}

/// "555-123-4567" → "five five five, one two three, four five six seven";
/// "1-800-555-0100" → "one, eight hundred, five five five, zero one zero zero".
fn phone(core: &str) -> Option<String> {
    let parts: Vec<&str> = core.split('-').collect();
    if !parts.iter().all(|p| is_digits(p)) {
        return None;
    }
    let lens: Vec<usize> = parts.iter().map(|p| p.len()).collect();
    match lens.as_slice() {
        [3, 3, 4] => Some(format!(
            "{}, {}, {}",
            area_code(parts[0])?,
            digits(parts[1])?,
            digits(parts[2])?
        )),
        [1, 3, 3, 4] => {
            let area = area_code(parts[1])?;
            Some(format!(
                "{}, {area}, {}, {}",
                digits(parts[0])?,
                digits(parts[2])?,
                digits(parts[3])?
            ))
        }
        _ => None,
    }
}

/// Normalises English text; `changes` receives (byte range in `text`, spoken form) for
/// every span replaced.
pub(super) fn normalize(text: &str, changes: &mut Vec<(std::ops::Range<usize>, String)>) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let offset = |w: &str| w.as_ptr() as usize - text.as_ptr() as usize;
    let mut out: Vec<String> = Vec::with_capacity(words.len());
    let mut i = 0;
    while i < words.len() {
        let (used, spoken) = match multi(&words[i..]) {
            Some(found) => found,
            None => match single(words[i]) {
                Some(s) => (1, s),
                None => {
                    out.push(words[i].to_string());
                    i += 1;
                    continue;
                }
            },
        };
        let last = words[i + used - 1];
        let range = offset(words[i])..offset(last) + last.len();
        if text[range.clone()] != spoken {
            changes.push((range, spoken.clone()));
        }
        out.push(spoken);
        i += used;
    }
    out.join(" ")
}
