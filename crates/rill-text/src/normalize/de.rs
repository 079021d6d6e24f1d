//! The German normaliser, after NeMo's German grammars (`nemo_text_processing` 1.2.0,
//! `text_normalization/de`), quirks included: number words set apart ("fünf und
//! zwanzig", "ein tausend neun hundert"), a number ending a sentence read as an ordinal
//! ("endete 1945." → "… fünf und vierzigste"), numbers with group separators read digit by
//! digit with "punkt", dates ("am erster januar"), times with "Uhr", measures,
//! percentages. Punctuation right after a replaced form is set off by a space.

use super::scan::{groups_of_three, is_digits, piece, run, spaced, Piece};

const ONES: [&str; 20] = [
    "null",
    "eins",
    "zwei",
    "drei",
    "vier",
    "fünf",
    "sechs",
    "sieben",
    "acht",
    "neun",
    "zehn",
    "elf",
    "zwölf",
    "dreizehn",
    "vierzehn",
    "fünfzehn",
    "sechzehn",
    "siebzehn",
    "achtzehn",
    "neunzehn",
];
const TENS: [&str; 10] = [
    "", "", "zwanzig", "dreißig", "vierzig", "fünfzig", "sechzig", "siebzig", "achtzig", "neunzig",
];
const MONTHS: [(&str, &str); 12] = [
    ("Januar", "januar"),
    ("Februar", "februar"),
    ("März", "märz"),
    ("April", "april"),
    ("Mai", "mai"),
    ("Juni", "juni"),
    ("Juli", "juli"),
    ("August", "august"),
    ("September", "september"),
    ("Oktober", "oktober"),
    ("November", "november"),
    ("Dezember", "dezember"),
];
const UNITS: &[(&str, &str)] = &[
    ("km", "kilometer"),
    ("kg", "kilogramm"),
    ("g", "gramm"),
    ("mg", "milligramm"),
    ("m", "meter"),
    ("cm", "zentimeter"),
    ("mm", "millimeter"),
    ("l", "liter"),
    ("ml", "milliliter"),
    ("km/h", "kilometer pro stunde"),
    ("m²", "quadrat meter"),
    ("km²", "quadrat kilometer"),
    ("°C", "grad celsius"),
    ("%", "prozent"),
];
const ABBREVIATIONS: &[(&str, &str)] = &[("Dr.", "doktor")];

/// 1..=999; `last` says whether a final 1 is "eins" (end of the number) or "ein".
fn three(n: u32, last: bool) -> String {
    let (h, rest) = (n / 100, n % 100);
    let low = match rest {
        0 => String::new(),
        1 if !last => "ein".to_string(),
        1..=19 => ONES[rest as usize].to_string(),
        _ if rest.is_multiple_of(10) => TENS[(rest / 10) as usize].to_string(),
        _ => {
            let u = if rest % 10 == 1 {
                "ein"
            } else {
                ONES[(rest % 10) as usize]
            };
            format!("{u} und {}", TENS[(rest / 10) as usize])
        }
    };
    let hundreds = match h {
        0 => String::new(),
        1 => "ein hundert".to_string(),
        h => format!("{} hundert", ONES[h as usize]),
    };
    match (hundreds.is_empty(), low.is_empty()) {
        (true, _) => low,
        (false, true) => hundreds,
        (false, false) => format!("{hundreds} {low}"),
    }
}

/// A cardinal from ASCII digits, up to 15 digits ("1500" → "ein tausend fünf hundert").
fn cardinal(d: &str) -> Option<String> {
    let groups = groups_of_three(d, 15)?;
    if groups.is_empty() {
        return Some("null".to_string());
    }
    let n = groups.len();
    let mut words: Vec<String> = Vec::new();
    for (i, g) in groups.iter().enumerate() {
        let k = n - 1 - i;
        if *g == 0 {
            continue;
        }
        match k {
            0 => words.push(three(*g, true)),
            1 => words.push(format!("{} tausend", three(*g, false))),
            _ => {
                let (one, many) = match k {
                    2 => ("eine million", "millionen"),
                    3 => ("eine milliarde", "milliarden"),
                    _ => ("eine billion", "billionen"),
                };
                if *g == 1 {
                    words.push(one.to_string());
                } else {
                    words.push(format!("{} {many}", three(*g, false)));
                }
            }
        }
    }
    Some(words.join(" "))
}

/// The ordinal of a cardinal's last word: "-te" alone ("erste"), "-ter" before a month.
fn ordinal_words(cardinal: &str, ending: &str) -> String {
    let (head, last) = match cardinal.rsplit_once(' ') {
        Some((h, l)) => (format!("{h} "), l),
        None => (String::new(), cardinal),
    };
    let stem = match last {
        "eins" => "ers".to_string(),
        "drei" => "drit".to_string(),
        "sieben" => "sieb".to_string(),
        "acht" => "ach".to_string(),
        w if w.ends_with("zig") || w.ends_with("ßig") || w == "hundert" || w == "tausend" => {
            format!("{w}s")
        }
        w => w.to_string(),
    };
    format!("{head}{stem}t{ending}")
}

fn digit_words(d: &str) -> String {
    let w: Vec<&str> = d.bytes().map(|b| ONES[usize::from(b - b'0')]).collect();
    w.join(" ")
}

