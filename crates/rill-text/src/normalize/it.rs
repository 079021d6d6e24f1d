//! The Italian normaliser, after NeMo's Italian grammars (`nemo_text_processing` 1.2.0,
//! `text_normalization/it`): cardinals as NeMo writes them ("venticinque", "trecento
//! cinquanta", "duemila ventiquattro", "trentatremila cento ventitre"), "uno" for a lone
//! 1, decimals with "virgola", euros with centesimi, "percento", measures, clock times
//! ("dieci e mezza", "otto : quindici"), numbers with dots digit by digit with "punto",
//! numbers followed by groups of three digits read as one, abbreviations. Punctuation
//! right after a replaced form is set off by a space.

use super::scan::{groups_of_three, is_digits, parse_eu, piece, run, spaced, EuNumber, Piece};

const ONES: [&str; 20] = [
    "zero",
    "uno",
    "due",
    "tre",
    "quattro",
    "cinque",
    "sei",
    "sette",
    "otto",
    "nove",
    "dieci",
    "undici",
    "dodici",
    "tredici",
    "quattordici",
    "quindici",
    "sedici",
    "diciassette",
    "diciotto",
    "diciannove",
];
const TENS: [&str; 10] = [
    "",
    "",
    "venti",
    "trenta",
    "quaranta",
    "cinquanta",
    "sessanta",
    "settanta",
    "ottanta",
    "novanta",
];
/// Unit → spoken form after 1 and after other numbers (NeMo keeps "grado celsius" and
/// "metro quadrato" singular).
const UNITS: &[(&str, &str, &str)] = &[
    ("km", "chilometro", "chilometri"),
    ("kg", "chilogrammo", "chilogrammi"),
    ("g", "grammo", "grammi"),
    ("m", "metro", "metri"),
    ("cm", "centimetro", "centimetri"),
    ("mm", "millimetro", "millimetri"),
    ("l", "litro", "litri"),
    ("ml", "millilitro", "millilitri"),
    ("km/h", "chilometro per ora", "chilometri per ora"),
    ("m²", "metro quadrato", "metro quadrato"),
    ("°C", "grado celsius", "grado celsius"),
];
const ABBREVIATIONS: &[(&str, &str)] = &[
    ("sig.", "signore"),
    ("sig.ra", "signora"),
    ("dott.", "dottor"),
    ("ecc.", "eccetera"),
];

/// 0..=99 as one word ("ventuno", "ventitre", "ottantotto").
fn two(n: u32) -> String {
    if n < 20 {
        return ONES[n as usize].to_string();
    }
    let (t, u) = (TENS[(n / 10) as usize], n % 10);
    match u {
        0 => t.to_string(),
        1 | 8 => format!("{}{}", &t[..t.len() - 1], ONES[u as usize]),
        _ => format!("{t}{}", ONES[u as usize]),
    }
}

/// 1..=999: "cento", "duecento", then the rest after a space ("trecento cinquanta").
fn three(n: u32) -> String {
    let (h, rest) = (n / 100, n % 100);
    let hundreds = match h {
        0 => String::new(),
        1 => "cento".to_string(),
        h => format!("{}cento", ONES[h as usize]),
    };
    match (hundreds.is_empty(), rest) {
        (true, r) => two(r),
        (false, 0) => hundreds,
        (false, r) => format!("{hundreds} {}", two(r)),
    }
}

/// A cardinal from ASCII digits, up to 15 digits.
fn cardinal(d: &str) -> Option<String> {
    let groups = groups_of_three(d, 15)?;
    if groups.is_empty() {
        return Some("zero".to_string());
    }
    let n = groups.len();
    let mut words: Vec<String> = Vec::new();
    for (i, g) in groups.iter().enumerate() {
        let k = n - 1 - i;
        if *g == 0 {
            continue;
        }
        match k {
            0 => words.push(three(*g)),
            1 if *g == 1 => words.push("mille".to_string()),
            1 => words.push(format!("{}mila", three(*g))),
            _ => {
                let (one, many) = match k {
                    2 => ("un milione", "milioni"),
                    3 => ("un miliardo", "miliardi"),
                    _ => ("un bilione", "bilioni"),
                };
                if *g == 1 {
                    words.push(one.to_string());
                } else {
                    words.push(format!("{} {many}", three(*g)));
                }
            }
        }
    }
    Some(words.join(" "))
}

fn digit_words(d: &str) -> String {
    let w: Vec<&str> = d.bytes().map(|b| ONES[usize::from(b - b'0')]).collect();
    w.join(" ")
}

/// A whole number: leading zeros each "zero", then the cardinal ("00184" → "zero zero
/// cento ottantaquattro").
fn integer(d: &str) -> Option<String> {
    if !is_digits(d) {
        return None;
    }
    let rest = d.trim_start_matches('0');
    if rest.is_empty() || rest.len() == d.len() {
        return cardinal(d);
    }
    let zeros = vec!["zero"; d.len() - rest.len()].join(" ");
    Some(format!("{zeros} {}", cardinal(rest)?))
}

