//! Machinery shared by the normalisers: the word loop that records spans, words cut into
//! punctuation and core, and numbers written the continental way ("1.250,75").

/// Punctuation kept in front of a word's core ("¿", "(", "«").
pub(super) const LEAD: &[char] = &['(', '[', '"', '\'', '“', '‘', '¿', '¡', '«', '„'];
/// Punctuation kept after a word's core.
pub(super) const TRAIL: &[char] = &[
    '.', ',', '!', '?', ';', ':', ')', ']', '"', '\'', '”', '’', '»', '“',
];

/// A word cut into leading punctuation, core and trailing punctuation.
#[derive(Clone, Copy)]
pub(super) struct Piece<'a> {
    pub(super) lead: &'a str,
    pub(super) core: &'a str,
    pub(super) trail: &'a str,
}

impl Piece<'_> {
    pub(super) fn bare(&self) -> bool {
        self.lead.is_empty() && self.trail.is_empty()
    }
}

/// A spoken form followed by the word's trailing punctuation, a space between.
pub(super) fn spaced(spoken: String, trail: &str) -> String {
    if trail.is_empty() {
        spoken
    } else {
        format!("{spoken} {trail}")
    }
}

pub(super) fn piece(word: &str) -> Piece<'_> {
    let rest = word.trim_start_matches(LEAD);
    let lead = &word[..word.len() - rest.len()];
    let core = rest.trim_end_matches(TRAIL);
    Piece {
        lead,
        core,
        trail: &rest[core.len()..],
    }
}

pub(super) fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// A rule at one word: (words read, spoken form), or `None` to keep the word.
pub(super) type Rule<'r> = dyn Fn(&[&str]) -> Option<(usize, String)> + 'r;

/// Runs `rule` at each whitespace-separated word: it returns how many words it read and
/// their spoken form, or `None` to keep the word as written. Words are joined by single
/// spaces; `changes` receives (byte range in `text`, spoken form) for every replacement.
pub(super) fn run(
    text: &str,
    changes: &mut Vec<(std::ops::Range<usize>, String)>,
    rule: &Rule,
) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let offset = |w: &str| w.as_ptr() as usize - text.as_ptr() as usize;
    let mut out: Vec<String> = Vec::with_capacity(words.len());
    let mut i = 0;
    while i < words.len() {
        let Some((used, spoken)) =
            rule(&words[i..]).filter(|(u, _)| (1..=words.len() - i).contains(u))
        else {
            out.push(words[i].to_string());
            i += 1;
            continue;
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

/// A number written the continental way: sign, whole digits (group separators removed),
/// whether it had group separators, fraction digits after the decimal comma.
pub(super) struct EuNumber {
    pub(super) negative: bool,
    pub(super) whole: String,
    pub(super) grouped: bool,
    pub(super) fraction: Option<String>,
}

/// "1.250,75", "-5", "3,14", "2.500.000" (`group` is the thousands separator, `.`).
pub(super) fn parse_eu(s: &str, group: char) -> Option<EuNumber> {
    let (negative, s) = match s.strip_prefix(['-', '−']) {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let (whole, fraction) = match s.split_once(',') {
        Some((w, f)) if is_digits(f) => (w, Some(f.to_string())),
        Some(_) => return None,
        None => (s, None),
    };
    let grouped = whole.contains(group);
    if grouped {
        let mut groups = whole.split(group);
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
    Some(EuNumber {
        negative,
        whole: whole.replace(group, ""),
        grouped,
        fraction,
    })
}

/// The digits of a 1..=3-digit group as a number.
pub(super) fn group_value(d: &[u8]) -> u32 {
    d.iter().fold(0u32, |v, b| v * 10 + u32::from(b - b'0'))
}

/// Splits ASCII digits (leading zeros dropped) into groups of three from the right:
/// values, most significant first. `None` when longer than `max_digits`.
pub(super) fn groups_of_three(digits: &str, max_digits: usize) -> Option<Vec<u32>> {
    if !is_digits(digits) {
        return None;
    }
    let d = digits.trim_start_matches('0');
    if d.len() > max_digits {
        return None;
    }
    let b = d.as_bytes();
    let first = b.len() % 3;
    let mut out = Vec::new();
    if first > 0 {
        out.push(group_value(&b[..first]));
    }
    out.extend(b[first..].chunks(3).map(group_value));
    Some(out)
}
