//! The Spanish normaliser, after NeMo's Spanish grammars (`nemo_text_processing` 1.2.0,
//! `text_normalization/es`): cardinals with apocope ("veintiún libros", "un millón"),
//! decimals with "coma", money, percentages, measures, dates ("primero de enero"), clock
//! times ("diez y media"), ordinals ("1.º"), numbers grouped by spaces and abbreviations.
//! Punctuation right after a replaced form is set off by a space ("en dos mil diez ."), as
//! NeMo's output has it.

use super::scan::{groups_of_three, is_digits, parse_eu, piece, run, EuNumber, Piece};

const ONES: [&str; 30] = [
    "cero",
    "uno",
    "dos",
    "tres",
    "cuatro",
    "cinco",
    "seis",
    "siete",
    "ocho",
    "nueve",
    "diez",
    "once",
    "doce",
    "trece",
    "catorce",
    "quince",
    "dieciséis",
    "diecisiete",
    "dieciocho",
    "diecinueve",
    "veinte",
    "veintiuno",
    "veintidós",
    "veintitrés",
    "veinticuatro",
    "veinticinco",
    "veintiséis",
    "veintisiete",
    "veintiocho",
    "veintinueve",
];
const TENS: [&str; 10] = [
    "",
    "",
    "",
    "treinta",
    "cuarenta",
    "cincuenta",
    "sesenta",
    "setenta",
    "ochenta",
    "noventa",
];
const HUNDREDS: [&str; 10] = [
    "",
    "ciento",
    "doscientos",
    "trescientos",
    "cuatrocientos",
    "quinientos",
    "seiscientos",
    "setecientos",
    "ochocientos",
    "novecientos",
];
const MONTHS: [&str; 12] = [
    "enero",
    "febrero",
    "marzo",
    "abril",
    "mayo",
    "junio",
    "julio",
    "agosto",
    "septiembre",
    "octubre",
    "noviembre",
    "diciembre",
];
const ORDINALS: [&str; 10] = [
    "primer", "segund", "tercer", "cuart", "quint", "sext", "séptim", "octav", "noven", "décim",
];
/// Unit → (singular, plural); "°C" is kept as written.
const UNITS: &[(&str, &str, &str)] = &[
    ("km", "kilómetro", "kilómetros"),
    ("kg", "kilogramo", "kilogramos"),
    ("g", "gramo", "gramos"),
    ("mg", "miligramo", "miligramos"),
    ("m", "metro", "metros"),
    ("cm", "centímetro", "centímetros"),
    ("mm", "milímetro", "milímetros"),
    ("l", "litro", "litros"),
    ("ml", "mililitro", "mililitros"),
    ("h", "hora", "horas"),
    ("min", "minuto", "minutos"),
    ("km/h", "kilómetro por hora", "kilómetros por hora"),
    ("m²", "metro cuadrado", "metros cuadrados"),
    ("km²", "kilómetro cuadrado", "kilómetros cuadrados"),
    (
        "l/m²",
        "litro por metro cuadrado",
        "litros por metro cuadrado",
    ),
    ("°C", "°C", "°C"),
];
const ABBREVIATIONS: &[(&str, &str)] = &[
    ("Sr.", "señor"),
    ("Sra.", "señora"),
    ("Srta.", "señorita"),
    ("Dr.", "Doctor"),
    ("Dra.", "Doctora"),
];

/// How a final "uno" is said: "un" before a noun, "uno" alone, "una" for hours.
#[derive(Clone, Copy, PartialEq)]
enum One {
    Un,
    Uno,
    Una,
}

/// 0..=999.
fn three(n: u32, one: One) -> String {
    let (h, rest) = (n / 100, n % 100);
    let low = if rest < 30 {
        let w = ONES[rest as usize];
        match (rest, one) {
            (1, One::Un) => "un".to_string(),
            (1, One::Una) => "una".to_string(),
            (21, One::Un) => "veintiún".to_string(),
            (21, One::Una) => "veintiuna".to_string(),
            _ => w.to_string(),
        }
    } else if rest.is_multiple_of(10) {
        TENS[(rest / 10) as usize].to_string()
    } else {
        let u = match (rest % 10, one) {
            (1, One::Un) => "un",
            (1, One::Una) => "una",
            (u, _) => ONES[u as usize],
        };
        format!("{} y {u}", TENS[(rest / 10) as usize])
    };
    match (h, rest) {
        (0, _) => low,
        (1, 0) => "cien".to_string(),
        (h, 0) => HUNDREDS[h as usize].to_string(),
        (h, _) => format!("{} {low}", HUNDREDS[h as usize]),
    }
}