/// A whole number alone: digit by digit when it starts with 0 or is long.
fn integer(d: &str) -> Option<String> {
    if !is_digits(d) {
        return None;
    }
    if (d.len() > 1 && d.starts_with('0')) || d.len() > 6 {
        return Some(digit_words(d));
    }
    cardinal(d)
}

/// "-5", "3,14", "1.250,75" (groups digit by digit, joined by "punkt").
fn number(s: &str) -> Option<String> {
    let (sign, s) = match s.strip_prefix(['-', '−']) {
        Some(rest) => ("minus ", rest),
        None => ("", s),
    };
    let (whole, fraction) = match s.split_once(',') {
        Some((w, f)) if is_digits(f) => (w, Some(f)),
        Some(_) => return None,
        None => (s, None),
    };
    let whole = if whole.contains('.') {
        let parts: Vec<&str> = whole.split('.').collect();
        if !parts.iter().all(|p| is_digits(p)) {
            return None;
        }
        let spoken: Vec<String> = parts.iter().map(|p| digit_words(p)).collect();
        spoken.join(" punkt ")
    } else if fraction.is_some() {
        cardinal(whole)?
    } else {
        integer(whole)?
    };
    Some(match fraction {
        Some(f) => format!("{sign}{whole} komma {}", digit_words(f)),
        None => format!("{sign}{whole}"),
    })
}

/// A year inside a date: "neunzehn neunzig" for 1100..=1999, else a cardinal.
fn date_year(y: &str) -> Option<String> {
    if y.len() == 4 && (y.starts_with('1') && y.as_bytes()[1] != b'0') {
        let (hi, lo): (u32, u32) = (y[..2].parse().ok()?, y[2..].parse().ok()?);
        return Some(match lo {
            0 => format!("{} hundert", three(hi, true)),
            _ => format!("{} {}", three(hi, true), three(lo, true)),
        });
    }
    cardinal(y)
}

/// "10:30" (before "Uhr") → "zehn uhr dreißig".
fn clock(core: &str) -> Option<String> {
    let (h, m) = core.split_once(':').unwrap_or((core, "00"));
    if !is_digits(h) || h.len() > 2 || m.len() != 2 || !is_digits(m) {
        return None;
    }
    let (hv, mv): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    if hv > 24 || mv > 59 {
        return None;
    }
    let hour = if hv == 1 {
        "ein".to_string()
    } else {
        cardinal(h)?
    };
    Some(match mv {
        0 => format!("{hour} uhr"),
        _ => format!("{hour} uhr {}", cardinal(m)?),
    })
}

/// Rules over several words: (words used, spoken form).
fn multi(words: &[&str]) -> Option<(usize, String)> {
    let w: Vec<Piece> = words.iter().take(3).map(|w| piece(w)).collect();
    if w.len() < 2 || !w[0].lead.is_empty() || !w[1].lead.is_empty() {
        return None;
    }
    // "1. Januar 2024"
    if w[0].trail == "." && is_digits(w[0].core) && w[0].core.len() <= 2 {
        let v: u32 = w[0].core.parse().ok()?;
        let month = MONTHS.iter().find(|(m, _)| *m == w[1].core);
        if let (true, Some((_, m))) = ((1..=31).contains(&v), month) {
            let day = ordinal_words(&cardinal(w[0].core)?, "er");
            if w[1].trail.is_empty() && w.len() >= 3 && w[2].lead.is_empty() {
                let y = w[2].core;
                if is_digits(y) && y.len() == 4 && w[2].trail.is_empty() {
                    return Some((3, format!("{day} {m} {}", date_year(y)?)));
                }
            }
            return Some((2, spaced(format!("{day} {m}"), w[1].trail)));
        }
    }
    if !w[0].trail.is_empty() {
        return None;
    }
    // "10:30 Uhr"
    if w[1].core == "Uhr" {
        return Some((2, spaced(clock(w[0].core)?, w[1].trail)));
    }
    // "5 km", "3 %"
    if let Some((_, u)) = UNITS.iter().find(|(k, _)| *k == w[1].core) {
        let n = number(w[0].core)?;
        let n = if n == "eins" { "ein".to_string() } else { n };
        return Some((2, spaced(format!("{n} {u}"), w[1].trail)));
    }
    None
}

fn rule(words: &[&str]) -> Option<(usize, String)> {
    let first = *words.first()?;
    if let Some((_, s)) = ABBREVIATIONS.iter().find(|(w, _)| *w == first) {
        return Some((1, (*s).to_string()));
    }
    if let Some(found) = multi(words) {
        return Some(found);
    }
    let Piece { lead, core, trail } = piece(first);
    if !core.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    // a sentence-final whole number: an ordinal, its full stop read into it
    if let Some(rest) = trail.strip_prefix('.') {
        if is_digits(core) && rest.is_empty() {
            let spoken = integer(core)?;
            return Some((1, format!("{lead}{}", ordinal_words(&spoken, "e"))));
        }
    }
    let spoken = number(core)?;
    // numbers written with dots keep what follows as it is
    if core.contains('.') {
        return Some((1, format!("{lead}{spoken}{trail}")));
    }
    Some((1, format!("{lead}{}", spaced(spoken, trail))))
}

/// Normalises German text; `changes` receives (byte range in `text`, spoken form) for
/// every span replaced.
pub(super) fn normalize(text: &str, changes: &mut Vec<(std::ops::Range<usize>, String)>) -> String {
    run(text, changes, &rule)
}
