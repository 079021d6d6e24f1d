//! The English normaliser: whitespace-separated words, each rule tried in turn at each
//! word (multi-word rules first: addresses, dates, times with am/pm, amounts with a scale,
//! numbers with a unit), then single-word classes (abbreviations, money, percentages,
//! times, numeric dates, phone numbers, ordinals, decades, fractions, ranges, numbers).
//! Words no rule reads are kept as written; words are joined by single spaces, as NeMo's
//! output is.

use super::en_forms::{
    clock, currency, day, duration, house_number, is_digits, is_year, meridiem, money, month,
    numeric_date, parse_number, phone, read, read_number, speak_unit, split, twelve_hour, unit,
    Word,
};
use super::en_tables::{ABBREVIATIONS, SCALE_WORDS, STREET_WORDS};
use super::numbers::{cardinal, digits, fraction, ordinal, plain_integer, plural_last, year};

/// Multi-word rules at the start of `words`: (words used, spoken form). An opening
/// bracket or quote before the first word stays in front ("(5 km)").
fn multi(words: &[&str]) -> Option<(usize, String)> {
    if let Some(found) = multi_bare(words) {
        return Some(found);
    }
    let lead = split(words.first()?).lead;
    if lead.is_empty() {
        return None;
    }
    let mut rest: Vec<&str> = words.iter().take(4).copied().collect();
    rest[0] = &rest[0][lead.len()..];
    multi_bare(&rest).map(|(used, spoken)| (used, format!("{lead}{spoken}")))
}

fn multi_bare(words: &[&str]) -> Option<(usize, String)> {
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
    if let Some(d) = duration(core) {
        return Some(d);
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

/// Normalises English text; `changes` receives (byte range in `text`, spoken form) for
/// every span replaced.
pub(super) fn normalize(text: &str, changes: &mut Vec<(std::ops::Range<usize>, String)>) -> String {
    super::scan::run(text, changes, &|words| {
        multi(words).or_else(|| single(words[0]).map(|s| (1, s)))
    })
}