/// A cardinal from ASCII digits, up to 18 digits ("2500000" → "dos millones quinientos
/// mil").
fn cardinal(d: &str, one: One) -> Option<String> {
    let groups = groups_of_three(d, 18)?;
    if groups.is_empty() {
        return Some("cero".to_string());
    }
    let n = groups.len();
    let mut words: Vec<String> = Vec::new();
    // pairs of groups: (thousands, units) of each power of a million
    let mut i = 0;
    while i < n {
        let scale = (n - 1 - i) / 2; // millions power
        let thousands_slot = (n - 1 - i) % 2 == 1;
        let g = groups[i];
        if thousands_slot {
            let next = groups.get(i + 1).copied().unwrap_or(0);
            if g > 0 {
                if g > 1 {
                    words.push(three(g, One::Un));
                }
                words.push("mil".to_string());
            }
            let has = g > 0 || next > 0;
            if next > 0 {
                let o = if scale == 0 { one } else { One::Un };
                words.push(three(next, o));
            }
            if scale > 0 && has {
                words.push(scale_word(scale, g == 0 && next == 1));
            }
            i += 2;
        } else {
            if g > 0 {
                let o = if scale == 0 { one } else { One::Un };
                words.push(three(g, o));
                if scale > 0 {
                    words.push(scale_word(scale, g == 1));
                }
            }
            i += 1;
        }
    }
    Some(words.join(" "))
}

fn scale_word(scale: usize, single: bool) -> String {
    let (s, p) = match scale {
        1 => ("millón", "millones"),
        2 => ("billón", "billones"),
        _ => ("trillón", "trillones"),
    };
    (if single { s } else { p }).to_string()
}

fn digit_words(d: &str) -> String {
    let w: Vec<&str> = d.bytes().map(|b| ONES[usize::from(b - b'0')]).collect();
    w.join(" ")
}

/// Fraction digits as NeMo reads them: pairs ("1416" → "catorce dieciséis"), a trailing
/// zero or leading zeros digit by digit.
fn fraction_words(f: &str) -> Option<String> {
    if !is_digits(f) {
        return None;
    }
    if f.len() == 1 || f.starts_with('0') || f.len() > 8 {
        return Some(digit_words(f));
    }
    if f.len() == 2 && f.ends_with('0') {
        return Some(digit_words(f));
    }
    if f.len() == 3 && !f.ends_with('0') {
        return cardinal(f, One::Uno);
    }
    let b = f.as_bytes();
    let mut out: Vec<String> = Vec::new();
    for c in b.chunks(2) {
        if c.len() == 2 && c[0] != b'0' {
            out.push(three(
                u32::from(c[0] - b'0') * 10 + u32::from(c[1] - b'0'),
                One::Uno,
            ));
        } else {
            out.push(digit_words(std::str::from_utf8(c).ok()?));
        }
    }
    Some(out.join(" "))
}

/// A number: "menos", the whole part ("un" at its end unless a fraction follows), "coma"
/// and the fraction.
fn number(n: &EuNumber) -> Option<String> {
    let whole = match &n.fraction {
        Some(f) => format!(
            "{} coma {}",
            cardinal(&n.whole, One::Uno)?,
            fraction_words(f)?
        ),
        None => cardinal(&n.whole, One::Un)?,
    };
    Some(if n.negative {
        format!("menos {whole}")
    } else {
        whole
    })
}

fn read(s: &str) -> Option<String> {
    number(&parse_eu(s, '.')?)
}

fn day(core: &str) -> Option<String> {
    if !is_digits(core) || core.len() > 2 {
        return None;
    }
    let v: u32 = core.parse().ok()?;
    match v {
        1 => Some("primero".to_string()),
        2..=31 => cardinal(core, One::Uno),
        _ => None,
    }
}

fn month_number(core: &str) -> Option<&'static str> {
    if !is_digits(core) || core.len() > 2 {
        return None;
    }
    let m: usize = core.parse().ok()?;
    (1..=12).contains(&m).then(|| MONTHS[m - 1])
}

