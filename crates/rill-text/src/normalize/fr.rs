//! The French normaliser, after NeMo's French grammars (`nemo_text_processing` 1.2.0,
//! `text_normalization/fr`): cardinals in the traditional spelling ("vingt et un",
//! "quatre-vingts", "deux cent mille"), numbers grouped by spaces ("45 000"), decimals
//! with "virgule", "pour cent", dates ("premier janvier deux mille vingt-quatre"), ordinals
//! ("2e" → "deuxième"), telephone pairs ("06 12" → "zéro six douze"). Units and currency
//! signs are kept as written; punctuation right after a replaced form is set off by a space.

use super::scan::{groups_of_three, is_digits, piece, run, spaced, Piece};

const ONES: [&str; 17] = [
    "zéro", "un", "deux", "trois", "quatre", "cinq", "six", "sept", "huit", "neuf", "dix", "onze",
    "douze", "treize", "quatorze", "quinze", "seize",
];
const TENS: [&str; 7] = [
    "",
    "dix",
    "vingt",
    "trente",
    "quarante",
    "cinquante",
    "soixante",
];
/// The months NeMo's French date grammar reads after a day: its table has "février",
/// "mai", "août" and "novembre" with a trailing space, so those never match as written.
const DATE_MONTHS: [&str; 8] = [
    "janvier",
    "mars",
    "avril",
    "juin",
    "juillet",
    "septembre",
    "octobre",
    "décembre",
];
const MONTHS: [&str; 12] = [
    "janvier",
    "février",
    "mars",
    "avril",
    "mai",
    "juin",
    "juillet",
    "août",
    "septembre",
    "octobre",
    "novembre",
    "décembre",
];

/// 0..=99; `last`: the end of the number ("quatre-vingts" there, "quatre-vingt" inside).
fn two(n: u32, last: bool) -> String {
    match n {
        0..=16 => ONES[n as usize].to_string(),
        17..=19 => format!("dix-{}", ONES[(n - 10) as usize]),
        80 => (if last {
            "quatre-vingts"
        } else {
            "quatre-vingt"
        })
        .to_string(),
        81..=99 => format!("quatre-vingt-{}", two(n - 80, last)),
        71 => "soixante et onze".to_string(),
        70..=79 => format!("soixante-{}", two(n - 60, last)),
        _ => {
            let (t, u) = (TENS[(n / 10) as usize], n % 10);
            match u {
                0 => t.to_string(),
                1 => format!("{t} et un"),
                _ => format!("{t}-{}", ONES[u as usize]),
            }
        }
    }
}

/// 1..=999 ("deux cents", also before "mille", as NeMo writes it).
fn three(n: u32, last: bool) -> String {
    let (h, rest) = (n / 100, n % 100);
    let hundreds = match (h, rest) {
        (0, _) => String::new(),
        (1, _) => "cent".to_string(),
        (h, 0) => format!("{} cents", ONES[h as usize]),
        (h, _) => format!("{} cent", ONES[h as usize]),
    };
    match (hundreds.is_empty(), rest) {
        (true, r) => two(r, last),
        (false, 0) => hundreds,
        (false, r) => format!("{hundreds} {}", two(r, last)),
    }
}

/// A cardinal from ASCII digits, up to 15 digits.
fn cardinal(d: &str) -> Option<String> {
    let groups = groups_of_three(d, 15)?;
    if groups.is_empty() {
        return Some("zéro".to_string());
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
            1 if *g == 1 => words.push("mille".to_string()),
            1 => words.push(format!("{} mille", three(*g, false))),
            _ => {
                let (one, many) = match k {
                    2 => ("million", "millions"),
                    3 => ("milliard", "milliards"),
                    _ => ("billion", "billions"),
                };
                let name = if *g == 1 { one } else { many };
                words.push(format!("{} {name}", three(*g, true)));
            }
        }
    }
    Some(words.join(" "))
}

/// "-5", "3,14", "1250" (spaces already joined).
fn number(s: &str) -> Option<String> {
    let (sign, s) = match s.strip_prefix(['-', '−']) {
        Some(rest) => ("moins ", rest),
        None => ("", s),
    };
    let (whole, fraction) = match s.split_once(',') {
        Some((w, f)) if is_digits(f) => (w, Some(f)),
        Some(_) => return None,
        None => (s, None),
    };
    if !is_digits(whole) {
        return None;
    }
    let w = if whole.len() == 2 && whole.starts_with('0') {
        format!("zéro {}", ONES[usize::from(whole.as_bytes()[1] - b'0')])
    } else {
        cardinal(whole)?
    };
    Some(match fraction {
        Some(f) => format!("{sign}{w} virgule {}", fraction_words(f)?),
        None => format!("{sign}{w}"),
    })
}

