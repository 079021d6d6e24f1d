//! Word-level forms of the English normaliser: numbers, days, months, clock times,
//! units, money, numeric dates, phone numbers.

use super::en_tables::{CURRENCIES, MONTHS, MONTH_NUMBERS, UNITS};
use super::numbers::{cardinal, digits, ordinal, plain_integer, plural_last, two_digit, year};

pub(super) const LEAD: &[char] = &['(', '[', '"', '\'', '“', '‘'];
pub(super) const TRAIL: &[char] = &['.', ',', '!', '?', ';', ':', ')', ']', '"', '\'', '”', '’'];

/// A word cut into leading punctuation, core and trailing punctuation.
#[derive(Clone, Copy)]
pub(super) struct Word<'a> {
    pub(super) lead: &'a str,
    pub(super) core: &'a str,
    pub(super) trail: &'a str,
}

pub(super) fn split(word: &str) -> Word<'_> {
    let rest = word.trim_start_matches(LEAD);
    let lead = &word[..word.len() - rest.len()];
    let core = rest.trim_end_matches(TRAIL);
    Word {
        lead,
        core,
        trail: &rest[core.len()..],
    }
}

pub(super) fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// A written number: sign, digits of the whole part (commas removed), fraction digits.
pub(super) struct Number {
    pub(super) negative: bool,
    pub(super) whole: String,
    pub(super) commas: bool,
    pub(super) fraction: Option<String>,
}

pub(super) fn parse_number(s: &str) -> Option<Number> {
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
pub(super) fn read_number(n: &Number) -> Option<String> {
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

pub(super) fn read(s: &str) -> Option<String> {
    read_number(&parse_number(s)?)
}

pub(super) fn month(core: &str) -> Option<&'static str> {
    MONTHS.iter().find(|(w, _)| *w == core).map(|(_, s)| *s)
}

/// A day of the month, "5" or "5th".
pub(super) fn day(core: &str) -> Option<String> {
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

pub(super) fn is_year(core: &str) -> bool {
    is_digits(core) && core.len() == 4 && !core.starts_with('0')
}

/// "am", "pm", "a.m.", "p.m." (any case) and the punctuation after them.
pub(super) fn meridiem(word: &str) -> Option<(&'static str, &str)> {
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
pub(super) fn clock(core: &str, max_hour: u32) -> Option<(String, Option<String>)> {
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

pub(super) fn unit(written: &str) -> Option<&'static str> {
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
pub(super) fn speak_unit(written: &str, one: bool) -> Option<String> {
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
pub(super) fn plural(unit: &str) -> String {
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

/// A time before "am" or "pm": "3:30" → "three thirty", "7" → "seven".
pub(super) fn twelve_hour(core: &str) -> Option<String> {
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

/// "2:01:09" → "two hours one minute and nine seconds" (zero parts left out).
pub(super) fn duration(core: &str) -> Option<String> {
    let parts: Vec<&str> = core.split(':').collect();
    let [h, m, s] = parts.as_slice() else {
        return None;
    };
    if !is_digits(h) || h.len() > 2 || [m, s].iter().any(|p| p.len() != 2 || !is_digits(p)) {
        return None;
    }
    let mut said = Vec::new();
    for (value, name) in [(h, "hour"), (m, "minute"), (s, "second")] {
        let n: u32 = value.parse().ok()?;
        if name != "hour" && n > 59 {
            return None;
        }
        if n > 0 {
            let plural = if n == 1 { "" } else { "s" };
            said.push(format!("{} {name}{plural}", two_digit(n)));
        }
    }
    let last = said.pop()?;
    Some(match said.is_empty() {
        true => last,
        false => format!("{} and {last}", said.join(" ")),
    })
}

/// A house number: "123" → "one twenty three", four digits as a year.
pub(super) fn house_number(d: &str) -> Option<String> {
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

pub(super) fn currency(core: &str) -> Option<(char, &'static [&'static str; 4])> {
    let c = core.chars().next()?;
    CURRENCIES
        .iter()
        .find(|(sign, _)| *sign == c)
        .map(|(sign, names)| (*sign, names))
}

/// "$3.50" → "three dollars fifty cents".
pub(super) fn money(core: &str) -> Option<String> {
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

/// "2024-01-05" and "01/05/2024" (month first) → "january fifth twenty twenty four".
pub(super) fn numeric_date(core: &str) -> Option<String> {
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
pub(super) fn area_code(d: &str) -> Option<String> {
    if d.ends_with("00") && !d.starts_with('0') {
        cardinal(d)
    } else {
        digits(d)
    }
}

/// "555-123-4567" → "five five five, one two three, four five six seven";
/// "1-800-555-0100" → "one, eight hundred, five five five, zero one zero zero".
pub(super) fn phone(core: &str) -> Option<String> {
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