/// "31/12/2024", "5-6".
fn numeric_date(core: &str) -> Option<String> {
    let sep = if core.contains('/') { '/' } else { '-' };
    let parts: Vec<&str> = core.split(sep).collect();
    let d = |s: &str| {
        let v: u32 = s.parse().ok()?;
        (1..=31).contains(&v).then(|| cardinal(s, One::Uno))?
    };
    match parts.as_slice() {
        [a, b] if sep == '-' && a.len() <= 2 => Some(format!("{} de {}", d(a)?, month_number(b)?)),
        [a, b, y] if is_digits(y) && (y.len() == 4 || y.len() == 2) && a.len() <= 2 => {
            Some(format!(
                "{} de {} de {}",
                d(a)?,
                month_number(b)?,
                cardinal(y, One::Un)?
            ))
        }
        _ => None,
    }
}

/// "10:30" → "diez y media".
fn clock(core: &str) -> Option<String> {
    let (h, m) = core.split_once(':')?;
    if !is_digits(h) || h.len() > 2 || m.len() != 2 || !is_digits(m) {
        return None;
    }
    let (hv, mv): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    if hv > 24 || mv > 59 {
        return None;
    }
    let hour = cardinal(h, One::Una)?;
    Some(match mv {
        0 => hour,
        15 => format!("{hour} y cuarto"),
        30 => format!("{hour} y media"),
        _ => format!("{hour} y {}", cardinal(m, One::Un)?),
    })
}

/// "1.º", "2.ª", "3.er".
fn ordinal(core: &str) -> Option<String> {
    let (n, suffix) = core.split_once('.')?;
    if !is_digits(n) || n.len() > 2 {
        return None;
    }
    let v: usize = n.parse().ok()?;
    let stem = ORDINALS.get(v.checked_sub(1)?)?;
    let end = match suffix {
        "º" | "°" | "o" => "o",
        "ª" | "a" => "a",
        "er" => "",
        _ => return None,
    };
    match (*stem, end) {
        ("primer" | "tercer", "") => Some((*stem).to_string()),
        (_, "") => None,
        ("primer" | "tercer", "o") => Some(format!("{stem}o")),
        _ => Some(format!("{stem}{end}")),
    }
}

fn money_amount(n: &EuNumber, names: (&str, &str), cents: Option<&str>) -> Option<String> {
    let one = n.whole.trim_start_matches('0') == "1" && n.fraction.is_none();
    let name = if one { names.0 } else { names.1 };
    match (&n.fraction, cents) {
        (Some(f), Some(c)) if !n.grouped && f.len() == 2 => {
            let whole = cardinal(&n.whole, One::Un)?;
            let fv: u32 = f.parse().ok()?;
            let cw = if fv == 1 { c.trim_end_matches('s') } else { c };
            let w = if n.whole.trim_start_matches('0') == "1" {
                names.0
            } else {
                names.1
            };
            Some(match fv {
                0 => format!("{whole} {w}"),
                _ => format!("{whole} {w} {} {cw}", cardinal(f, One::Un)?),
            })
        }
        _ => Some(format!("{} {name}", number(n)?)),
    }
}

/// A measure or amount after a number: (spoken unit, singular form wanted).
fn unit(word: &str) -> Option<(&'static str, &'static str)> {
    UNITS
        .iter()
        .find(|(w, _, _)| *w == word)
        .map(|(_, s, p)| (*s, *p))
}

/// A Roman numeral up to 3999 ("XXI" → 21).
fn roman(s: &str) -> Option<u32> {
    if s.is_empty() || s.len() > 15 {
        return None;
    }
    let value = |c: char| match c {
        'I' => Some(1),
        'V' => Some(5),
        'X' => Some(10),
        'L' => Some(50),
        'C' => Some(100),
        'D' => Some(500),
        'M' => Some(1000),
        _ => None,
    };
    let v: Vec<u32> = s.chars().map(value).collect::<Option<_>>()?;
    let mut total = 0u32;
    for (i, x) in v.iter().enumerate() {
        if v.get(i + 1).is_some_and(|next| next > x) {
            total = total.checked_sub(*x)?;
        } else {
            total += x;
        }
    }
    (1..4000).contains(&total).then_some(total)
}