fn eu_number(n: &EuNumber) -> Option<String> {
    let whole = match &n.fraction {
        Some(f) if f.starts_with('0') => {
            format!("{} virgola {}", cardinal(&n.whole)?, digit_words(f))
        }
        Some(f) => format!("{} virgola {}", cardinal(&n.whole)?, cardinal(f)?),
        None => cardinal(&n.whole)?,
    };
    Some(if n.negative {
        format!("meno {whole}")
    } else {
        whole
    })
}

/// A number written alone: dotted ones digit by digit with "punto".
fn number(s: &str) -> Option<String> {
    let (sign, body) = match s.strip_prefix(['-', '−']) {
        Some(rest) => ("meno ", rest),
        None => ("", s),
    };
    if !body.contains(',') && body.contains('.') {
        let parts: Vec<&str> = body.split('.').collect();
        if !parts.iter().all(|p| is_digits(p)) {
            return None;
        }
        let spoken: Vec<String> = parts.iter().map(|p| digit_words(p)).collect();
        return Some(format!("{sign}{}", spoken.join(" punto ")));
    }
    if is_digits(body) {
        return Some(format!("{sign}{}", integer(body)?));
    }
    eu_number(&parse_eu(s, '.')?)
}

fn money(n: &EuNumber, unit: &str) -> Option<String> {
    match &n.fraction {
        Some(f) if !n.grouped && f.len() == 2 && !n.negative => {
            let whole = cardinal(&n.whole)?;
            match f.parse::<u32>().ok()? {
                0 => Some(format!("{whole} {unit}")),
                _ => Some(format!("{whole} {unit} {} centesimi", cardinal(f)?)),
            }
        }
        _ => Some(format!("{} {unit}", eu_number(n)?)),
    }
}

/// "10:30" → "dieci e mezza", "16:45" → "sedici e quarantacinque minuti"; a one-digit
/// hour as NeMo reads it, with the colon: "8:15" → "otto : quindici".
fn clock(core: &str) -> Option<String> {
    let (h, m) = core.split_once(':')?;
    if !is_digits(h) || h.len() > 2 || m.len() != 2 || !is_digits(m) {
        return None;
    }
    let (hv, mv): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    if hv > 24 || mv > 59 {
        return None;
    }
    let hour = cardinal(h)?;
    Some(match mv {
        0 => hour,
        _ if h.len() == 1 => format!("{hour} : {}", integer(m)?),
        30 => format!("{hour} e mezza"),
        _ => format!("{hour} e {} minuti", cardinal(m)?),
    })
}

fn rule(words: &[&str]) -> Option<(usize, String)> {
    let first = *words.first()?;
    if let Some((_, s)) = ABBREVIATIONS.iter().find(|(w, _)| *w == first) {
        return Some((1, (*s).to_string()));
    }
    let w: Vec<Piece> = words.iter().take(5).map(|w| piece(w)).collect();
    let Piece { lead, core, trail } = w[0];
    if !core.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    let out = |used: usize, s: String, t: &str| Some((used, format!("{lead}{}", spaced(s, t))));
    let next = w.get(1).filter(|x| x.lead.is_empty() && trail.is_empty());
    if let (Some(x), Some(n)) = (next, parse_eu(core, '.')) {
        if x.core == "€" {
            return out(2, money(&n, "euro")?, x.trail);
        }
        if let Some((_, one, many)) = UNITS.iter().find(|(k, _, _)| *k == x.core) {
            let n = number(core)?;
            if n == "uno" {
                return out(2, format!("un {one}"), x.trail);
            }
            return out(2, format!("{n} {many}"), x.trail);
        }
        // "333 123 4567": groups of three after a short number read as one number
        if is_digits(core) && core.len() <= 3 && !core.starts_with('0') {
            let mut digits = core.to_string();
            let mut used = 1;
            while used < w.len() && w[used].lead.is_empty() && w[used].core.len() == 3 {
                if !is_digits(w[used].core) {
                    break;
                }
                digits.push_str(w[used].core);
                used += 1;
                if !w[used - 1].trail.is_empty() {
                    break;
                }
            }
            if used > 1 {
                return out(used, cardinal(&digits)?, w[used - 1].trail);
            }
        }
    }
    if let Some(p) = core.strip_suffix('%') {
        return out(1, format!("{} percento", number(p)?), trail);
    }
    if let Some(a) = core.strip_prefix('$') {
        return out(1, format!("{} dollari", integer(a)?), trail);
    }
    if let Some(t) = clock(core) {
        return out(1, t, trail);
    }
    // "2-1"
    if let Some((a, b)) = core.split_once('-').filter(|(a, _)| !a.is_empty()) {
        if is_digits(a) && is_digits(b) {
            return out(1, format!("{} meno {}", integer(a)?, integer(b)?), trail);
        }
    }
    out(1, number(core)?, trail)
}

/// Normalises Italian text; `changes` receives (byte range in `text`, spoken form) for
/// every span replaced.
pub(super) fn normalize(text: &str, changes: &mut Vec<(std::ops::Range<usize>, String)>) -> String {
    run(text, changes, &rule)
}