fn fraction_words(f: &str) -> Option<String> {
    if f.starts_with('0') || f.len() > 3 {
        let w: Vec<&str> = f.bytes().map(|b| ONES[usize::from(b - b'0')]).collect();
        return Some(w.join(" "));
    }
    cardinal(f)
}

/// "2e" → "deuxième", "1er" → "premier".
fn ordinal(core: &str) -> Option<String> {
    if core == "1er" {
        return Some("premier".to_string());
    }
    let n = core.strip_suffix('e')?;
    if !is_digits(n) || n.len() > 3 || n == "1" {
        return None;
    }
    let c = cardinal(n)?;
    let stem = if let Some(s) = c.strip_suffix("cinq") {
        format!("{s}cinqu")
    } else if let Some(s) = c.strip_suffix("neuf") {
        format!("{s}neuv")
    } else if let Some(s) = c.strip_suffix('e') {
        s.to_string()
    } else if let Some(s) = c.strip_suffix("cents") {
        format!("{s}cent")
    } else if let Some(s) = c.strip_suffix("vingts") {
        format!("{s}vingt")
    } else {
        c
    };
    Some(format!("{stem}ième"))
}

fn day(core: &str) -> Option<String> {
    if core == "1er" {
        return Some("premier".to_string());
    }
    if !is_digits(core) || core.len() > 2 {
        return None;
    }
    let v: u32 = core.parse().ok()?;
    (1..=31).contains(&v).then(|| cardinal(core))?
}

/// "31/12/2024", "2-1".
fn numeric_date(core: &str) -> Option<String> {
    let sep = if core.contains('/') { '/' } else { '-' };
    let parts: Vec<&str> = core.split(sep).collect();
    let month = |s: &str| {
        let m: usize = s.parse().ok().filter(|_| is_digits(s) && s.len() <= 2)?;
        (1..=12).contains(&m).then(|| MONTHS[m - 1])
    };
    match parts.as_slice() {
        [a, b] if sep == '-' && is_digits(a) => Some(format!("{} {}", day(a)?, month(b)?)),
        [a, b, y] if is_digits(y) && y.len() == 4 && is_digits(a) => {
            Some(format!("{} {} {}", day(a)?, month(b)?, cardinal(y)?))
        }
        _ => None,
    }
}

fn rule(words: &[&str]) -> Option<(usize, String)> {
    let w: Vec<Piece> = words.iter().take(6).map(|w| piece(w)).collect();
    let Piece { lead, core, trail } = *w.first()?;
    let lead_then = |s: String| format!("{lead}{s}");
    if !core.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    // "1er janvier 2024", "15 mars"
    if trail.is_empty() && w.len() >= 2 && w[1].lead.is_empty() {
        if let (Some(d), true) = (day(core), DATE_MONTHS.contains(&w[1].core)) {
            let m = w[1].core;
            if w[1].trail.is_empty()
                && w.len() >= 3
                && w[2].lead.is_empty()
                && is_digits(w[2].core)
                && w[2].core.len() == 4
            {
                let y = cardinal(w[2].core)?;
                return Some((3, lead_then(spaced(format!("{d} {m} {y}"), w[2].trail))));
            }
            return Some((2, lead_then(spaced(format!("{d} {m}"), w[1].trail))));
        }
    }
    // "45 000", "1 250,75"
    let mut joined = core.to_string();
    let mut used = 1;
    let mut last_trail = trail;
    if trail.is_empty() && is_digits(core.trim_start_matches('-')) && core.len() <= 4 {
        while used < w.len() && w[used].lead.is_empty() {
            let c = w[used].core;
            let head = c.split(',').next().unwrap_or(c);
            if head.len() != 3 || !is_digits(head) {
                break;
            }
            joined.push_str(c);
            last_trail = w[used].trail;
            used += 1;
            if !last_trail.is_empty() || head.len() != c.len() {
                break;
            }
        }
    }
    if let Some(n) = number(&joined) {
        // "3 %"
        if last_trail.is_empty()
            && w.get(used)
                .is_some_and(|x| x.core == "%" && x.lead.is_empty())
        {
            let t = w[used].trail;
            return Some((used + 1, lead_then(spaced(format!("{n} pour cent"), t))));
        }
        return Some((used, lead_then(spaced(n, last_trail))));
    }
    if let Some(o) = ordinal(core) {
        return Some((1, lead_then(spaced(o, trail))));
    }
    if let Some(d) = numeric_date(core) {
        return Some((1, lead_then(spaced(d, trail))));
    }
    None
}

/// Normalises French text; `changes` receives (byte range in `text`, spoken form) for
/// every span replaced.
pub(super) fn normalize(text: &str, changes: &mut Vec<(std::ops::Range<usize>, String)>) -> String {
    run(text, changes, &rule)
}