/// Rules over several words: (words used, spoken form, trailing punctuation).
fn multi<'a>(words: &[&'a str]) -> Option<(usize, String, &'a str)> {
    let w: Vec<Piece> = words.iter().take(5).map(|w| piece(w)).collect();
    if w.len() < 2 || !w[0].trail.is_empty() || !w[1].lead.is_empty() {
        return None;
    }
    let first = w[0].core;
    // "siglo XXI"
    if first == "siglo" {
        if let Some(v) = roman(w[1].core) {
            return Some((
                2,
                format!("siglo {}", cardinal(&v.to_string(), One::Un)?),
                w[1].trail,
            ));
        }
    }
    // "1 de enero de 2024"
    if w.len() >= 3 && w[1].bare() && w[1].core == "de" && w[2].lead.is_empty() {
        if let (Some(d), Some(m)) = (day(first), MONTHS.iter().find(|m| **m == w[2].core)) {
            if w[2].trail.is_empty()
                && w.len() >= 5
                && w[3].bare()
                && w[3].core == "de"
                && w[4].lead.is_empty()
                && is_digits(w[4].core)
                && w[4].core.len() == 4
            {
                let y = cardinal(w[4].core, One::Un)?;
                return Some((5, format!("{d} de {m} de {y}"), w[4].trail));
            }
            return Some((3, format!("{d} de {m}"), w[2].trail));
        }
    }
    let n = parse_eu(first, '.')?;
    // "5 €"
    if w[1].core == "€" {
        let s = money_amount(&n, ("euro", "euros"), Some("céntimos"))?;
        return Some((2, s, w[1].trail));
    }
    // "5 km"
    if let Some((one, many)) = unit(w[1].core) {
        let s = number(&n)?;
        let u = if s == "un" { one } else { many };
        if u == "°C" {
            // NeMo keeps "°C" as a word, with its punctuation
            return Some((2, format!("{s} {u}{}", w[1].trail), ""));
        }
        return Some((2, format!("{s} {u}"), w[1].trail));
    }
    // "1.200 millones"
    if matches!(w[1].core, "millón" | "millones" | "billón" | "billones") {
        return Some((2, format!("{} {}", number(&n)?, w[1].core), w[1].trail));
    }
    // "612 345 678": groups of three after a short number read as one number
    if !n.negative && n.fraction.is_none() && !n.grouped && first.len() <= 3 {
        let mut digits = first.to_string();
        let mut used = 1;
        while used < w.len() && used < 5 {
            let p = w[used];
            if !p.lead.is_empty() || p.core.len() != 3 || !is_digits(p.core) {
                break;
            }
            digits.push_str(p.core);
            used += 1;
            if !p.trail.is_empty() {
                break;
            }
        }
        if used > 1 {
            return Some((used, cardinal(&digits, One::Un)?, w[used - 1].trail));
        }
    }
    None
}

/// One word's core.
fn single(core: &str) -> Option<String> {
    if !core.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    if let Some(p) = core.strip_suffix('%') {
        let n = parse_eu(p, '.')?;
        let whole = match n.fraction {
            Some(_) => number(&n)?,
            None => cardinal(&n.whole, One::Uno)?,
        };
        let sign = if n.negative { "menos " } else { "" };
        return Some(format!("{sign}{whole} por ciento"));
    }
    if let Some(a) = core.strip_prefix('$') {
        let n = parse_eu(a, ',').filter(|n| n.fraction.is_none())?;
        return money_amount(&n, ("dólar", "dólares"), None);
    }
    if let Some(a) = core.strip_suffix('€') {
        return money_amount(&parse_eu(a, '.')?, ("euro", "euros"), Some("céntimos"));
    }
    if let Some(t) = clock(core) {
        return Some(t);
    }
    if let Some(d) = numeric_date(core) {
        return Some(d);
    }
    if let Some(o) = ordinal(core) {
        return Some(o);
    }
    if let Some(n) = read(core) {
        return Some(n);
    }
    if is_digits(core) {
        return Some(digit_words(core));
    }
    None
}

fn rule(words: &[&str]) -> Option<(usize, String)> {
    let first = *words.first()?;
    if let Some((_, s)) = ABBREVIATIONS.iter().find(|(w, _)| *w == first) {
        return Some((1, (*s).to_string()));
    }
    let lead = piece(first).lead;
    let mut rest: Vec<&str> = words.iter().take(5).copied().collect();
    rest[0] = &first[lead.len()..];
    let (used, spoken, trail) = match multi(&rest) {
        Some(found) => found,
        None => {
            let p = piece(first);
            (1, single(p.core)?, p.trail)
        }
    };
    Some(if trail.is_empty() {
        (used, format!("{lead}{spoken}"))
    } else {
        (used, format!("{lead}{spoken} {trail}"))
    })
}

/// Normalises Spanish text; `changes` receives (byte range in `text`, spoken form) for
/// every span replaced.
pub(super) fn normalize(text: &str, changes: &mut Vec<(std::ops::Range<usize>, String)>) -> String {
    run(text, changes, &rule)
}
